// Golden graphs: every entry of tests/golden/configs.txt is re-traced and
// compared by meaning (diff::Diff) with its tests/golden/*.pbtxt. A
// difference fails with the diff. After an intended change:
//   scripts/regen_goldens.sh
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "diff/diff.h"
#include "diff/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/registry.h"
#include "proto/nkigraph.pb.h"
#include "tests/scoped_temp_dir.h"
#include "tests/test_paths.h"
#include "util/graph_io.h"

namespace nkigraph {
namespace {

using ::testing::HasSubstr;

constexpr char kRegenCommand[] = "scripts/regen_goldens.sh";

std::string GoldenDir() {
  return absl::StrCat(testing::SourceDir(), "/tests/golden");
}

// One line of configs.txt.
struct GoldenConfig {
  std::string kernel;
  std::string config;
  std::vector<std::pair<std::string, std::string>> params;

  std::string FileName() const {
    return absl::StrCat(kernel, "_", config, ".pbtxt");
  }
  std::string Path() const {
    return absl::StrCat(GoldenDir(), "/", FileName());
  }
};

void PrintTo(const GoldenConfig& config, std::ostream* os) {
  *os << config.FileName();
}

// Parses configs.txt: blank lines and '#' comments skipped; otherwise
// "<kernel> <config> [param=value]..." (the format regen_goldens.sh reads).
absl::StatusOr<std::vector<GoldenConfig>> ReadConfigs(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::vector<GoldenConfig> configs;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::vector<std::string> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (words.empty() || words[0][0] == '#') continue;
    const std::string where = absl::StrCat(path, ":", number);
    if (words.size() < 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": expected '<kernel> <config> [param=value]...'"));
    }
    GoldenConfig config{words[0], words[1], {}};
    for (size_t k = 2; k < words.size(); ++k) {
      const size_t eq = words[k].find('=');
      if (eq == std::string::npos || eq == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": '", words[k], "' is not param=value"));
      }
      config.params.emplace_back(words[k].substr(0, eq),
                                 words[k].substr(eq + 1));
    }
    configs.push_back(std::move(config));
  }
  return configs;
}

std::vector<GoldenConfig> ConfigsOrEmpty() {
  absl::StatusOr<std::vector<GoldenConfig>> configs =
      ReadConfigs(GoldenDir() + "/configs.txt");
  return configs.ok() ? *configs : std::vector<GoldenConfig>{};
}

std::string ParamsText(const GoldenConfig& config) {
  std::vector<std::string> settings;
  for (const auto& [name, value] : config.params) {
    settings.push_back(absl::StrCat(name, "=", value));
  }
  return settings.empty() ? "(defaults)" : absl::StrJoin(settings, " ");
}

// "" when the graph in `golden_path` is the same program as a fresh trace
// of `config`; otherwise why not, with the diff.
std::string CompareWithGolden(const GoldenConfig& config,
                              const std::string& golden_path) {
  const std::string regen = absl::StrCat(
      "If the change is intended, regenerate the goldens with ", kRegenCommand,
      " ", config.kernel, " and commit them with it.");
  absl::StatusOr<proto::Graph> golden = ReadGraph(golden_path);
  if (!golden.ok()) {
    return absl::StrCat("cannot read golden graph: ", golden.status().message(),
                        "\n", regen);
  }
  absl::StatusOr<proto::Graph> traced =
      kernels::KernelRegistry::Global().Trace(config.kernel, config.params);
  if (!traced.ok()) {
    return absl::StrCat("tracing ", config.kernel, " ", ParamsText(config),
                        " failed: ", traced.status().message());
  }
  absl::StatusOr<diff::DiffResult> result = diff::Diff(*golden, *traced, {});
  if (!result.ok()) {
    return absl::StrCat("cannot diff: ", result.status().message());
  }
  if (result->same()) return "";
  diff::FormatOptions labels;
  labels.label_a = absl::StrCat("golden ", golden_path);
  labels.label_b =
      absl::StrCat("trace of ", config.kernel, " ", ParamsText(config));
  return absl::StrCat("the traced graph differs from its golden:\n",
                      diff::FormatText(*result, labels), regen);
}

// --- The list itself ---------------------------------------------------------

TEST(GoldenConfigTest, ListParsesAndNamesRegisteredKernels) {
  absl::StatusOr<std::vector<GoldenConfig>> configs =
      ReadConfigs(GoldenDir() + "/configs.txt");
  ASSERT_TRUE(configs.ok()) << configs.status();
  ASSERT_FALSE(configs->empty());
  std::set<std::string> files;
  for (const GoldenConfig& config : *configs) {
    EXPECT_NE(kernels::KernelRegistry::Global().Find(config.kernel), nullptr)
        << "configs.txt names unknown kernel '" << config.kernel << "'";
    EXPECT_TRUE(files.insert(config.FileName()).second)
        << "configs.txt lists " << config.FileName() << " twice";
  }
}

