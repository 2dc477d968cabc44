#include "view/pictures.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "graph/graph_index.h"
#include "util/status_macros.h"
#include "viz/layout_guard.h"
#include "viz/paging.h"

namespace nkigraph::view {
namespace {

using nlohmann::json;

const std::string* FindAttr(const viz::Attrs& attrs, const std::string& key) {
  for (const auto& [name, value] : attrs) {
    if (name == key) return &value;
  }
  return nullptr;
}

// The instruction id a node's name ends with ("...i<id>"), or -1.
int64_t InstrIdOfName(const std::string& name) {
  const size_t at = name.rfind('i');
  int64_t id = -1;
  if (at == std::string::npos ||
      !absl::SimpleAtoi(absl::string_view(name).substr(at + 1), &id)) {
    return -1;
  }
  return id;
}

// [core, first, last] positions of the instructions node `node` stands
// for, or null (headers, the legend).
json NodeSpan(const graph::GraphIndex& index, const viz::VizNode& node) {
  int first = -1, last = -1;
  if (node.role == viz::NodeRole::kInstruction) {
    const int64_t id = InstrIdOfName(node.name);
    first = last = id >= 0 ? index.Find(static_cast<uint32_t>(id)) : -1;
  } else if (node.role == viz::NodeRole::kSummary) {
    // "ids": the first and last instruction id of the collapsed run.
    const std::string* ids = FindAttr(node.attrs, "ids");
    std::vector<std::string> parts;
    if (ids != nullptr) parts = absl::StrSplit(*ids, '-');
    uint32_t a = 0, b = 0;
    if (parts.size() == 2 && absl::SimpleAtoi(parts[0], &a) &&
        absl::SimpleAtoi(parts[1], &b)) {
      first = index.Find(a);
      last = index.Find(b);
    }
  }
  if (first < 0 || last < 0) return nullptr;
  const graph::InstrInfo& a = index.info(first);
  const graph::InstrInfo& b = index.info(last);
  if (a.core != b.core) return nullptr;
  return json{a.core, a.position, b.position};
}

}  // namespace

absl::StatusOr<json> Picture(const graph::GraphIndex& index,
                             const viz::DotOptions& options,
                             const std::string& prefix) {
  NKI_ASSIGN_OR_RETURN(viz::VizGraph built, viz::BuildView(index, options));
  viz::VizGraph picture = viz::PreparePicture(std::move(built));
  for (size_t n = 0; n < picture.nodes.size(); ++n) {
    picture.nodes[n].attrs.push_back({"id", absl::StrCat(prefix, n)});
  }
  const std::vector<std::pair<int64_t, int64_t>> pages = viz::Pages(picture);
  const std::vector<int64_t> columns = viz::NodeColumns(picture);
  json nodes = json::array();
  for (size_t n = 0; n < picture.nodes.size(); ++n) {
    json span = NodeSpan(index, picture.nodes[n]);
    if (span.is_null()) {
      nodes.push_back(nullptr);
      continue;
    }
    int page = 0;
    for (size_t p = 0; p < pages.size(); ++p) {
      if (columns[n] >= pages[p].first && columns[n] <= pages[p].second) {
        page = static_cast<int>(p);
      }
    }
    span.insert(span.begin(), page);
    nodes.push_back(std::move(span));
  }
  json out = {{"nodes", std::move(nodes)},
              {"columns", viz::LayoutColumns(picture)},
              {"pages", json::array()}};
  if (pages.size() > 1) {
    out["note"] =
        absl::StrCat("About ", viz::LayoutColumns(picture),
                     " columns wide, more than a screen: laid out as ",
                     pages.size(), " pages rather than whole.");
  }
  const int64_t count =
      pages.size() > 1 ? static_cast<int64_t>(pages.size()) : 0;
  for (int64_t page = count > 0 ? 1 : 0; page <= count; ++page) {
    absl::StatusOr<std::string> svg =
        viz::RenderPicture(picture, page, viz::Format::kSvg);
    if (!svg.ok()) {
      out["error"] =
          absl::StrCat("Graphviz could not lay out ",
                       count > 0 ? absl::StrCat("page ", page) : "this picture",
                       ": ", svg.status().message());
      out["pages"].push_back(nullptr);
      continue;
    }
    // The XML prologue and DOCTYPE are not allowed inside HTML.
    const size_t start = svg->find("<svg");
    out["pages"].push_back(start == std::string::npos ? *svg
                                                      : svg->substr(start));
  }
  return out;
}

}  // namespace nkigraph::view
