// The Graphviz visualizer (viz/) and `nkigraph dot`: dependency analysis,
// the structure of the DOT it writes (parsed back with libcgraph), SVG and
// PNG output, collapse of big graphs, filters and errors.
#include "viz/viz.h"

#include <graphviz/cgraph.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "builder/isa.h"
#include "builder/tracer.h"
#include "gmock/gmock.h"
#include "graph/dependencies.h"
#include "graph/graph_index.h"
#include "gtest/gtest.h"
#include "kernels/registry.h"
#include "proto/nkigraph.pb.h"
#include "tests/cli_fixture.h"
#include "tests/test_util.h"
#include "util/graph_io.h"
#include "viz/cgraph_builder.h"

namespace nkigraph::viz {
namespace {

namespace isa = builder::isa;
using builder::Buffer;
using builder::Tensor;
using builder::Tracer;
using graph::AnalyzeDependencies;
using graph::Dependency;
using graph::DepKind;
using graph::GraphIndex;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::UnorderedElementsAre;
using ::testing::UnorderedElementsAreArray;

// --- Graphs ----------------------------------------------------------------

proto::Graph MustTrace(int ranks, int cores,
                       const std::function<void(Tracer&)>& body) {
  absl::StatusOr<proto::Graph> graph = testing::TraceWorld(ranks, cores, body);
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? *std::move(graph) : proto::Graph();
}

// Seven instructions with known dependencies (ids 0..6):
//   #0 memset a          #1 memset b
//   #2 c = a + b         (raw from #0 and #1)
//   #3 a = copy c        (raw from #2 on c; its war on a folds into the raw)
//   #4 memset b          (war from #2, the last reader of b)
//   #5 memset d          #6 memset d  (waw from #5: nobody read d)
proto::Graph SmallChain() {
  return MustTrace(1, 1, [](Tracer&) {
    Tensor a = builder::ndarray({128, 64}, proto::FLOAT32, Buffer::kSbuf, "a");
    Tensor b = builder::ndarray({128, 64}, proto::FLOAT32, Buffer::kSbuf, "b");
    Tensor c = builder::ndarray({128, 64}, proto::FLOAT32, Buffer::kSbuf, "c");
    Tensor d = builder::ndarray({128, 64}, proto::FLOAT32, Buffer::kSbuf, "d");
    isa::memset(a, 1.0f);
    isa::memset(b, 2.0f);
    isa::tensor_tensor(c, a, b, isa::Alu::kAdd);
    isa::tensor_copy(a, c);
    isa::memset(b, 3.0f);
    isa::memset(d, 4.0f);
    isa::memset(d, 5.0f);
  });
}

proto::Graph TiledMatmul(int m, int k, int n) {
  absl::StatusOr<proto::Graph> graph = kernels::KernelRegistry::Global().Trace(
      "tiled_matmul",
      {{"m", absl::StrCat(m)}, {"k", absl::StrCat(k)}, {"n", absl::StrCat(n)}});
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? *std::move(graph) : proto::Graph();
}

// `layers` scopes model/layer_<l>, each loading the previous layer's
// activations from HBM, bouncing them `copies` times between two SBUF
// tiles inside a nested "mlp" scope, and storing them back: a chain of
// dependencies through every layer. 3 + copies instructions per layer.
proto::Graph Layered(int layers, int copies) {
  return MustTrace(1, 1, [&](Tracer& t) {
    Tensor x = t.Input("x", {128, 64}, proto::FLOAT32);
    Tensor h = t.Allocate({128, 64}, proto::FLOAT32, Buffer::kSharedHbm, "h");
    builder::Scope model("model");
    Tensor src = x;
    for (int l = 0; l < layers; ++l) {
      builder::Scope layer(absl::StrCat("layer_", l));
      Tensor a =
          builder::ndarray({128, 64}, proto::FLOAT32, Buffer::kSbuf, "act");
      Tensor b =
          builder::ndarray({128, 64}, proto::FLOAT32, Buffer::kSbuf, "tmp");
      isa::dma_copy(a, src);
      {
        builder::Scope mlp("mlp");
        for (int k = 0; k < copies; ++k) {
          if (k % 2 == 0) {
            isa::tensor_copy(b, a);
          } else {
            isa::tensor_copy(a, b);
          }
        }
      }
      isa::memset(b, 0.0f);
      isa::dma_copy(h, a);
      src = h;
    }
    t.Output("out", h);
  });
}

// Two cores: load, barrier, exchange tiles, store, barrier (5 per core).
proto::Graph TwoCoreSync() {
  return MustTrace(1, 2, [](Tracer& t) {
    const int c = t.program_id();
    Tensor x = t.Input("x", {2, 2, 3}, proto::FLOAT32);
    Tensor out = t.Allocate({2, 2, 3}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    Tensor flag = t.Allocate({1}, proto::INT32, Buffer::kSharedHbm, "flag");
    Tensor src = builder::ndarray({2, 3}, proto::FLOAT32, Buffer::kSbuf, "src");
    Tensor dst = builder::ndarray({2, 3}, proto::FLOAT32, Buffer::kSbuf, "dst");
    isa::dma_copy(src, x.Select(0, c));
    isa::core_barrier(flag);
    isa::sendrecv(dst, src, /*send_to=*/1 - c, /*recv_from=*/1 - c);
    isa::dma_copy(out.Select(0, c), dst);
    isa::core_barrier(flag);
    t.Output("out", out);
  });
}

// `steps` double-buffered ring permutes over `ranks` ranks, then an
// all_gather.
proto::Graph Ring(int ranks, int steps) {
  return MustTrace(ranks, 1, [&](Tracer& t) {
    Tensor x = t.Input("x", {2}, proto::FLOAT32);
    Tensor bufs[2] = {
        t.Allocate({2}, proto::FLOAT32, Buffer::kSharedHbm, "ping"),
        t.Allocate({2}, proto::FLOAT32, Buffer::kSharedHbm, "pong")};
    Tensor gathered =
        t.Allocate({2 * ranks}, proto::FLOAT32, Buffer::kSharedHbm, "g");
    Tensor src = x;
    for (int step = 0; step < steps; ++step) {
      isa::collective_permute_implicit(bufs[step % 2], src);
      src = bufs[step % 2];
    }
    isa::all_gather(gathered, src, 0);
    t.Output("out", gathered);
  });
}

// --- Helpers -----------------------------------------------------------------

// Dependencies as (from id, to id, kind) triples.
std::vector<std::tuple<uint32_t, uint32_t, DepKind>> DepIds(
    const proto::Graph& graph) {
  absl::StatusOr<std::unique_ptr<GraphIndex>> index = GraphIndex::Build(graph);
  EXPECT_TRUE(index.ok()) << index.status();
  std::vector<std::tuple<uint32_t, uint32_t, DepKind>> out;
  if (!index.ok()) return out;
  for (const Dependency& dep : AnalyzeDependencies(**index)) {
    out.emplace_back((*index)->instr(dep.from).id(),
                     (*index)->instr(dep.to).id(), dep.kind);
  }
  return out;
}

std::string MustRender(const proto::Graph& graph, const DotOptions& options,
                       Format format) {
  absl::StatusOr<std::string> out = RenderGraph(graph, options, format);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : std::string();
}

DotOptions Options(View view = View::kDataflow, int64_t max_nodes = 1000) {
  DotOptions options;
  options.view = view;
  options.view_options.max_nodes = max_nodes;
  return options;
}

// A DOT file as libcgraph reads it back.
struct Dot {
  struct Node {
    std::string cls, label, xlabel, ids;
  };
  struct Edge {
    std::string tail, head, cls, label, dir;
  };
  struct Subgraph {
    std::string name, label, rank;
    std::set<std::string> nodes;  // nodes directly or indirectly inside
  };
  bool ok = false;
  std::map<std::string, Node> nodes;
  std::vector<Edge> edges;
  std::vector<Subgraph> subgraphs;  // every level, depth first

  int CountNodes(const std::string& cls_prefix) const {
    int n = 0;
    for (const auto& [name, node] : nodes) {
      n += absl::StartsWith(node.cls, cls_prefix) ? 1 : 0;
    }
    return n;
  }
  int CountEdges(const std::string& cls) const {
    int n = 0;
    for (const Edge& edge : edges) n += edge.cls == cls ? 1 : 0;
    return n;
  }
  bool HasEdge(const std::string& tail, const std::string& head,
               const std::string& cls) const {
    for (const Edge& edge : edges) {
      if (edge.tail == tail && edge.head == head && edge.cls == cls) {
        return true;
      }
    }
    return false;
  }
  std::vector<std::string> ClusterLabels() const {
    std::vector<std::string> labels;
    for (const Subgraph& sub : subgraphs) {
      if (absl::StartsWith(sub.name, "cluster")) labels.push_back(sub.label);
    }
    return labels;
  }
};

std::string Get(void* object, const char* name) {
  const char* value = agget(object, const_cast<char*>(name));
  return value == nullptr ? "" : value;
}

void CollectSubgraphs(Agraph_t* graph, Dot* dot) {
  for (Agraph_t* sub = agfstsubg(graph); sub != nullptr; sub = agnxtsubg(sub)) {
    Dot::Subgraph info;
    info.name = agnameof(sub);
    info.label = Get(sub, "label");
    info.rank = Get(sub, "rank");
    for (Agnode_t* n = agfstnode(sub); n != nullptr; n = agnxtnode(sub, n)) {
      info.nodes.insert(agnameof(n));
    }
    dot->subgraphs.push_back(info);
    CollectSubgraphs(sub, dot);
  }
}

Dot ParseDot(const std::string& text) {
  std::lock_guard<std::mutex> lock(GraphvizMutex());
  Dot dot;
  Agraph_t* graph = agmemread(text.c_str());
  if (graph == nullptr) return dot;
  dot.ok = true;
  for (Agnode_t* n = agfstnode(graph); n != nullptr; n = agnxtnode(graph, n)) {
    dot.nodes[agnameof(n)] = {Get(n, "class"), Get(n, "label"),
                              Get(n, "xlabel"), Get(n, "ids")};
    for (Agedge_t* e = agfstout(graph, n); e != nullptr;
         e = agnxtout(graph, e)) {
      dot.edges.push_back({agnameof(agtail(e)), agnameof(aghead(e)),
                           Get(e, "class"), Get(e, "label"), Get(e, "dir")});
    }
  }
  CollectSubgraphs(graph, &dot);
  agclose(graph);
  return dot;
}

// Minimal XML well-formedness check: one root element, properly nested
// and closed tags, quoted attributes, '&' only in entity references, no
// raw '<' in text or attribute values. Returns "" or the first problem.
std::string XmlProblem(const std::string& xml) {
  size_t i = 0;
  std::vector<std::string> open;
  int roots = 0;
  auto entity_ok = [&](size_t at) {
    const size_t semi = xml.find(';', at);
    if (semi == std::string::npos || semi - at > 10 || semi == at + 1) {
      return false;
    }
    for (size_t k = at + 1; k < semi; ++k) {
      const char c = xml[k];
      if (!isalnum(static_cast<unsigned char>(c)) && c != '#') return false;
    }
    return true;
  };
  while (i < xml.size()) {
    if (xml[i] != '<') {
      if (xml[i] == '&' && !entity_ok(i)) return absl::StrCat("bad & at ", i);
      if (open.empty() && !isspace(static_cast<unsigned char>(xml[i]))) {
        return absl::StrCat("text outside the root at ", i);
      }
      ++i;
      continue;
    }
    if (xml.compare(i, 4, "<!--") == 0) {
      const size_t end = xml.find("-->", i + 4);
      if (end == std::string::npos) return "unterminated comment";
      i = end + 3;
      continue;
    }
    if (xml.compare(i, 2, "<?") == 0 || xml.compare(i, 2, "<!") == 0) {
      const size_t end = xml.find('>', i);
      if (end == std::string::npos) return "unterminated declaration";
      i = end + 1;
      continue;
    }
    const bool closing = xml.compare(i, 2, "</") == 0;
    size_t k = i + (closing ? 2 : 1);
    const size_t name_start = k;
    while (k < xml.size() &&
           (isalnum(static_cast<unsigned char>(xml[k])) || xml[k] == ':' ||
            xml[k] == '_' || xml[k] == '-' || xml[k] == '.')) {
      ++k;
    }
    const std::string name = xml.substr(name_start, k - name_start);
    if (name.empty()) return absl::StrCat("tag without a name at ", i);
    bool self_closing = false;
    while (true) {
      while (k < xml.size() && isspace(static_cast<unsigned char>(xml[k]))) ++k;
      if (k >= xml.size()) return "unterminated tag " + name;
      if (xml[k] == '>') {
        ++k;
        break;
      }
      if (xml.compare(k, 2, "/>") == 0 && !closing) {
        self_closing = true;
        k += 2;
        break;
      }
      if (closing) return "attributes on closing tag " + name;
      const size_t eq = xml.find('=', k);
      if (eq == std::string::npos) return "attribute without value in " + name;
      k = eq + 1;
      if (k >= xml.size() || (xml[k] != '"' && xml[k] != '\'')) {
        return "unquoted attribute in " + name;
      }
      const char quote = xml[k];
      const size_t end = xml.find(quote, k + 1);
      if (end == std::string::npos) return "unterminated attribute in " + name;
      for (size_t v = k + 1; v < end; ++v) {
        if (xml[v] == '<') return "raw < in an attribute of " + name;
        if (xml[v] == '&' && !entity_ok(v)) return "bad & in " + name;
      }
      k = end + 1;
    }
    if (closing) {
      if (open.empty() || open.back() != name) {
        return absl::StrCat("</", name, "> does not close <",
                            open.empty() ? "" : open.back(), ">");
      }
      open.pop_back();
    } else if (!self_closing) {
      if (open.empty()) ++roots;
      open.push_back(name);
    } else if (open.empty()) {
      ++roots;
    }
    i = k;
  }
  if (!open.empty()) return "unclosed <" + open.back() + ">";
  if (roots != 1) return absl::StrCat(roots, " root elements");
  return "";
}

int CountOccurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + what.size())) {
    ++n;
  }
  return n;
}

