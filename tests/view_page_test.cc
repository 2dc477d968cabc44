// view::BuildPage on every registered kernel's example graph: the page is
// self-contained, its data lists every instruction with its source line,
// and every instruction is drawn in the dataflow picture (as a node or
// inside a collapsed group's node).
#include <cstdint>
#include <set>
#include <string>
#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/registry.h"
#include "nlohmann/json.hpp"
#include "view/page.h"

namespace nkigraph {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The JSON the page embeds for its script.
nlohmann::json PageData(const std::string& html) {
  const std::string open =
      "<script type=\"application/json\" id=\"nkiview-data\">";
  const size_t begin = html.find(open);
  if (begin == std::string::npos) {
    ADD_FAILURE() << "the page embeds no data block";
    return nlohmann::json();
  }
  const size_t end = html.find("</script>", begin);
  return nlohmann::json::parse(
      html.substr(begin + open.size(), end - begin - open.size()));
}

// (core, position) of every instruction some dataflow node stands for.
std::set<std::pair<int, int>> Drawn(const nlohmann::json& picture) {
  std::set<std::pair<int, int>> drawn;
  for (const nlohmann::json& span : picture["nodes"]) {
    if (span.is_null()) continue;  // headers, the legend
    for (int p = span[2].get<int>(); p <= span[3].get<int>(); ++p) {
      drawn.insert({span[1].get<int>(), p});
    }
  }
  return drawn;
}

TEST(ViewPageTest, EveryRegisteredKernelsPageHoldsAndDrawsEveryInstruction) {
  for (const kernels::KernelDef& def :
       kernels::KernelRegistry::Global().kernels()) {
    SCOPED_TRACE(def.name);
    absl::StatusOr<proto::Graph> graph =
        kernels::KernelRegistry::Global().Trace(def.name, def.example);
    ASSERT_TRUE(graph.ok()) << graph.status();
    absl::StatusOr<std::string> html = view::BuildPage(*graph, {});
    ASSERT_TRUE(html.ok()) << html.status();
    // Nothing to fetch: no external script, style, image or link.
    EXPECT_THAT(*html, Not(HasSubstr("<script src")));
    EXPECT_THAT(*html, Not(HasSubstr("<link")));
    EXPECT_THAT(*html, Not(HasSubstr("href=\"http")));
    EXPECT_THAT(*html, Not(HasSubstr("url(")));

    const nlohmann::json data = PageData(*html);
    EXPECT_EQ(data["kernel"], def.name);
    std::set<std::pair<int, int>> expected;
    int64_t count = 0;
    for (const proto::Stream& stream : graph->streams()) {
      for (int p = 0; p < stream.instructions_size(); ++p) {
        const proto::Instruction& instr = stream.instructions(p);
        const nlohmann::json& row = data["instrs"][count++];
        EXPECT_EQ(row[0], instr.id());
        EXPECT_EQ(row[3], stream.core());
        EXPECT_EQ(row[4], p);
        EXPECT_EQ(data["files"][row[6].get<int>()], graph->files(instr.file()));
        EXPECT_EQ(row[7], instr.line());
        expected.insert({static_cast<int>(stream.core()), p});
      }
    }
    EXPECT_EQ(data["instrs"].size(), static_cast<size_t>(count));
    EXPECT_EQ(Drawn(data["dataflow"]), expected);
    EXPECT_FALSE(data["dataflow"]["pages"].empty());
    for (const nlohmann::json& page : data["dataflow"]["pages"]) {
      ASSERT_TRUE(page.is_string()) << data["dataflow"]["error"];
      EXPECT_THAT(page.get<std::string>(), ::testing::StartsWith("<svg"));
    }
    // Every seed kernel names a target: the timeline is there.
    ASSERT_TRUE(data["schedule"].contains("slots")) << data["schedule"];
    EXPECT_EQ(data["schedule"]["slots"].size(), static_cast<size_t>(count));
    EXPECT_TRUE(data["values"].contains("absent"));
  }
}

}  // namespace
}  // namespace nkigraph
