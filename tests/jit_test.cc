// jit kernels: inlined into the calling trace under a scope named after the
// kernel, composed in C++ loops, refused when wrapped twice or recursive,
// and freeing their on-chip buffers on return.
#include "builder/jit.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Trace1;

// gmock's StartsWith cannot match absl::string_view, which is not
// std::string_view in this Abseil.
MATCHER_P(StartsWith, prefix,
          absl::StrCat(negation ? "does not start" : "starts", " with \"",
                       prefix, "\"")) {
  *result_listener << "which is \"" << arg << "\"";
  return absl::StartsWith(arg, prefix);
}

constexpr char kFile[] = "tests/jit_test.cc";

// The scope path of every instruction of core 0's stream, in order.
std::vector<std::string> ScopesOf(const proto::Graph& graph) {
  std::vector<std::string> scopes;
  for (const proto::Instruction& instr : graph.streams(0).instructions()) {
    scopes.push_back(graph.scopes(instr.scope()));
  }
  return scopes;
}

// Loads a [4, 8] tile, doubles it and stores it back: three instructions.
const auto kDoubleRows = builder::jit("double_rows", [](const Tensor& out,
                                                        const Tensor& in) {
  Tensor tile = builder::ndarray({4, 8}, proto::FLOAT32, Buffer::kSbuf, "tile");
  isa::dma_copy(tile, in);
  isa::tensor_scalar(tile, tile, isa::Alu::kMultiply, 2.0f);
  isa::dma_copy(out, tile);
});

TEST(JitTest, KernelCalledInsideATraceIsInlinedUnderItsName) {
  absl::StatusOr<proto::Graph> graph = Trace1([](Tracer& t) {
    Tensor in = t.Input("in", {4, 8}, proto::FLOAT32);
    Tensor out = t.Allocate({4, 8}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    Tensor before = t.Allocate({4, 8}, proto::FLOAT32, Buffer::kSbuf, "b");
    isa::dma_copy(before, in);
    kDoubleRows(out, in);
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(kDoubleRows.name(), "double_rows");
  // One graph, one stream: no nested trace.
  ASSERT_EQ(graph->streams_size(), 1);
  EXPECT_EQ(graph->kernel_name(), "test");
  EXPECT_THAT(ScopesOf(*graph),
              ElementsAre("", "double_rows", "double_rows", "double_rows"));
  EXPECT_EQ(graph->streams(0).instructions(2).opcode(), proto::TENSOR_SCALAR);
}

TEST(JitTest, KernelCalledOutsideATraceRecordsNothing) {
  // No tracer: the call is a no-op rather than a crash.
  kDoubleRows(Tensor(), Tensor());
  EXPECT_EQ(Tracer::Current(), nullptr);
}

TEST(JitTest, ComposerLoopUnrollsIntoOneGraphWithAScopePerLayer) {
  const auto composer = [](Tracer& t) {
    Tensor in = t.Input("in", {4, 8}, proto::FLOAT32);
    Tensor out = t.Allocate({4, 8}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    for (int i = 0; i < 3; ++i) {
      builder::Scope layer(absl::StrCat("layer", i));
      kDoubleRows(out, i == 0 ? in : out);
    }
    t.Output("out", out);
  };
  absl::StatusOr<proto::Graph> graph = Trace1(composer);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->streams_size(), 1);
  EXPECT_EQ(graph->streams(0).instructions_size(), 3 * 3);
  EXPECT_THAT(ScopesOf(*graph),
              ElementsAre("layer0/double_rows", "layer0/double_rows",
                          "layer0/double_rows", "layer1/double_rows",
                          "layer1/double_rows", "layer1/double_rows",
                          "layer2/double_rows", "layer2/double_rows",
                          "layer2/double_rows"));
  // Each layer's tile is a tensor of its own.
  int tiles = 0;
  for (const proto::Tensor& tensor : graph->tensors()) {
    if (tensor.name() == "tile") ++tiles;
  }
  EXPECT_EQ(tiles, 3);
}

TEST(JitTest, KernelWrappedByJitTwiceIsRefused) {
  int body_runs = 0;
  const auto inner = builder::jit("inner", [&](const Tensor& dst) {
    ++body_runs;
    isa::memset(dst, 0.0f);
  });
  const int wrap_line = __LINE__ + 1;
  const auto outer = builder::jit("outer", inner);
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor tile = t.Allocate({4, 8}, proto::FLOAT32, Buffer::kSbuf, "tile");
    outer(tile);
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(body_runs, 0);
  EXPECT_THAT(graph.status().message(),
              HasSubstr("kernel 'inner' is wrapped by jit twice (as 'outer'); "
                        "wrap a kernel once"));
  // The error names the line that wrapped it a second time.
  EXPECT_THAT(graph.status().message(),
              StartsWith(absl::StrCat(kFile, ":", wrap_line, ": ")));
}

TEST(JitTest, KernelThatCallsItselfIsRefusedWithoutRecursing) {
  int body_runs = 0;
  std::function<void(const Tensor&)> self;
  const int define_line = __LINE__ + 1;
  const auto recursive = builder::jit("recursive", [&](const Tensor& dst) {
    if (++body_runs > 100) return;  // a guard, should the check fail
    isa::memset(dst, 0.0f);
    self(dst);
  });
  self = recursive;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor tile = t.Allocate({4, 8}, proto::FLOAT32, Buffer::kSbuf, "tile");
    recursive(tile);
  });
  EXPECT_EQ(body_runs, 1);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("kernel 'recursive' calls itself; recursive kernels "
                        "cannot be traced (active kernels: recursive)"));
  EXPECT_THAT(graph.status().message(),
              StartsWith(absl::StrCat(kFile, ":", define_line,
                                      " (recursive)"
                                      ": ")));
}

