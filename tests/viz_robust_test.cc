// Pictures that never fail: the DOT shape that makes dot 2.4x assert is
// not emitted, fallback layouts say so in the title, PNGs stay within
// 16,000 pixels a side, wide pictures say how to page through them, and
// every registered kernel draws both views at its golden and default sizes.
#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "builder/isa.h"
#include "builder/tracer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/registry.h"
#include "proto/nkigraph.pb.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"
#include "viz/layout_guard.h"
#include "viz/paging.h"
#include "viz/render.h"
#include "viz/viz.h"

namespace nkigraph::viz {
namespace {

using builder::Buffer;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;
using ::testing::HasSubstr;
using ::testing::Not;

// Two clusters of three nodes and two edges from B to D that do not
// constrain the layout: the shape of Graphviz's merge_chain report
// (ED_to_virt(e) == NULL), without its same-rank sets.
VizGraph TwoLooseEdgesAcrossClusters() {
  VizGraph g;
  g.name = "g";
  g.graph_attrs = {{"label", "title"}};
  g.clusters = {{"cluster_1", -1, {}}, {"cluster_2", -1, {}}};
  for (const char* name : {"A", "B", "C", "D", "E", "F"}) {
    VizNode node;
    node.name = name;
    node.cluster = (name[0] - 'A') / 3;
    g.nodes.push_back(node);
  }
  g.edges = {{0, 1, {}},
             {2, 0, {}},
             {3, 4, {}},
             {5, 4, {}},
             {1, 3, {{"constraint", "false"}, {"xlabel", "x"}}},
             {1, 3, {{"constraint", "false"}, {"xlabel", "y"}}}};
  return g;
}

TEST(VizLayoutGuardTest, ParallelLooseEdgesFoldIntoOneThatListsTheirLabels) {
  VizGraph g = TwoLooseEdgesAcrossClusters();
  // A constrained parallel pair stays as it is.
  g.edges.push_back({2, 0, {}});
  EXPECT_EQ(FoldParallelLooseEdges(g), 1);
  ASSERT_EQ(g.edges.size(), 6u);
  int loose = 0;
  for (const VizEdge& edge : g.edges) {
    if (edge.tail == 1 && edge.head == 3) {
      ++loose;
      EXPECT_THAT(edge.attrs,
                  ::testing::Contains(
                      std::pair<std::string, std::string>("xlabel", "x, y")));
    }
  }
  EXPECT_EQ(loose, 1);
  // Folded, the picture lays out.
  VizGraph local = TwoLooseEdgesAcrossClusters();
  // A loose edge beside an invisible anchor (C -> D, across the boxes)
  // constrains instead of it; a loose edge inside one box (A -> C, both in
  // cluster_1) stays loose until ConstrainLooseEdgesInsideClusters.
  local.edges.push_back({0, 2, {{"constraint", "false"}}});
  local.edges.push_back({2, 3, {{"constraint", "false"}, {"style", "dashed"}}});
  local.edges.push_back({2, 3, {{"style", "invis"}}});
  EXPECT_EQ(FoldParallelLooseEdges(local), 2);  // y and the invisible edge
  ASSERT_EQ(local.edges.size(), 7u);
  for (const VizEdge& edge : local.edges) {
    const bool loose =
        std::find(edge.attrs.begin(), edge.attrs.end(),
                  std::pair<std::string, std::string>("constraint", "false")) !=
        edge.attrs.end();
    EXPECT_EQ(loose, (edge.tail == 1 && edge.head == 3) ||
                         (edge.tail == 0 && edge.head == 2))
        << edge.tail << " -> " << edge.head;
    EXPECT_FALSE(edge.tail == 2 && edge.head == 3 &&
                 std::find(edge.attrs.begin(), edge.attrs.end(),
                           std::pair<std::string, std::string>(
                               "style", "invis")) != edge.attrs.end());
  }
  absl::StatusOr<std::string> svg = Render(g, Format::kSvg);
  ASSERT_TRUE(svg.ok()) << svg.status();
  EXPECT_THAT(*svg, HasSubstr("</svg>"));
}

TEST(VizLayoutGuardTest, LooseEdgesInsideOneClusterConstrainAsAFallback) {
  VizGraph g = TwoLooseEdgesAcrossClusters();
  g.edges.push_back({0, 2, {{"constraint", "false"}}});  // inside cluster_1
  EXPECT_EQ(ConstrainLooseEdgesInsideClusters(g), 1);
  int loose = 0;
  for (const VizEdge& edge : g.edges) {
    for (const auto& [key, value] : edge.attrs) {
      loose += key == "constraint" && value == "false";
    }
  }
  EXPECT_EQ(loose, 2);  // the two B -> D edges across the boxes
}

TEST(VizLayoutGuardTest, FallbacksChangeThePictureAsTheySay) {
  VizGraph g = TwoLooseEdgesAcrossClusters();
  g.edges[4].attrs.push_back({"label", "l"});
  VizGraph labels = g;
  ApplyFallback(Fallback::kExternalLabels, labels);
  for (const VizEdge& edge : labels.edges) {
    for (const auto& [key, value] : edge.attrs) EXPECT_NE(key, "label");
  }
  VizGraph newrank = g;
  ApplyFallback(Fallback::kNewRank, newrank);
  EXPECT_THAT(newrank.graph_attrs,
              ::testing::Contains(
                  std::pair<std::string, std::string>("newrank", "true")));
  VizGraph no_loose = g;
  ApplyFallback(Fallback::kNoLooseEdges, no_loose);
  EXPECT_EQ(no_loose.edges.size(), 4u);
  AppendToTitle(no_loose, "(fallback)");
  EXPECT_THAT(no_loose.graph_attrs,
              ::testing::Contains(std::pair<std::string, std::string>(
                  "label", "title\\l(fallback)\\l")));
}

TEST(VizLayoutGuardTest, ColumnsAreTheLongestConstrainingPath) {
  VizGraph g = TwoLooseEdgesAcrossClusters();
  // C -> A -> B, F -> E, D -> E; the loose B -> D edges do not count.
  EXPECT_EQ(LayoutColumns(g), 3);
  g.edges.push_back({1, 5, {}});  // B -> F -> E: now C A B F E
  EXPECT_EQ(LayoutColumns(g), 5);
}

// A chain of `n` dependent instructions: n columns.
proto::Graph Chain(int n) {
  absl::StatusOr<proto::Graph> graph = testing::Trace1([&](Tracer&) {
    Tensor a = builder::ndarray({128, 64}, proto::FLOAT32, Buffer::kSbuf, "a");
    Tensor b = builder::ndarray({128, 64}, proto::FLOAT32, Buffer::kSbuf, "b");
    isa::memset(a, 1.0f);
    for (int i = 1; i < n; ++i) {
      if (i % 2) {
        isa::tensor_copy(b, a);
      } else {
        isa::tensor_copy(a, b);
      }
    }
  });
  EXPECT_TRUE(graph.ok()) << graph.status();
  return *graph;
}

// Width and height from a PNG's IHDR chunk.
std::pair<uint32_t, uint32_t> PngSize(const std::string& png) {
  auto be32 = [&](size_t at) {
    return (uint32_t{static_cast<uint8_t>(png[at])} << 24) |
           (uint32_t{static_cast<uint8_t>(png[at + 1])} << 16) |
           (uint32_t{static_cast<uint8_t>(png[at + 2])} << 8) |
           uint32_t{static_cast<uint8_t>(png[at + 3])};
  };
  return {be32(16), be32(20)};
}

TEST(VizLayoutGuardTest,
     PngsStayWithinSixteenThousandPixelsAndWidePicturesSaySo) {
  // 400 instructions in a row, none collapsed: well over 16,000 pixels
  // wide at full size (a node and its gap are over 100 pixels).
  const proto::Graph chain = Chain(400);
  DotOptions options;
  options.view_options.max_nodes = 0;
  absl::StatusOr<std::string> png = RenderGraph(chain, options, Format::kPng);
  ASSERT_TRUE(png.ok()) << png.status();
  ASSERT_GT(png->size(), 24u);
  const auto [width, height] = PngSize(*png);
  EXPECT_LE(width, 16000u);
  EXPECT_LE(height, 16000u);
  EXPECT_GT(width, 8000u);  // scaled to fit, not shrunk to a stamp
  // SVG keeps the full size; the title says how to page through it.
  absl::StatusOr<std::string> svg = RenderGraph(chain, options, Format::kSvg);
  ASSERT_TRUE(svg.ok()) << svg.status();
  EXPECT_THAT(*svg, HasSubstr("about 400 columns wide"));
  EXPECT_THAT(*svg, HasSubstr("around ID"));
  // A short picture says nothing of the kind.
  absl::StatusOr<std::string> small =
      RenderGraph(Chain(5), options, Format::kSvg);
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_THAT(*small, Not(HasSubstr("columns wide")));
}

// The instruction nodes of a picture.
int InstructionNodes(const VizGraph& g) {
  return static_cast<int>(std::count_if(
      g.nodes.begin(), g.nodes.end(),
      [](const VizNode& n) { return n.role == NodeRole::kInstruction; }));
}

TEST(VizPagingTest, AWidePictureSplitsIntoPagesOfAScreensWidth) {
  // 60 dependent instructions: 60 columns, about 11,000 pixels as PNG.
  const proto::Graph chain = Chain(60);
  DotOptions options;
  options.view_options.max_nodes = 0;
  absl::StatusOr<VizGraph> whole = BuildView(chain, options);
  ASSERT_TRUE(whole.ok()) << whole.status();
  FoldParallelLooseEdges(*whole);
  EXPECT_EQ(LayoutColumns(*whole), 60);
  const std::vector<std::pair<int64_t, int64_t>> pages = Pages(*whole);
  ASSERT_GE(pages.size(), 3u);
  const int n = static_cast<int>(pages.size());
  absl::StatusOr<std::string> dot = RenderGraph(chain, options, Format::kDot);
  ASSERT_TRUE(dot.ok()) << dot.status();
  EXPECT_THAT(*dot, HasSubstr(absl::StrCat(
                        "page through it with --page K (1 to ", n, ")")));

  // The pages run over the columns in order, each node on one page.
  int64_t next_column = 1;
  int instructions = 0;
  for (int page = 1; page <= n; ++page) {
    EXPECT_EQ(pages[page - 1].first, next_column) << page;
    next_column = pages[page - 1].second + 1;
    VizGraph g = *whole;
    ASSERT_TRUE(KeepPage(g, page).ok()) << page;
    EXPECT_EQ(InstructionNodes(g),
              pages[page - 1].second - pages[page - 1].first + 1)
        << page;
    instructions += InstructionNodes(g);
    options.page = page;
    dot = RenderGraph(chain, options, Format::kDot);
    ASSERT_TRUE(dot.ok()) << dot.status();
    EXPECT_THAT(*dot, HasSubstr(absl::StrCat("page ", page, " of ", n,
                                             ": --page K (1 to ", n, ")")));
    EXPECT_THAT(*dot, Not(HasSubstr("more than a screen")));
    EXPECT_EQ(absl::StrContains(*dot, absl::StrCat("from page ", page - 1)),
              page > 1);
    EXPECT_EQ(absl::StrContains(*dot, absl::StrCat("on page ", page + 1)),
              page < n);
  }
  EXPECT_EQ(next_column, 61);
  EXPECT_EQ(instructions, 60);
  // A middle page, with both stubs, lays out within a screen's width.
  options.page = 2;
  absl::StatusOr<std::string> png = RenderGraph(chain, options, Format::kPng);
  ASSERT_TRUE(png.ok()) << png.status();
  ASSERT_GT(png->size(), 24u);
  EXPECT_LE(PngSize(*png).first, 4000u);
  EXPECT_GT(PngSize(*png).first, 1500u);  // and is not a sliver of it

  options.page = n + 1;
  absl::StatusOr<std::string> past = RenderGraph(chain, options, Format::kDot);
  EXPECT_EQ(past.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(past.status().message(),
              HasSubstr(absl::StrCat("--page ", n + 1, ": this picture has ", n,
                                     " pages")));
  // A picture that fits is its own one page.
  options.page = 1;
  dot = RenderGraph(Chain(5), options, Format::kDot);
  ASSERT_TRUE(dot.ok()) << dot.status();
  EXPECT_THAT(*dot, HasSubstr("page 1 of 1"));
}

TEST(VizPagingTest, ClustersWithoutNodesOnThePageAreLeftOut) {
  // A -> B -> C in cluster_1, then D -> E in cluster_2 (nested in
  // cluster_3), then 30 more nodes outside any cluster: 35 columns.
  VizGraph g;
  g.name = "g";
  g.graph_attrs = {{"label", "title"}};
  g.clusters = {
      {"cluster_1", -1, {}}, {"cluster_3", -1, {}}, {"cluster_2", 1, {}}};
  for (int i = 0; i < 5; ++i) {
    VizNode node;
    node.name = std::string(1, static_cast<char>('A' + i));
    node.cluster = i < 3 ? 0 : 2;
    g.nodes.push_back(node);
  }
  g.edges = {{0, 1, {}}, {1, 2, {}}, {2, 3, {}}, {3, 4, {}}};
  for (int i = 0; i < 30; ++i) {
    VizNode node;
    node.name = absl::StrCat("n", i);
    g.nodes.push_back(node);
    g.edges.push_back({static_cast<int>(g.nodes.size()) - 2,
                       static_cast<int>(g.nodes.size()) - 1,
                       {}});
  }
  // Unlabelled, every column is dot's least node width and a rank gap,
  // 0.75 + 0.35 inch = 79.2 points; a page has 2,300 less two stub columns
  // of 79.2: 2,141.6 points, 27 columns.
  const std::vector<double> widths = EstimatedColumnWidths(g);
  ASSERT_EQ(widths.size(), 36u);
  EXPECT_NEAR(widths[1], 79.2, 1e-9);
  EXPECT_NEAR(widths[35], 79.2, 1e-9);
  EXPECT_THAT(Pages(g),
              ::testing::ElementsAre(std::pair<int64_t, int64_t>{1, 27},
                                     std::pair<int64_t, int64_t>{28, 35}));
  VizGraph second = g;
  ASSERT_TRUE(KeepPage(second, 2).ok());
  EXPECT_TRUE(second.clusters.empty());
  // n22 to n29 and the stub they come from.
  ASSERT_EQ(second.nodes.size(), 9u);
  EXPECT_EQ(second.nodes[0].name, "n22");
  EXPECT_EQ(second.nodes[8].name, "page_before");
  VizGraph first = g;
  ASSERT_TRUE(KeepPage(first, 1).ok());
  ASSERT_EQ(first.clusters.size(), 3u);
  EXPECT_EQ(first.clusters[2].parent, 1);
  EXPECT_EQ(first.nodes[3].cluster, 2);
  // One edge leaves page 1 (n21 -> n22): to the stub, the last node.
  ASSERT_EQ(first.nodes.size(), 28u);
  EXPECT_EQ(first.nodes[27].name, "page_after");
  EXPECT_EQ(first.edges.back().tail, 26);
  EXPECT_EQ(first.edges.back().head, 27);
  absl::StatusOr<std::string> svg = Render(first, Format::kSvg);
  ASSERT_TRUE(svg.ok()) << svg.status();
}

TEST(VizPagingTest, ColumnWidthsFollowTheLongestLabelLines) {
  VizGraph g;
  g.node_defaults = {{"fontsize", "10"}};
  g.edge_defaults = {{"fontsize", "8"}};
  VizNode a, b, legend;
  a.name = "a";
  // Longest line 40 characters: 40 * 0.55 * 10 + 8.64 margins = 228.64.
  a.attrs = {{"label", absl::StrCat("short\\n", std::string(40, 'x'))}};
  b.name = "b";  // unlabelled: 54
  legend.name = "legend";
  legend.role = NodeRole::kLegend;
  legend.html_label = true;
  legend.attrs = {{"label", "<TABLE><TR><TD>" + std::string(100, 'y') +
                                "</TD></TR></TABLE>"}};
  g.nodes = {a, b, legend};
  // An edge label of 10 characters at 8 points: 44, and a rank of its own.
  g.edges = {{0, 1, {{"label", "0123456789"}}}};
  const std::vector<double> widths = EstimatedColumnWidths(g);
  ASSERT_EQ(widths.size(), 3u);
  EXPECT_NEAR(widths[1], 228.64 + 25.2, 1e-9);
  EXPECT_NEAR(widths[2], 54 + 25.2 + 44 + 25.2, 1e-9);
}

// The pictures the pages are for: one fgcc ring step (tp 8, m 256,
// k 2048, n 128; 12,445 pixels wide in one piece) and one MoE block of
// blockwise_mm_bwd at T 1024, H 1024, E 8, I 512, B 128, N 20 (15,936).
// Each page says which it is; the widest by the estimate lays out within
// 4,000 pixels (all of them: scripts/dot_production.sh).
TEST(VizPagingTest, ARingStepAndAMoeBlockPageToAScreensWidth) {
  struct Shape {
    std::string kernel;
    std::vector<std::pair<std::string, std::string>> settings;
    Filters filters;
  };
  Filters ring_step;
  ring_step.scope = "ring_step";
  ring_step.instance = 1;
  ring_step.core = 0;
  Filters block;
  block.scope = "block";
  block.instance = 2;
  const Shape shapes[] = {
      {"fgcc",
       {{"tp_degree", "8"}, {"m", "256"}, {"k", "2048"}, {"n", "128"}},
       ring_step},
      {"blockwise_mm_bwd",
       {{"num_tokens", "1024"},
        {"hidden", "1024"},
        {"num_experts", "8"},
        {"intermediate", "512"},
        {"block_size", "128"},
        {"num_blocks", "20"}},
       block}};
  for (const Shape& shape : shapes) {
    SCOPED_TRACE(shape.kernel);
    absl::StatusOr<proto::Graph> graph =
        kernels::KernelRegistry::Global().Trace(shape.kernel, shape.settings);
    ASSERT_TRUE(graph.ok()) << graph.status();
    DotOptions options;
    options.filters = shape.filters;
    absl::StatusOr<VizGraph> whole = BuildView(*graph, options);
    ASSERT_TRUE(whole.ok()) << whole.status();
    FoldParallelLooseEdges(*whole);
    const std::vector<std::pair<int64_t, int64_t>> pages = Pages(*whole);
    ASSERT_GE(pages.size(), 2u);
    const std::vector<double> widths = EstimatedColumnWidths(*whole);
    int widest = 1;
    double widest_points = 0;
    for (size_t p = 0; p < pages.size(); ++p) {
      double points = 0;
      for (int64_t c = pages[p].first; c <= pages[p].second; ++c) {
        points += widths[c];
      }
      if (points > widest_points) {
        widest_points = points;
        widest = static_cast<int>(p) + 1;
      }
    }
    options.page = widest;
    absl::StatusOr<std::string> png =
        RenderGraph(*graph, options, Format::kPng);
    ASSERT_TRUE(png.ok()) << png.status();
    ASSERT_GT(png->size(), 24u);
    EXPECT_LE(PngSize(*png).first, 4000u) << "page " << widest;
    absl::StatusOr<std::string> dot =
        RenderGraph(*graph, options, Format::kDot);
    ASSERT_TRUE(dot.ok()) << dot.status();
    EXPECT_THAT(*dot, HasSubstr(absl::StrCat("page ", widest, " of ",
                                             pages.size(), ": --page K")));
  }
}

// --- Every registered kernel --------------------------------------------

// The golden configurations of `kernel` (tests/golden/configs.txt).
std::vector<std::vector<std::pair<std::string, std::string>>> GoldenSettings(
    const std::string& kernel) {
  std::ifstream in(
      absl::StrCat(testing::SourceDir(), "/tests/golden/configs.txt"));
  std::vector<std::vector<std::pair<std::string, std::string>>> configs;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> words =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (words.size() < 2 || words[0] != kernel) continue;
    std::vector<std::pair<std::string, std::string>> settings;
    for (size_t k = 2; k < words.size(); ++k) {
      std::vector<std::string> kv = absl::StrSplit(words[k], '=');
      if (kv.size() == 2) settings.emplace_back(kv[0], kv[1]);
    }
    configs.push_back(std::move(settings));
  }
  return configs;
}

std::vector<std::string> KernelNames() {
  std::vector<std::string> names;
  for (const kernels::KernelDef& def :
       kernels::KernelRegistry::Global().kernels()) {
    names.push_back(def.name);
  }
  return names;
}

class VizEveryKernelTest : public ::testing::TestWithParam<std::string> {};

TEST_P(VizEveryKernelTest, DrawsBothViewsAtItsGoldenAndDefaultSizes) {
  const kernels::KernelRegistry& registry = kernels::KernelRegistry::Global();
  const kernels::KernelDef* def = registry.Find(GetParam());
  ASSERT_NE(def, nullptr);
  auto configs = GoldenSettings(def->name);
  EXPECT_FALSE(configs.empty()) << "no golden configuration";
  configs.push_back(def->example);  // the defaults (with required params)
  for (const auto& settings : configs) {
    absl::StatusOr<proto::Graph> graph = registry.Trace(def->name, settings);
    ASSERT_TRUE(graph.ok()) << graph.status();
    for (View view : {View::kDataflow, View::kBarrier}) {
      SCOPED_TRACE(
          absl::StrCat(view == View::kDataflow ? "dataflow" : "barrier", ", ",
                       settings.size(), " settings"));
      DotOptions options;
      options.view = view;
      absl::StatusOr<std::string> svg =
          RenderGraph(*graph, options, Format::kSvg);
      ASSERT_TRUE(svg.ok()) << svg.status();
      EXPECT_THAT(*svg, HasSubstr("</svg>"));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, VizEveryKernelTest,
                         ::testing::ValuesIn(KernelNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace nkigraph::viz