TEST(GoldenConfigTest, ParserRejectsMalformedLines) {
  const testing::ScopedTempDir dir;
  const std::string path = dir.Path("golden_configs_test.txt");
  std::ofstream(path) << "# comment\n\nk c a=1 b=x=y\nk2\n";
  absl::StatusOr<std::vector<GoldenConfig>> bad = ReadConfigs(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr(":4:"));
  std::ofstream(path) << "k c a=1 b=x=y\n";
  absl::StatusOr<std::vector<GoldenConfig>> good = ReadConfigs(path);
  ASSERT_TRUE(good.ok()) << good.status();
  ASSERT_EQ(good->size(), 1u);
  EXPECT_EQ(good->at(0).FileName(), "k_c.pbtxt");
  EXPECT_EQ(good->at(0).params.back(),
            (std::pair<std::string, std::string>("b", "x=y")));
  std::ofstream(path) << "k c novalue\n";
  EXPECT_FALSE(ReadConfigs(path).ok());
}

TEST(GoldenConfigTest, EveryRegisteredKernelHasAGolden) {
  std::set<std::string> listed;
  for (const GoldenConfig& config : ConfigsOrEmpty()) {
    listed.insert(config.kernel);
  }
  std::vector<std::string> missing;
  for (const kernels::KernelDef& def :
       kernels::KernelRegistry::Global().kernels()) {
    if (listed.count(def.name) == 0) missing.push_back(def.name);
  }
  EXPECT_TRUE(missing.empty())
      << "kernels without a golden graph: " << absl::StrJoin(missing, ", ")
      << "\nAdd a line '<kernel> <config> [param=value]...' with a small "
         "configuration for each to tests/golden/configs.txt and run "
      << kRegenCommand << " <kernel>.";
}

TEST(GoldenConfigTest, GoldenFilesAndListAgree) {
  std::set<std::string> listed;
  for (const GoldenConfig& config : ConfigsOrEmpty()) {
    listed.insert(config.FileName());
  }
  std::set<std::string> present;
  for (const auto& entry : std::filesystem::directory_iterator(GoldenDir())) {
    if (entry.path().extension() == ".pbtxt") {
      present.insert(entry.path().filename().string());
    }
  }
  std::vector<std::string> unlisted, absent;
  std::set_difference(present.begin(), present.end(), listed.begin(),
                      listed.end(), std::back_inserter(unlisted));
  std::set_difference(listed.begin(), listed.end(), present.begin(),
                      present.end(), std::back_inserter(absent));
  EXPECT_TRUE(unlisted.empty())
      << "golden files not in configs.txt: " << absl::StrJoin(unlisted, ", ")
      << " (" << kRegenCommand << " deletes them)";
  EXPECT_TRUE(absent.empty())
      << "configs.txt entries without a golden file: "
      << absl::StrJoin(absent, ", ") << " (run " << kRegenCommand << ")";
}

// --- One test per golden
// -------------------------------------------------------

class GoldenGraphTest : public ::testing::TestWithParam<GoldenConfig> {};

TEST_P(GoldenGraphTest, MatchesAFreshTrace) {
  const std::string failure = CompareWithGolden(GetParam(), GetParam().Path());
  if (!failure.empty()) {
    ADD_FAILURE() << GetParam().FileName() << ": " << failure;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Golden, GoldenGraphTest, ::testing::ValuesIn(ConfigsOrEmpty()),
    [](const ::testing::TestParamInfo<GoldenConfig>& info) {
      std::string name =
          absl::StrCat(info.param.kernel, "_", info.param.config);
      for (char& c : name) {
        if (!absl::ascii_isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

// The check itself must be able to fail: a golden with one instruction
// edited and one removed is reported, with the diff in the message.
TEST(GoldenCheckTest, AnEditedGoldenFailsWithItsDiff) {
  const std::vector<GoldenConfig> configs = ConfigsOrEmpty();
  ASSERT_FALSE(configs.empty());
  const GoldenConfig& config = configs.front();
  absl::StatusOr<proto::Graph> graph = ReadGraph(config.Path());
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_GE(graph->streams(0).instructions_size(), 3);
  proto::Stream* stream = graph->mutable_streams(0);
  proto::AccessPattern* operand =
      stream->mutable_instructions(0)->mutable_operands(0);
  operand->set_offset(operand->offset() + 1);
  stream->mutable_instructions()->DeleteSubrange(2, 1);
  const testing::ScopedTempDir dir;
  const std::string edited = dir.Path("edited_golden.pbtxt");
  ASSERT_TRUE(WriteGraph(*graph, edited).ok());

  const std::string failure = CompareWithGolden(config, edited);
  EXPECT_THAT(failure, HasSubstr("differs from its golden"));
  // Golden is A, the trace B: the trace has the instruction the edit removed.
  EXPECT_THAT(failure, HasSubstr("  + b:2 "));
  EXPECT_THAT(failure, HasSubstr("  ~ a:0 b:0 "));
  EXPECT_THAT(failure, HasSubstr("summary: 1 added, 0 removed, 1 changed"));
  EXPECT_THAT(failure, HasSubstr(kRegenCommand));
  // And an untouched copy passes, also when written as binary.
  const std::string copy = dir.Path("golden_copy.pb");
  absl::StatusOr<proto::Graph> original = ReadGraph(config.Path());
  ASSERT_TRUE(original.ok());
  ASSERT_TRUE(WriteGraph(*original, copy).ok());
  EXPECT_EQ(CompareWithGolden(config, copy), "");
  EXPECT_THAT(CompareWithGolden(config, edited + ".absent"),
              HasSubstr("cannot read golden graph"));
}

}  // namespace
}  // namespace nkigraph