// --- Dependency analysis -----------------------------------------------------

TEST(VizDependencyTest, FindsReadAfterWriteWriteAfterReadAndWriteAfterWrite) {
  EXPECT_THAT(DepIds(SmallChain()),
              UnorderedElementsAre(std::make_tuple(0u, 2u, DepKind::kRaw),
                                   std::make_tuple(1u, 2u, DepKind::kRaw),
                                   std::make_tuple(2u, 3u, DepKind::kRaw),
                                   std::make_tuple(2u, 4u, DepKind::kWar),
                                   std::make_tuple(5u, 6u, DepKind::kWaw)));
}

TEST(VizDependencyTest, DisjointColumnsAndRowsOfOneTensorAreIndependent) {
  const proto::Graph graph = MustTrace(1, 1, [](Tracer&) {
    Tensor a = builder::ndarray({128, 64}, proto::FLOAT32, Buffer::kSbuf, "a");
    Tensor c = builder::ndarray({128, 32}, proto::FLOAT32, Buffer::kSbuf, "c");
    Tensor r = builder::ndarray({64, 64}, proto::FLOAT32, Buffer::kSbuf, "r");
    isa::memset(a.Slice(1, 0, 32), 1.0f);     // #0 left columns
    isa::memset(a.Slice(1, 32, 32), 2.0f);    // #1 right columns
    isa::tensor_copy(c, a.Slice(1, 32, 32));  // #2 reads the right: #1 only
    isa::memset(r.Slice(0, 0, 32), 1.0f);     // #3 top partitions
    isa::memset(r.Slice(0, 32, 32), 1.0f);    // #4 bottom partitions
    isa::tensor_copy(c.Slice(0, 32, 32),
                     r.Slice(0, 32, 32).Slice(1, 0, 32));  // #5: #4, #2
  });
  EXPECT_THAT(DepIds(graph),
              UnorderedElementsAre(std::make_tuple(1u, 2u, DepKind::kRaw),
                                   std::make_tuple(4u, 5u, DepKind::kRaw),
                                   std::make_tuple(2u, 5u, DepKind::kWaw)));
}