TEST(JitTest, IndirectRecursionNamesTheActiveKernels) {
  std::function<void(const Tensor&)> call_a;
  const auto b =
      builder::jit("kernel_b", [&](const Tensor& dst) { call_a(dst); });
  const auto a = builder::jit("kernel_a", [&](const Tensor& dst) {
    isa::memset(dst, 0.0f);
    b(dst);
  });
  call_a = a;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor tile = t.Allocate({4, 8}, proto::FLOAT32, Buffer::kSbuf, "tile");
    a(tile);
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("(kernel_a/kernel_b): kernel 'kernel_a' calls itself"));
  EXPECT_THAT(graph.status().message(),
              HasSubstr("(active kernels: kernel_a -> kernel_b)"));
}

TEST(JitTest, CallingTheSameKernelTwiceInSequenceIsNotRecursion) {
  absl::StatusOr<proto::Graph> graph = Trace1([](Tracer& t) {
    Tensor in = t.Input("in", {4, 8}, proto::FLOAT32);
    Tensor out = t.Allocate({4, 8}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    kDoubleRows(out, in);
    kDoubleRows(out, out);
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->streams(0).instructions_size(), 6);
}

TEST(JitTest, OnChipTensorsOfAKernelAreFreedWhenItReturns) {
  std::vector<int64_t> addresses;
  std::vector<uint32_t> ids;
  const auto kernel = builder::jit("scratch", [&](const Tensor& dst) {
    Tensor tmp =
        builder::ndarray({128, 1024}, proto::FLOAT32, Buffer::kSbuf, "tmp");
    addresses.push_back(tmp.valid() ? tmp.decl().address() : -1);
    ids.push_back(tmp.id());
    isa::memset(tmp, 1.0f);
    isa::tensor_copy(dst, tmp.Slice(1, 0, 8));
  });
  int64_t after = -1;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor keep = t.Allocate({128, 8}, proto::FLOAT32, Buffer::kSbuf, "keep");
    kernel(keep);
    kernel(keep);
    // Outside the kernel the space is free again too.
    Tensor later = t.Allocate({128, 16}, proto::FLOAT32, Buffer::kSbuf, "l");
    after = later.valid() ? later.decl().address() : -1;
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(addresses.size(), 2u);
  // "keep" holds [0, 32); the kernel's 4 KiB tile starts at the next
  // 64-byte boundary both times.
  EXPECT_EQ(addresses[0], 64);
  EXPECT_EQ(addresses[1], addresses[0]);
  EXPECT_NE(ids[0], ids[1]);
  EXPECT_EQ(after, 64);
  // Each tile lives exactly while its call's two instructions run.
  const proto::Tensor& first = graph->tensors(static_cast<int>(ids[0]) - 1);
  const proto::Tensor& second = graph->tensors(static_cast<int>(ids[1]) - 1);
  EXPECT_EQ(first.live_begin(), 0u);
  EXPECT_EQ(first.live_end(), 2u);
  EXPECT_EQ(second.live_begin(), 2u);
  EXPECT_EQ(second.live_end(), 4u);
}

TEST(JitTest, OnChipTensorsOutsideAKernelAreNotReused) {
  std::vector<int64_t> addresses;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    for (int i = 0; i < 2; ++i) {
      Tensor tmp = t.Allocate({128, 1024}, proto::FLOAT32, Buffer::kSbuf, "t");
      addresses.push_back(tmp.valid() ? tmp.decl().address() : -1);
    }
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(addresses, ElementsAre(0, 4096));
}

}  // namespace
}  // namespace nkigraph
