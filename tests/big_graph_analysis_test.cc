// Graphs big enough that validation, the index and the dependency analysis
// split their work over threads: what they report is what one thread in
// program order reports.
#include <cstdint>
#include <string>
#include <vector>

#include "builder/isa.h"
#include "builder/tracer.h"
#include "graph/dependencies.h"
#include "graph/graph_index.h"
#include "graph/validate.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"
#include "util/diagnostic.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::Tensor;
namespace isa = builder::isa;

// Past the size at which the analyses go parallel (16,384 instructions).
constexpr int kPerCore = 12000;

// Two cores, each adding a tile into an accumulator kPerCore times: every
// instruction of a core reads and writes what the one before it wrote.
proto::Graph TwoCoreChains() {
  absl::StatusOr<proto::Graph> graph =
      testing::TraceWorld(1, 2, [](builder::Tracer&) {
        Tensor acc =
            builder::ndarray({128, 4}, proto::FLOAT32, Buffer::kSbuf, "acc");
        Tensor b =
            builder::ndarray({128, 4}, proto::FLOAT32, Buffer::kSbuf, "b");
        for (int k = 0; k < kPerCore; ++k) {
          isa::tensor_tensor(acc, acc, b, isa::Alu::kAdd);
        }
      });
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? *graph : proto::Graph();
}

TEST(BigGraphAnalysis, ValidGraphHasNoProblems) {
  const proto::Graph graph = TwoCoreChains();
  ASSERT_EQ(graph.streams_size(), 2);
  ASSERT_EQ(graph.streams(1).instructions_size(), kPerCore);
  EXPECT_TRUE(graph::ValidateGraph(graph).empty());
}

TEST(BigGraphAnalysis, ProblemsAreListedInStreamOrder) {
  proto::Graph graph = TwoCoreChains();
  // Core 1's early problem must come after core 0's late ones.
  graph.mutable_streams(1)->mutable_instructions(50)->set_scope(9999);
  graph.mutable_streams(0)
      ->mutable_instructions(11000)
      ->mutable_operands(1)
      ->set_tensor_id(999);
  graph.mutable_streams(0)->mutable_instructions(11001)->set_id(
      graph.streams(0).instructions(7).id());
  const std::vector<Diagnostic> problems = graph::ValidateGraph(graph);
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0].instruction_id,
            graph.streams(0).instructions(11000).id());
  EXPECT_NE(problems[0].message.find("names tensor id 999"), std::string::npos)
      << problems[0].message;
  EXPECT_EQ(problems[1].instruction_id, graph.streams(0).instructions(7).id());
  EXPECT_EQ(problems[1].message, "duplicate instruction id");
  EXPECT_EQ(problems[2].instruction_id, graph.streams(1).instructions(50).id());
  EXPECT_EQ(problems[2].message, "source file or scope index out of range");
}

TEST(BigGraphAnalysis, StopsListingAfterAThousandProblems) {
  proto::Graph graph = TwoCoreChains();
  for (int c = 0; c < 2; ++c) {
    for (proto::Instruction& instr :
         *graph.mutable_streams(c)->mutable_instructions()) {
      instr.set_scope(9999);
    }
  }
  const std::vector<Diagnostic> problems = graph::ValidateGraph(graph);
  // One thread checks the count before each instruction: it stops once
  // more than 1,000 are listed, all of them core 0's first instructions.
  ASSERT_EQ(problems.size(), 1001u);
  EXPECT_EQ(problems.front().instruction_id,
            graph.streams(0).instructions(0).id());
  EXPECT_EQ(problems.back().instruction_id,
            graph.streams(0).instructions(1000).id());
}

TEST(BigGraphAnalysis, TensorProblemsAreListedInTensorOrder) {
  absl::StatusOr<proto::Graph> traced =
      testing::TraceWorld(1, 1, [](builder::Tracer& t) {
        for (int k = 0; k < 20000; ++k) {
          t.Allocate({1, 4}, proto::FLOAT32, Buffer::kHbm, "t");
        }
      });
  ASSERT_TRUE(traced.ok()) << traced.status();
  proto::Graph graph = *std::move(traced);
  ASSERT_GE(graph.tensors_size(), 20000);
  graph.mutable_tensors(19000)->set_address(-4);
  graph.mutable_tensors(3)->set_address(-8);
  const std::vector<Diagnostic> problems = graph::ValidateGraph(graph);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].tensor_id, 4u);
  EXPECT_EQ(problems[0].message, "negative address -8");
  EXPECT_EQ(problems[1].tensor_id, 19001u);
  EXPECT_EQ(problems[1].message, "negative address -4");
}

TEST(BigGraphAnalysis, IndexFindsDenseAndSparseIds) {
  proto::Graph graph = TwoCoreChains();
  {
    absl::StatusOr<std::unique_ptr<graph::GraphIndex>> index =
        graph::GraphIndex::Build(graph);
    ASSERT_TRUE(index.ok()) << index.status();
    const proto::Instruction& last =
        graph.streams(1).instructions(kPerCore - 1);
    EXPECT_EQ((*index)->Find(last.id()), 2 * kPerCore - 1);
    EXPECT_EQ((*index)->info(kPerCore).core, 1u);
    EXPECT_EQ((*index)->info(kPerCore).position, 0u);
    EXPECT_EQ((*index)->Find(3 * kPerCore), -1);
  }
  // Ids far apart: the index finds them all the same.
  uint32_t id = 1;
  for (int c = 0; c < 2; ++c) {
    for (proto::Instruction& instr :
         *graph.mutable_streams(c)->mutable_instructions()) {
      instr.set_id(id);
      id += 1000;
    }
  }
  absl::StatusOr<std::unique_ptr<graph::GraphIndex>> index =
      graph::GraphIndex::Build(graph);
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ((*index)->Find(1), 0);
  EXPECT_EQ((*index)->Find(1 + 1000 * (kPerCore + 5)), kPerCore + 5);
  EXPECT_EQ((*index)->Find(2), -1);
}

TEST(BigGraphAnalysis, EachCoreIsOneChain) {
  const proto::Graph graph = TwoCoreChains();
  absl::StatusOr<std::unique_ptr<graph::GraphIndex>> index =
      graph::GraphIndex::Build(graph);
  ASSERT_TRUE(index.ok()) << index.status();
  for (const bool drop_implied : {false, true}) {
    const std::vector<graph::Dependency> deps =
        graph::AnalyzeDependencies(**index, {.drop_implied = drop_implied});
    // Per core, instruction k waits for k - 1 alone (read after write of
    // the accumulator, the strongest of its kinds), in (to, from) order.
    ASSERT_EQ(deps.size(), 2u * (kPerCore - 1));
    size_t d = 0;
    for (int c = 0; c < 2; ++c) {
      for (int k = 1; k < kPerCore; ++k, ++d) {
        const int to = c * kPerCore + k;
        ASSERT_EQ(deps[d].to, to) << d;
        ASSERT_EQ(deps[d].from, to - 1) << d;
        ASSERT_EQ(deps[d].kind, graph::DepKind::kRaw) << d;
      }
    }
  }
}

}  // namespace
}  // namespace nkigraph