TEST(VizDependencyTest, DmaComputeReadsItsDstOnlyWhenAccumulating) {
  const proto::Graph graph = MustTrace(1, 1, [](Tracer&) {
    Tensor a = builder::ndarray({4, 8}, proto::FLOAT32, Buffer::kSbuf, "a");
    Tensor acc = builder::ndarray({4, 8}, proto::FLOAT32, Buffer::kSbuf, "acc");
    Tensor sum = builder::ndarray({4, 8}, proto::FLOAT32, Buffer::kSbuf, "sum");
    isa::memset(a, 1.0f);                              // #0
    isa::memset(acc, 0.0f);                            // #1
    isa::dma_compute(acc, {a}, /*accumulate=*/true);   // #2 reads #1's acc
    isa::memset(sum, 0.0f);                            // #3
    isa::dma_compute(sum, {a}, /*accumulate=*/false);  // #4 overwrites #3's
  });
  EXPECT_THAT(DepIds(graph),
              UnorderedElementsAre(std::make_tuple(0u, 2u, DepKind::kRaw),
                                   std::make_tuple(1u, 2u, DepKind::kRaw),
                                   std::make_tuple(0u, 4u, DepKind::kRaw),
                                   std::make_tuple(3u, 4u, DepKind::kWaw)));
}

// tensor_copy_predicated keeps dst where its predicate is false: it reads
// dst as well as writing it. The statistics, scan and select ops draw as
// vector instructions labelled with their ALU ops.
proto::Graph ScanStatisticsSelect() {
  return MustTrace(1, 1, [](Tracer&) {
    auto tile = [](std::vector<int64_t> shape, proto::DType dtype,
                   const char* name) {
      return builder::ndarray(shape, dtype, Buffer::kSbuf, name);
    };
    Tensor a = tile({4, 8}, proto::FLOAT32, "a");
    Tensor p = tile({4, 8}, proto::UINT8, "p");
    Tensor y = tile({4, 8}, proto::FLOAT32, "y");
    Tensor st = tile({4, 6}, proto::FLOAT32, "st");
    Tensor mv = tile({4, 2}, proto::FLOAT32, "mv");
    Tensor z = tile({4, 8}, proto::FLOAT32, "z");
    Tensor r = tile({4, 1}, proto::FLOAT32, "r");
    isa::memset(a, 1.0f);  // #0
    isa::memset(p, 1.0f);  // #1
    isa::tensor_tensor_scan(y, a, a, 0.0f, isa::Alu::kMultiply,
                            isa::Alu::kAdd);  // #2
    isa::tensor_copy_predicated(y, a, p);     // #3 reads #2's y
    isa::bn_stats(st, y);                     // #4
    isa::bn_aggr(mv, st);                     // #5
    isa::tensor_scalar_reduce(z, y, isa::Alu::kAdd, 1.0f, isa::Alu::kMaximum,
                              r);  // #6
  });
}

TEST(VizDependencyTest, PredicatedCopyReadsItsDstAndStatisticsChain) {
  const auto deps = DepIds(ScanStatisticsSelect());
  using E = std::tuple<uint32_t, uint32_t, DepKind>;
  for (const E& want :
       {E(0, 2, DepKind::kRaw), E(2, 3, DepKind::kRaw), E(0, 3, DepKind::kRaw),
        E(1, 3, DepKind::kRaw), E(3, 4, DepKind::kRaw), E(4, 5, DepKind::kRaw),
        E(3, 6, DepKind::kRaw)}) {
    EXPECT_THAT(deps, ::testing::Contains(want))
        << std::get<0>(want) << " -> " << std::get<1>(want);
  }
  const Dot dot =
      ParseDot(MustRender(ScanStatisticsSelect(), Options(), Format::kDot));
  ASSERT_TRUE(dot.ok);
  EXPECT_EQ(dot.CountNodes("instr"), 7);
  EXPECT_THAT(dot.nodes.at("i2").label,
              HasSubstr("tensor_tensor_scan multiply,add"));
  EXPECT_THAT(dot.nodes.at("i3").label, HasSubstr("tensor_copy_predicated"));
  EXPECT_THAT(dot.nodes.at("i4").label, HasSubstr("bn_stats"));
  EXPECT_THAT(dot.nodes.at("i5").label, HasSubstr("bn_aggr"));
  EXPECT_THAT(dot.nodes.at("i6").label,
              HasSubstr("tensor_scalar_reduce add,maximum"));
  for (const char* node : {"i2", "i3", "i4", "i5", "i6"}) {
    EXPECT_EQ(dot.nodes.at(node).cls, "instr vector") << node;
  }
}

TEST(VizDependencyTest, DynamicOffsetTouchesTheWholeTensorAndReadsItsIndex) {
  const proto::Graph graph = MustTrace(1, 1, [](Tracer& t) {
    Tensor x = t.Input("x", {1, 8}, proto::FLOAT32);
    Tensor e = t.Input("e", {1}, proto::INT32);
    Tensor table =
        t.Allocate({4, 8}, proto::FLOAT32, Buffer::kSharedHbm, "table");
    Tensor idx = t.Allocate({1}, proto::INT32, Buffer::kSharedHbm, "idx");
    Tensor row = t.Allocate({1, 8}, proto::FLOAT32, Buffer::kSharedHbm, "row");
    isa::dma_copy(table.Slice(0, 3, 1), x);  // #0 writes row 3
    isa::dma_copy(idx, e);                   // #1 writes the index
    // #2 reads row 0 + idx: may be row 3, so it follows #0; and #1.
    isa::dma_copy(row, table.Slice(0, 0, 1).WithScalarOffset(idx, 0));
    t.Output("row", row);
  });
  EXPECT_THAT(DepIds(graph),
              UnorderedElementsAre(std::make_tuple(0u, 2u, DepKind::kRaw),
                                   std::make_tuple(1u, 2u, DepKind::kRaw)));
}

TEST(VizDependencyTest, AReusedBufferOrdersTheNextLoadAfterTheLastReader) {
  // tiled_matmul k=256: the second k tile's rhs_tile reuses the first's
  // SBUF bytes, so its load waits for the first matmul (write after read),
  // though the two are different tensors.
  const proto::Graph graph = TiledMatmul(512, 256, 128);
  absl::StatusOr<std::unique_ptr<GraphIndex>> index = GraphIndex::Build(graph);
  ASSERT_TRUE(index.ok()) << index.status();
  const std::vector<Dependency> deps = AnalyzeDependencies(**index);
  int reuse_wars = 0;
  for (const Dependency& dep : deps) {
    const proto::Instruction& from = (*index)->instr(dep.from);
    const proto::Instruction& to = (*index)->instr(dep.to);
    if (dep.kind == DepKind::kWar && dep.reuse() &&
        from.opcode() == proto::NC_MATMUL && to.opcode() == proto::DMA_COPY &&
        (*index)->tensor(dep.to_tensor).name() == "rhs_tile") {
      ++reuse_wars;
    }
  }
  EXPECT_EQ(reuse_wars, 1);
  // The accumulating matmul reads the first one's PSUM result.
  int matmul_chain = 0;
  for (const Dependency& dep : deps) {
    if (dep.kind == DepKind::kRaw &&
        (*index)->instr(dep.from).opcode() == proto::NC_MATMUL &&
        (*index)->instr(dep.to).opcode() == proto::NC_MATMUL) {
      ++matmul_chain;
    }
  }
  EXPECT_EQ(matmul_chain, 1);
}

// --- DOT structure
// -------------------------------------------------------------

TEST(VizDotTest, SmallGraphParsesBackWithItsNodesEdgesAndKinds) {
  const Dot dot = ParseDot(MustRender(SmallChain(), Options(), Format::kDot));
  ASSERT_TRUE(dot.ok);
  EXPECT_EQ(dot.CountNodes("instr"), 7);
  EXPECT_EQ(dot.CountNodes("legend"), 1);
  EXPECT_EQ(dot.nodes.size(), 8u);
  // Dependencies only: invisible "sequence" edges just place nodes.
  EXPECT_EQ(dot.edges.size() - dot.CountEdges("sequence"), 5u);
  EXPECT_EQ(dot.CountEdges("raw"), 3);
  EXPECT_EQ(dot.CountEdges("war"), 1);
  EXPECT_EQ(dot.CountEdges("waw"), 1);
  EXPECT_TRUE(dot.HasEdge("i0", "i2", "raw"));
  EXPECT_TRUE(dot.HasEdge("i1", "i2", "raw"));
  EXPECT_TRUE(dot.HasEdge("i2", "i3", "raw"));
  EXPECT_TRUE(dot.HasEdge("i2", "i4", "war"));
  EXPECT_TRUE(dot.HasEdge("i5", "i6", "waw"));
  for (const Dot::Edge& edge : dot.edges) {
    if (edge.tail == "i0" && edge.cls != "sequence") {
      EXPECT_EQ(edge.label, "a");  // the tensor
    }
  }
  // Opcode and operand summary in the label; the engine in the class.
  EXPECT_THAT(dot.nodes.at("i2").label, HasSubstr("tensor_tensor add"));
  EXPECT_THAT(dot.nodes.at("i2").label, HasSubstr("c <- a, b"));
  EXPECT_EQ(dot.nodes.at("i2").cls, "instr vector");
  EXPECT_THAT(dot.ClusterLabels(), ElementsAre("core 0"));
}

TEST(VizDotTest, TiledMatmulShowsCoreAndScopeClustersAndEngines) {
  // m=512, k=256, n=256: one m tile (two lhs^T loads), two n tiles, each
  // with two k tiles of (rhs load, matmul): 16 instructions. Every scope
  // iteration is its own box, though consecutive ones share a name.
  const Dot dot =
      ParseDot(MustRender(TiledMatmul(512, 256, 256), Options(), Format::kDot));
  ASSERT_TRUE(dot.ok);
  EXPECT_EQ(dot.CountNodes("instr"), 16);
  EXPECT_EQ(dot.CountNodes("instr tensor"), 4);
  EXPECT_EQ(dot.CountNodes("instr dma"), 10);
  EXPECT_EQ(dot.CountNodes("instr scalar"), 2);
  EXPECT_EQ(dot.CountNodes("summary"), 0);
  EXPECT_THAT(
      dot.ClusterLabels(),
      UnorderedElementsAre("core 0", "tiled_matmul", "m_tile", "n_tile",
                           "n_tile", "k_tile", "k_tile", "k_tile", "k_tile"));
  for (const Dot::Subgraph& sub : dot.subgraphs) {
    if (sub.label == "k_tile") {
      EXPECT_EQ(sub.nodes.size(), 2u);
    }
    if (sub.label == "n_tile") {
      EXPECT_EQ(sub.nodes.size(), 7u);
    }
    if (sub.label == "core 0") {
      EXPECT_EQ(sub.nodes.size(), 16u);
    }
  }
  // Every matmul reads two tiles loaded by DMA: rhs and lhs^T.
  for (const auto& [name, node] : dot.nodes) {
    if (node.cls != "instr tensor") continue;
    int loads = 0;
    for (const Dot::Edge& edge : dot.edges) {
      if (edge.head == name && edge.cls == "raw" &&
          dot.nodes.at(edge.tail).cls == "instr dma") {
        ++loads;
      }
    }
    EXPECT_EQ(loads, 2) << name;
  }
  EXPECT_GT(dot.CountEdges("war"), 0);
}

TEST(VizDotTest, TheSameGraphGivesByteIdenticalOutput) {
  const proto::Graph graph = TiledMatmul(512, 256, 256);
  for (Format format : {Format::kDot, Format::kSvg}) {
    const std::string first = MustRender(graph, Options(), format);
    const std::string second = MustRender(graph, Options(), format);
    EXPECT_FALSE(first.empty());
    EXPECT_EQ(first, second) << FormatName(format);
  }
  const proto::Graph sync = TwoCoreSync();
  EXPECT_EQ(MustRender(sync, Options(View::kBarrier), Format::kSvg),
            MustRender(sync, Options(View::kBarrier), Format::kSvg));
}

TEST(VizSvgTest, SvgIsWellFormedXmlWithOneGroupPerNode) {
  const proto::Graph graph = TiledMatmul(512, 256, 256);
  const std::string svg = MustRender(graph, Options(), Format::kSvg);
  EXPECT_EQ(XmlProblem(svg), "");
  EXPECT_TRUE(absl::StrContains(svg, "<svg"));
  // 16 instructions and the legend; 9 boxes.
  EXPECT_EQ(CountOccurrences(svg, "class=\"node instr "), 16);
  EXPECT_EQ(CountOccurrences(svg, "class=\"node "), 17);
  EXPECT_EQ(CountOccurrences(svg, "class=\"cluster"), 9);
  // The checker itself rejects broken XML.
  EXPECT_NE(XmlProblem("<svg><g></svg>"), "");
  EXPECT_NE(XmlProblem("<svg a=\"1 & 2\"></svg>"), "");
}

TEST(VizSvgTest, AGraphvizLayoutCrashCostsARetryNotTheProcess) {
  // fgcc's default dataflow picture, with labels on its edges, makes
  // Graphviz 2.42's dot router double-free. The layout runs in a child
  // process and is retried with labels placed after layout.
  absl::StatusOr<proto::Graph> graph =
      kernels::KernelRegistry::Global().Trace("fgcc", {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  const std::string svg = MustRender(*graph, Options(), Format::kSvg);
  EXPECT_EQ(XmlProblem(svg), "");
  EXPECT_EQ(CountOccurrences(svg, "class=\"node instr "), 116);
}

TEST(VizPngTest, PngOutputIsAPngImage) {
  const std::string png = MustRender(SmallChain(), Options(), Format::kPng);
  ASSERT_GT(png.size(), 8u);
  EXPECT_EQ(png.substr(0, 8), "\x89PNG\r\n\x1a\n");
}

// --- Collapse
// ------------------------------------------------------------------

TEST(VizCollapseTest, UnderTheBudgetEveryInstructionIsANode) {
  const proto::Graph graph = Layered(10, 4);  // 70 instructions
  const Dot dot =
      ParseDot(MustRender(graph, Options(View::kDataflow, 100), Format::kDot));
  EXPECT_EQ(dot.CountNodes("instr"), 70);
  EXPECT_EQ(dot.CountNodes("summary"), 0);
  int layer_boxes = 0;
  for (const std::string& label : dot.ClusterLabels()) {
    layer_boxes += absl::StartsWith(label, "layer_") ? 1 : 0;
  }
  EXPECT_EQ(layer_boxes, 10);
}

TEST(VizCollapseTest, AboveTheBudgetScopesCollapseIntoSummaries) {
  const proto::Graph graph = Layered(40, 10);  // 520 instructions
  const Dot dot =
      ParseDot(MustRender(graph, Options(View::kDataflow, 60), Format::kDot));
  ASSERT_TRUE(dot.ok);
  const int visible = dot.CountNodes("instr") + dot.CountNodes("summary");
  EXPECT_LE(visible, 60);
  EXPECT_GE(dot.CountNodes("summary"), 30);
  // A summary counts its instructions per engine.
  bool counted = false;
  for (const auto& [name, node] : dot.nodes) {
    if (node.cls == "summary" && absl::StrContains(node.label, "13 instrs") &&
        absl::StrContains(node.label, "vector 11") &&
        absl::StrContains(node.label, "dma 2")) {
      counted = true;
    }
  }
  EXPECT_TRUE(counted);
}

TEST(VizCollapseTest, CollapsedGraphKeepsEveryDependencyBetweenGroups) {
  const proto::Graph graph = Layered(40, 10);
  const Dot full =
      ParseDot(MustRender(graph, Options(View::kDataflow, 0), Format::kDot));
  const Dot small =
      ParseDot(MustRender(graph, Options(View::kDataflow, 60), Format::kDot));
  ASSERT_TRUE(full.ok && small.ok);
  ASSERT_EQ(full.CountNodes("instr"), 520);
  // Which collapsed node stands for each instruction id.
  std::map<std::string, std::string> rep;
  for (const auto& [name, node] : full.nodes) {
    if (node.cls.rfind("instr", 0) != 0) continue;
    const std::string id = name.substr(1);  // "i<id>"
    uint32_t value = 0;
    ASSERT_TRUE(absl::SimpleAtoi(id, &value));
    if (small.nodes.count(name) > 0) {
      rep[name] = name;
      continue;
    }
    for (const auto& [summary, snode] : small.nodes) {
      if (snode.cls != "summary") continue;
      const std::vector<std::string> range = absl::StrSplit(snode.ids, '-');
      ASSERT_EQ(range.size(), 2u);
      uint32_t lo = 0, hi = 0;
      ASSERT_TRUE(absl::SimpleAtoi(range[0], &lo) &&
                  absl::SimpleAtoi(range[1], &hi));
      if (lo <= value && value <= hi) rep[name] = summary;
    }
    ASSERT_EQ(rep.count(name), 1u) << name << " is in no node";
  }
  int crossing = 0;
  for (const Dot::Edge& edge : full.edges) {
    if (edge.cls != "raw" && edge.cls != "war" && edge.cls != "waw") continue;
    const std::string& tail = rep.at(edge.tail);
    const std::string& head = rep.at(edge.head);
    if (tail == head) continue;
    ++crossing;
    EXPECT_TRUE(small.HasEdge(tail, head, edge.cls))
        << edge.tail << " -> " << edge.head << " became " << tail << " -> "
        << head;
  }
  EXPECT_GT(crossing, 30);
}

TEST(VizCollapseTest, ALongFlatStreamIsChunked) {
  // 300 instructions in no scope at all: chunks keep the picture in budget.
  const proto::Graph graph = MustTrace(1, 1, [](Tracer&) {
    Tensor a = builder::ndarray({128, 64}, proto::FLOAT32, Buffer::kSbuf, "a");
    for (int k = 0; k < 300; ++k) isa::memset(a, 1.0f * k);
  });
  const Dot dot =
      ParseDot(MustRender(graph, Options(View::kDataflow, 50), Format::kDot));
  const int visible = dot.CountNodes("instr") + dot.CountNodes("summary");
  EXPECT_LE(visible, 50);
  EXPECT_GT(dot.CountNodes("summary"), 1);
}

TEST(VizDotTest, AWideFanOutDrawsTheNearestDependentsAndCountsTheRest) {
  // One tile read by 30 later instructions: 12 edges and a note for 18.
  const proto::Graph graph = MustTrace(1, 1, [](Tracer&) {
    Tensor a = builder::ndarray({128, 64}, proto::FLOAT32, Buffer::kSbuf, "a");
    isa::memset(a, 1.0f);
    for (int k = 0; k < 30; ++k) {
      Tensor b =
          builder::ndarray({128, 64}, proto::FLOAT32, Buffer::kSbuf, "b");
      isa::tensor_copy(b, a);
    }
  });
  const Dot dot = ParseDot(MustRender(graph, Options(), Format::kDot));
  ASSERT_TRUE(dot.ok);
  EXPECT_EQ(dot.CountNodes("instr"), 31);
  int from_memset = 0;
  for (const Dot::Edge& edge : dot.edges) {
    if (edge.tail == "i0" && edge.cls == "raw") {
      ++from_memset;
      uint32_t head = 0;
      ASSERT_TRUE(absl::SimpleAtoi(edge.head.substr(1), &head)) << edge.head;
      EXPECT_LE(head, 12u) << "a far dependent was drawn before a near one";
    }
  }
  EXPECT_EQ(from_memset, 12);
  EXPECT_EQ(dot.nodes.at("i0").xlabel, "+18 dependents not drawn");
}

TEST(VizKernelsTest, EveryRegisteredKernelDrawsBothViewsWithinTheBudget) {
  for (const kernels::KernelDef& def :
       kernels::KernelRegistry::Global().kernels()) {
    SCOPED_TRACE(def.name);
    absl::StatusOr<proto::Graph> graph =
        kernels::KernelRegistry::Global().Trace(def.name, def.example);
    ASSERT_TRUE(graph.ok()) << graph.status();
    int64_t instructions = 0;
    for (const proto::Stream& stream : graph->streams()) {
      instructions += stream.instructions_size();
    }
    for (View view : {View::kDataflow, View::kBarrier}) {
      const Dot dot =
          ParseDot(MustRender(*graph, Options(view, 200), Format::kDot));
      ASSERT_TRUE(dot.ok);
      const int visible = dot.CountNodes("instr") + dot.CountNodes("summary");
      EXPECT_GT(visible, 0);
      EXPECT_LE(visible, 200);
      if (view != View::kDataflow) continue;
      // Every instruction is a node or inside a summary's id range.
      int64_t covered = dot.CountNodes("instr");
      for (const auto& [name, node] : dot.nodes) {
        if (node.cls != "summary") continue;
        const std::vector<std::string> range = absl::StrSplit(node.ids, '-');
        ASSERT_EQ(range.size(), 2u) << node.ids;
        int64_t lo = 0, hi = 0;
        ASSERT_TRUE(absl::SimpleAtoi(range[0], &lo) &&
                    absl::SimpleAtoi(range[1], &hi));
        covered += hi - lo + 1;
      }
      EXPECT_EQ(covered, instructions);
    }
  }
}

// --- Filters
// -------------------------------------------------------------------

TEST(VizFilterTest, CoreShowsOnlyThatCoresStream) {
  DotOptions options = Options();
  options.filters.core = 1;
  const Dot dot = ParseDot(MustRender(TwoCoreSync(), options, Format::kDot));
  std::vector<std::string> names;
  for (const auto& [name, node] : dot.nodes) {
    if (node.cls.rfind("instr", 0) == 0) names.push_back(name);
  }
  // Core 0 traced ids 0-4, core 1 ids 5-9.
  EXPECT_THAT(names, UnorderedElementsAre("i5", "i6", "i7", "i8", "i9"));
  EXPECT_THAT(dot.ClusterLabels(), ElementsAre("core 1"));
}

TEST(VizFilterTest, ScopeShowsOnlyThatScopeExpanded) {
  const proto::Graph graph = Layered(40, 10);
  DotOptions options = Options(View::kDataflow, 60);
  options.filters.scope = "layer_7";
  const Dot dot = ParseDot(MustRender(graph, options, Format::kDot));
  EXPECT_EQ(dot.CountNodes("instr"), 13);
  EXPECT_EQ(dot.CountNodes("summary"), 0);
  EXPECT_THAT(dot.ClusterLabels(),
              UnorderedElementsAre("core 0", "model", "layer_7", "mlp"));
  // A path of components works too.
  options.filters.scope = "layer_7/mlp";
  EXPECT_EQ(
      ParseDot(MustRender(graph, options, Format::kDot)).CountNodes("instr"),
      10);
}

TEST(VizFilterTest, InstancePicksOneIterationOfARepeatedScope) {
  // tiled_matmul m=512, k=256, n=256 runs four k_tile instances with one
  // path: (#3, #4), (#5, #6), (#10, #11), (#12, #13).
  const proto::Graph graph = TiledMatmul(512, 256, 256);
  DotOptions options = Options();
  options.filters.scope = "k_tile";
  EXPECT_EQ(
      ParseDot(MustRender(graph, options, Format::kDot)).CountNodes("instr"),
      8);
  options.filters.instance = 2;
  const Dot dot = ParseDot(MustRender(graph, options, Format::kDot));
  EXPECT_EQ(dot.CountNodes("instr"), 2);
  EXPECT_EQ(dot.nodes.count("i10"), 1u);
  EXPECT_EQ(dot.nodes.count("i11"), 1u);
  options.filters.instance = 4;
  absl::StatusOr<VizGraph> view = BuildView(graph, options);
  ASSERT_FALSE(view.ok());
  EXPECT_THAT(view.status().message(),
              AllOf(HasSubstr("--instance 4"), HasSubstr("4 instance(s)")));
  options.filters.scope.clear();
  options.filters.instance = 0;
  view = BuildView(graph, options);
  ASSERT_FALSE(view.ok());
  EXPECT_THAT(view.status().message(), HasSubstr("needs --scope"));
}

TEST(VizFilterTest, AroundShowsTheNeighbourhoodWithinTheRadius) {
  DotOptions options = Options();
  options.filters.around = 2;
  options.filters.radius = 1;
  Dot dot = ParseDot(MustRender(SmallChain(), options, Format::kDot));
  std::vector<std::string> names;
  for (const auto& [name, node] : dot.nodes) {
    if (node.cls.rfind("instr", 0) == 0) names.push_back(name);
  }
  EXPECT_THAT(names, UnorderedElementsAre("i0", "i1", "i2", "i3", "i4"));
  options.filters.radius = 0;
  dot = ParseDot(MustRender(SmallChain(), options, Format::kDot));
  EXPECT_EQ(dot.CountNodes("instr"), 1);
  EXPECT_EQ(dot.nodes.count("i2"), 1u);
}

TEST(VizFilterTest, BadFiltersAreErrorsNamingTheFilter) {
  const proto::Graph graph = TwoCoreSync();
  DotOptions options = Options();
  options.filters.core = 2;
  absl::StatusOr<VizGraph> view = BuildView(graph, options);
  ASSERT_FALSE(view.ok());
  EXPECT_THAT(view.status().message(), HasSubstr("--core 2 is out of range"));

  options = Options(View::kBarrier);
  options.filters.rank = 1;
  view = BuildView(graph, options);
  ASSERT_FALSE(view.ok());
  EXPECT_THAT(view.status().message(), HasSubstr("--rank 1"));

  options = Options();
  options.filters.scope = "no_such_scope";
  view = BuildView(Layered(2, 2), options);
  ASSERT_FALSE(view.ok());
  EXPECT_THAT(view.status().message(),
              AllOf(HasSubstr("no_such_scope"), HasSubstr("model/layer_0")));

  options = Options();
  options.filters.around = 12345;
  view = BuildView(graph, options);
  ASSERT_FALSE(view.ok());
  EXPECT_THAT(view.status().message(), HasSubstr("no instruction"));

  EXPECT_FALSE(ParseView("sideways").ok());
  EXPECT_FALSE(FormatForPath("out.jpg").ok());
  EXPECT_EQ(*FormatForPath("out.SVG"), Format::kSvg);
}

// --- Barrier view
// ----------------------------------------------------------------

TEST(VizBarrierTest, BarriersAndSendRecvJoinTheCoreLanes) {
  const Dot dot = ParseDot(
      MustRender(TwoCoreSync(), Options(View::kBarrier), Format::kDot));
  ASSERT_TRUE(dot.ok);
  EXPECT_EQ(dot.CountNodes("lane"), 2);
  EXPECT_EQ(dot.CountNodes("instr"), 10);
  EXPECT_EQ(dot.CountEdges("barrier"), 2);
  EXPECT_EQ(dot.CountEdges("sendrecv"), 1);
  EXPECT_EQ(dot.CountEdges("order"), 10);  // lane header + 5 per lane
  for (const Dot::Edge& edge : dot.edges) {
    if (edge.cls == "sendrecv") {
      EXPECT_EQ(edge.dir, "both");
    }
    if (edge.cls == "barrier") {
      // Core 0's barrier meets core 1's.
      EXPECT_TRUE(absl::StartsWith(edge.tail, "c0_"));
      EXPECT_TRUE(absl::StartsWith(edge.head, "c1_"));
    }
  }
  // Each meeting is one column: barriers, the pair, and the lane headers.
  int columns = 0;
  for (const Dot::Subgraph& sub : dot.subgraphs) {
    if (sub.rank == "same") {
      ++columns;
      EXPECT_EQ(sub.nodes.size(), 2u);
    }
  }
  EXPECT_EQ(columns, 4);
}

TEST(VizBarrierTest, RingPermutesLinkEachRankToItsSuccessor) {
  const Dot dot =
      ParseDot(MustRender(Ring(4, 3), Options(View::kBarrier), Format::kDot));
  ASSERT_TRUE(dot.ok);
  EXPECT_EQ(dot.CountNodes("lane"), 4);
  EXPECT_EQ(dot.CountEdges("permute"), 12);    // 4 ranks x 3 steps
  EXPECT_EQ(dot.CountEdges("collective"), 3);  // the all_gather's chain
  std::set<std::pair<std::string, std::string>> first_step;
  for (const Dot::Edge& edge : dot.edges) {
    if (edge.cls == "permute" && absl::EndsWith(edge.tail, "_i0")) {
      first_step.insert({edge.tail.substr(0, 4), edge.head.substr(0, 4)});
    }
  }
  EXPECT_THAT(first_step, UnorderedElementsAre(std::make_pair("r0c0", "r1c0"),
                                               std::make_pair("r1c0", "r2c0"),
                                               std::make_pair("r2c0", "r3c0"),
                                               std::make_pair("r3c0", "r0c0")));
  // --rank keeps one rank's lane.
  DotOptions options = Options(View::kBarrier);
  options.filters.rank = 2;
  const Dot one = ParseDot(MustRender(Ring(4, 3), options, Format::kDot));
  EXPECT_EQ(one.CountNodes("lane"), 1);
  EXPECT_EQ(one.nodes.count("r2c0_lane"), 1u);
  EXPECT_EQ(one.CountEdges("permute"), 0);
}

// An all_gather in two replica groups that interleave ({0, 2} and {1, 3}):
// each group is one chain, and no line joins ranks of different groups.
TEST(VizBarrierTest, CollectivesJoinOnlyTheirReplicaGroup) {
  builder::WorldConfig world;
  world.num_ranks = 4;
  world.replica_groups = {{0, 2}, {1, 3}};
  builder::Tracer tracer(builder::TraceConfig{"groups", {}, world});
  absl::StatusOr<proto::Graph> graph = tracer.Trace([](Tracer& t) {
    Tensor x = t.Input("x", {2}, proto::FLOAT32);
    Tensor gathered =
        t.Allocate({4}, proto::FLOAT32, Buffer::kSharedHbm, "gathered");
    isa::all_gather(gathered, x, 0);
    t.Output("out", gathered);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Dot dot =
      ParseDot(MustRender(*graph, Options(View::kBarrier), Format::kDot));
  ASSERT_TRUE(dot.ok);
  std::set<std::pair<std::string, std::string>> links;
  for (const Dot::Edge& edge : dot.edges) {
    if (edge.cls == "collective") {
      links.insert({edge.tail.substr(0, 4), edge.head.substr(0, 4)});
    }
  }
  EXPECT_THAT(links, UnorderedElementsAre(std::make_pair("r0c0", "r2c0"),
                                          std::make_pair("r1c0", "r3c0")));
}

TEST(VizBarrierTest, ABarrierOneCoreNeverReachesIsMarkedStuck) {
  const proto::Graph graph = MustTrace(1, 2, [](Tracer& t) {
    Tensor flag = t.Allocate({1}, proto::INT32, Buffer::kSharedHbm, "flag");
    Tensor a = builder::ndarray({1, 1}, proto::FLOAT32, Buffer::kSbuf, "a");
    isa::memset(a, 0.0f);
    if (t.program_id() == 0) isa::core_barrier(flag);
  });
  const Dot dot =
      ParseDot(MustRender(graph, Options(View::kBarrier), Format::kDot));
  std::vector<std::string> stuck;
  for (const auto& [name, node] : dot.nodes) {
    if (node.xlabel == "stuck") stuck.push_back(name);
  }
  EXPECT_THAT(stuck, ElementsAre("c0_i1"));
  EXPECT_EQ(dot.CountEdges("barrier"), 0);
  // The same graph with both cores at the barrier has nothing stuck.
  const Dot fine = ParseDot(
      MustRender(TwoCoreSync(), Options(View::kBarrier), Format::kDot));
  for (const auto& [name, node] : fine.nodes) EXPECT_EQ(node.xlabel, "");
}

TEST(VizBarrierTest, ManyBlocksCollapseButKeepTheBarriersAcrossLanes) {
  // 200 blocks, each: both cores work, then meet at a barrier.
  const proto::Graph graph = MustTrace(1, 2, [](Tracer& t) {
    Tensor flag = t.Allocate({1}, proto::INT32, Buffer::kSharedHbm, "flag");
    Tensor a = builder::ndarray({128, 64}, proto::FLOAT32, Buffer::kSbuf, "a");
    for (int block = 0; block < 200; ++block) {
      builder::Scope scope(absl::StrCat("block_", block));
      isa::memset(a, 1.0f);
      isa::tensor_copy(a, a);
      isa::core_barrier(flag);
    }
  });
  const Dot dot =
      ParseDot(MustRender(graph, Options(View::kBarrier, 120), Format::kDot));
  ASSERT_TRUE(dot.ok);
  EXPECT_LE(dot.CountNodes("instr") + dot.CountNodes("summary"), 120);
  EXPECT_GT(dot.CountNodes("summary"), 0);
  EXPECT_GT(dot.CountEdges("barrier"), 0);
  for (const Dot::Edge& edge : dot.edges) {
    if (edge.cls == "barrier") {
      EXPECT_TRUE(absl::StartsWith(edge.tail, "c0_"));
      EXPECT_TRUE(absl::StartsWith(edge.head, "c1_"));
    }
  }
}

// --- Bad graphs
// ----------------------------------------------------------------

TEST(VizGraphTest, MalformedGraphsAreErrorsNotCrashes) {
  const proto::Graph good = SmallChain();
  ASSERT_GT(good.streams(0).instructions_size(), 3);
  auto expect_error = [&](const std::function<void(proto::Graph&)>& mutate,
                          const std::string& fragment) {
    proto::Graph bad = good;
    mutate(bad);
    absl::StatusOr<std::string> out = RenderGraph(bad, Options(), Format::kDot);
    ASSERT_FALSE(out.ok()) << fragment;
    EXPECT_THAT(out.status().message(), HasSubstr(fragment));
  };
  expect_error(
      [](proto::Graph& g) {
        testing::MutableOperandOf(g.mutable_streams(0)->mutable_instructions(2),
                                  "data1")
            ->set_tensor_id(999);
      },
      "names tensor id 999");
  expect_error(
      [](proto::Graph& g) {
        g.mutable_streams(0)->mutable_instructions(1)->set_opcode(
            static_cast<proto::Opcode>(99));
      },
      "unknown opcode 99");
  expect_error(
      [](proto::Graph& g) {
        g.mutable_streams(0)->mutable_instructions(3)->set_id(1);
      },
      "duplicate instruction id");
  expect_error(
      [](proto::Graph& g) { g.mutable_world()->set_num_cores(100000); },
      "cores");
  expect_error(
      [](proto::Graph& g) { g.mutable_world()->set_num_ranks(4000000000u); },
      "ranks");
  expect_error([](proto::Graph& g) { g.mutable_tensors(0)->clear_shape(); },
               "shape");
  expect_error(
      [](proto::Graph& g) {
        g.mutable_streams(0)->mutable_instructions(0)->set_scope(77);
      },
      "source file or scope index out of range");
  // The visualizer refuses what the interpreter refuses (one validator):
  // a pattern reaching outside its tensor too.
  expect_error(
      [](proto::Graph& g) {
        proto::AccessPattern* ap = testing::MutableOperandOf(
            g.mutable_streams(0)->mutable_instructions(0), "dst");
        ap->clear_pattern();
        ap->add_pattern(int64_t{1} << 39);
        ap->add_pattern(1 << 20);
        ap->set_offset(-5);
      },
      "operand 'dst': access outside tensor 'a'");
  // An empty graph is not a graph.
  EXPECT_THAT(
      RenderGraph(proto::Graph(), Options(), Format::kDot).status().message(),
      HasSubstr("graph has no schema_version"));
}

// --- The CLI
// -------------------------------------------------------------------

using testing::Slurp;

class VizCliTest : public testing::CliFixture {
 protected:
  using Result = testing::CliResult;

  void SetUp() override {
    CliFixture::SetUp();
    ASSERT_TRUE(WriteGraph(SmallChain(), Path("g.pb")).ok());
  }
  Result Run(const std::string& args) { return RunCli(args); }
  // Exit 2, nothing on stdout, one stderr line naming the problem.
  void ExpectError(const std::string& args, const std::string& fragment) {
    SCOPED_TRACE(args);
    const Result r = Run(args);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(absl::StartsWith(r.err, "nkigraph dot: error: ")) << r.err;
    EXPECT_THAT(r.err, HasSubstr(fragment));
  }
};

TEST_F(VizCliTest, WritesDotToStdoutAndSvgOrPngByExtension) {
  const Result dot = Run(absl::StrCat("dot '", Path("g.pb"), "'"));
  EXPECT_EQ(dot.exit_code, 0) << dot.err;
  EXPECT_TRUE(absl::StartsWith(dot.out, "digraph")) << dot.out.substr(0, 40);
  EXPECT_EQ(ParseDot(dot.out).CountNodes("instr"), 7);

  const Result svg =
      Run(absl::StrCat("dot '", Path("g.pb"), "' -o '", Path("g.svg"), "'"));
  EXPECT_EQ(svg.exit_code, 0) << svg.err;
  EXPECT_EQ(svg.out, "");
  const std::string image = Slurp(Path("g.svg"));
  EXPECT_EQ(XmlProblem(image), "");
  EXPECT_EQ(CountOccurrences(image, "class=\"node instr "), 7);

  const Result png = Run(absl::StrCat(
      "dot '", Path("g.pb"), "' --view barrier -o '", Path("g.png"), "'"));
  EXPECT_EQ(png.exit_code, 0) << png.err;
  EXPECT_EQ(Slurp(Path("g.png")).substr(0, 4), "\x89PNG");

  const Result around = Run(absl::StrCat("dot '", Path("g.pb"),
                                         "' --around 2 --radius 0 "
                                         "--no-legend -o '",
                                         Path("a.dot"), "'"));
  EXPECT_EQ(around.exit_code, 0) << around.err;
  EXPECT_EQ(ParseDot(Slurp(Path("a.dot"))).nodes.size(), 1u);

  const Result help = Run("dot --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("usage: nkigraph dot"));
}

// `nkigraph info` counts an instruction under the engine `nkigraph dot`
// colours it by: a tensor_copy told to run on gpsimd is gpsimd in both.
TEST_F(VizCliTest, InfoAndDotAgreeOnAnInstructionsEngine) {
  const proto::Graph graph = MustTrace(1, 1, [](Tracer&) {
    Tensor a = builder::ndarray({8, 4}, proto::FLOAT32, Buffer::kSbuf, "a");
    Tensor b = builder::ndarray({8, 4}, proto::FLOAT32, Buffer::kSbuf, "b");
    isa::memset(a, 1.0f);
    isa::tensor_copy(b, a, isa::Engine::kGpSimd);
  });
  ASSERT_TRUE(WriteGraph(graph, Path("copy.pb")).ok());

  const Result info = Run(absl::StrCat("info '", Path("copy.pb"), "'"));
  EXPECT_EQ(info.exit_code, 0) << info.err;
  const std::string engines =
      info.out.substr(info.out.find("by engine:"), std::string::npos);
  EXPECT_THAT(engines, HasSubstr("  gpsimd  1\n"));
  EXPECT_THAT(engines, HasSubstr("  vector  1\n"));  // the memset

  const Result dot = Run(absl::StrCat("dot '", Path("copy.pb"), "'"));
  EXPECT_EQ(dot.exit_code, 0) << dot.err;
  const Dot parsed = ParseDot(dot.out);
  int copies = 0;
  for (const auto& [name, node] : parsed.nodes) {
    if (!absl::StartsWith(node.label, "tensor_copy")) continue;
    ++copies;
    EXPECT_EQ(node.cls, "instr gpsimd");
  }
  EXPECT_EQ(copies, 1);
}

TEST_F(VizCliTest, BadInputIsAClearOneLineError) {
  ExpectError(absl::StrCat("dot '", Path("missing.pb"), "'"), "missing.pb");
  { std::ofstream(Path("junk.pb")) << "this is not a graph"; }
  ExpectError(absl::StrCat("dot '", Path("junk.pb"), "'"), "not a valid");
  ExpectError("dot", "no graph file");
  ExpectError(absl::StrCat("dot '", Path("g.pb"), "' -o '", Path("g.jpg"), "'"),
              ".svg");
  ExpectError(absl::StrCat("dot '", Path("g.pb"), "' --view sideways"),
              "unknown view 'sideways'");
  ExpectError(absl::StrCat("dot '", Path("g.pb"), "' --core 3"),
              "--core 3 is out of range");
  ExpectError(absl::StrCat("dot '", Path("g.pb"), "' --max-nodes lots"),
              "--max-nodes takes an integer");
  ExpectError(absl::StrCat("dot '", Path("g.pb"), "' --radius 2"),
              "--radius needs --around");
}

}  // namespace
}  // namespace nkigraph::viz
