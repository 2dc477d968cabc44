// Trace-time checks: each refusal comes back from Trace as the trace's
// error, with its message and the kernel source line that made the call.
#include <string>

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
using ::testing::HasSubstr;
using ::testing::Not;
using testing::Trace1;
using testing::TraceWorld;

// gmock's StartsWith cannot match absl::string_view, which is not
// std::string_view in this Abseil.
MATCHER_P(StartsWith, prefix,
          absl::StrCat(negation ? "does not start" : "starts", " with \"",
                       prefix, "\"")) {
  *result_listener << "which is \"" << arg << "\"";
  return absl::StartsWith(arg, prefix);
}

constexpr char kFile[] = "tests/trace_check_test.cc";

// The prefix of an error recorded at `line` of this file by a one-core
// trace outside any scope.
std::string At(int line) { return absl::StrCat(kFile, ":", line, ": "); }

TEST(TraceCheckTest, OnChipAllocationOfMoreThan128PartitionsIsRefused) {
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    line = __LINE__ + 1;
    t.Allocate({129, 4}, proto::FLOAT32, Buffer::kSbuf, "big");
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  // The file is relative to the project root, so messages (and graphs) do
  // not depend on where the project is checked out.
  EXPECT_EQ(graph.status().message(),
            At(line) +
                "on-chip tensor 'big' has 129 partitions; the "
                "partition dim is at most 128");
}

TEST(TraceCheckTest, PsumAllocationOfMoreThan128PartitionsIsRefused) {
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    line = __LINE__ + 1;
    t.Allocate({256, 4}, proto::FLOAT32, Buffer::kPsum, "acc");
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), StartsWith(At(line)));
  EXPECT_THAT(graph.status().message(),
              HasSubstr("'acc' has 256 partitions; the partition dim is at "
                        "most 128"));
}

// 240000 bytes per partition: more than trn2's 224 KiB (229376), less than
// trn3's 256 KiB (262144).
constexpr int64_t kBetweenTrn2AndTrn3 = 240000 / 4;

TEST(TraceCheckTest, SbufCapacityIsTheTargetProfiles) {
  int line = 0;
  const auto body = [&](Tracer& t) {
    line = __LINE__ + 1;
    t.Allocate({128, kBetweenTrn2AndTrn3}, proto::FLOAT32, Buffer::kSbuf, "w");
  };
  absl::StatusOr<proto::Graph> trn2 =
      TraceWorld(1, 1, body, proto::TARGET_TRN2);
  ASSERT_FALSE(trn2.ok());
  EXPECT_EQ(trn2.status().message(),
            At(line) +
                "sbuf capacity exceeded: 'w' needs 240000 bytes per "
                "partition at offset 0, but a trn2 partition holds "
                "229376 bytes (0 already in use by live tensors)");

  absl::StatusOr<proto::Graph> trn3 =
      TraceWorld(1, 1, body, proto::TARGET_TRN3);
  ASSERT_TRUE(trn3.ok()) << trn3.status();
  ASSERT_EQ(trn3->tensors_size(), 1);
  EXPECT_EQ(trn3->tensors(0).address(), 0);
}

TEST(TraceCheckTest, SbufCapacityCountsLiveTensors) {
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    t.Allocate({128, 100000 / 4}, proto::FLOAT32, Buffer::kSbuf, "a");
    t.Allocate({128, 100000 / 4}, proto::FLOAT32, Buffer::kSbuf, "b");
    line = __LINE__ + 1;
    t.Allocate({128, 100000 / 4}, proto::FLOAT32, Buffer::kSbuf, "c");
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), StartsWith(At(line)));
  // b starts at 100032 and ends at 200032; c would start at the next 64-byte
  // boundary.
  EXPECT_THAT(graph.status().message(),
              HasSubstr("'c' needs 100000 bytes per partition at offset "
                        "200064, but a trn2 partition holds 229376"));
}

TEST(TraceCheckTest, PsumCapacityOf16KiBPerPartitionIsEnforced) {
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    // Exactly 16 KiB fits.
    Tensor full = t.Allocate({128, 4096}, proto::FLOAT32, Buffer::kPsum, "f");
    EXPECT_TRUE(full.valid());
    builder::Scope scope("again");
    line = __LINE__ + 1;
    t.Allocate({128, 1}, proto::FLOAT32, Buffer::kPsum, "one_more");
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            absl::StrCat(kFile, ":", line,
                         " (again): psum capacity exceeded: 'one_more' needs "
                         "4 bytes per partition at offset 16384, but a trn2 "
                         "partition holds 16384 bytes (16384 already in use "
                         "by live tensors)"));
}

TEST(TraceCheckTest, PsumTileLargerThan16KiBIsRefused) {
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    line = __LINE__ + 1;
    t.Allocate({128, 4097}, proto::FLOAT32, Buffer::kPsum, "acc");
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), StartsWith(At(line)));
  EXPECT_THAT(graph.status().message(),
              HasSubstr("psum capacity exceeded: 'acc' needs 16388 bytes"));
}

// SBUF inputs for nc_matmul, all fp32 unless given.
struct MatmulTiles {
  Tensor dst, stationary, moving;
};

MatmulTiles Tiles(Tracer& t, int64_t k, int64_t m, int64_t n,
                  proto::DType st_dtype = proto::FLOAT32,
                  proto::DType mv_dtype = proto::FLOAT32,
                  proto::DType dst_dtype = proto::FLOAT32,
                  Buffer dst_buffer = Buffer::kPsum) {
  return MatmulTiles{t.Allocate({m, n}, dst_dtype, dst_buffer, "dst"),
                     t.Allocate({k, m}, st_dtype, Buffer::kSbuf, "st"),
                     t.Allocate({k, n}, mv_dtype, Buffer::kSbuf, "mv")};
}

TEST(TraceCheckTest, MatmulWithinLimitsIsRecorded) {
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    MatmulTiles x = Tiles(t, 128, 128, 512);
    EXPECT_TRUE(isa::nc_matmul(x.dst, x.stationary, x.moving).valid());
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->streams(0).instructions_size(), 1);
  EXPECT_EQ(graph->streams(0).instructions(0).opcode(), proto::NC_MATMUL);
}

TEST(TraceCheckTest, MatmulMovingFreeSizeAbove512IsRefused) {
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    MatmulTiles x = Tiles(t, 128, 128, 513);
    line = __LINE__ + 1;
    isa::nc_matmul(x.dst, x.stationary, x.moving);
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            At(line) + "nc_matmul: moving free size 513 exceeds 512 on trn2");
}

TEST(TraceCheckTest, MatmulStationaryFreeSizeAbove128IsRefused) {
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    // dst cannot have 129 partitions; the stationary check comes first.
    Tensor dst = t.Allocate({128, 64}, proto::FLOAT32, Buffer::kPsum, "dst");
    Tensor st = t.Allocate({128, 129}, proto::FLOAT32, Buffer::kSbuf, "st");
    Tensor mv = t.Allocate({128, 64}, proto::FLOAT32, Buffer::kSbuf, "mv");
    line = __LINE__ + 1;
    isa::nc_matmul(dst, st, mv);
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            At(line) + "nc_matmul: stationary free size 129 exceeds 128");
}

TEST(TraceCheckTest, MatmulContractionMismatchIsRefused) {
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor dst = t.Allocate({32, 16}, proto::FLOAT32, Buffer::kPsum, "dst");
    Tensor st = t.Allocate({64, 32}, proto::FLOAT32, Buffer::kSbuf, "st");
    Tensor mv = t.Allocate({32, 16}, proto::FLOAT32, Buffer::kSbuf, "mv");
    line = __LINE__ + 1;
    isa::nc_matmul(dst, st, mv);
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            At(line) +
                "nc_matmul: stationary and moving must share the "
                "contraction (partition) dim: 64 vs 32");
}

TEST(TraceCheckTest, MatmulDstOutsidePsumIsASpaceError) {
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    MatmulTiles x = Tiles(t, 64, 32, 16, proto::FLOAT32, proto::FLOAT32,
                          proto::FLOAT32, Buffer::kSbuf);
    line = __LINE__ + 1;
    isa::nc_matmul(x.dst, x.stationary, x.moving);
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            At(line) +
                "nc_matmul: operand 'dst' ('dst') is in sbuf; it "
                "must be in psum");
}

TEST(TraceCheckTest, MatmulDstThatIsNotFloat32IsRefusedOnTrn2) {
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    MatmulTiles x =
        Tiles(t, 64, 32, 16, proto::BFLOAT16, proto::BFLOAT16, proto::BFLOAT16);
    line = __LINE__ + 1;
    isa::nc_matmul(x.dst, x.stationary, x.moving);
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            At(line) + "nc_matmul: dst must be float32 in psum, not bfloat16");
}

TEST(TraceCheckTest, MatmulMixingFloat32AndBfloat16InputsIsRefused) {
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    MatmulTiles x = Tiles(t, 64, 32, 16, proto::FLOAT32, proto::BFLOAT16);
    line = __LINE__ + 1;
    isa::nc_matmul(x.dst, x.stationary, x.moving);
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            At(line) +
                "nc_matmul: if one input is float32 the other must be "
                "too (float32 x bfloat16)");
}

TEST(TraceCheckTest, MatmulOperandStartingAtAMisalignedPartitionIsRefused) {
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor dst = t.Allocate({32, 64}, proto::FLOAT32, Buffer::kPsum, "dst");
    Tensor st = t.Allocate({128, 32}, proto::FLOAT32, Buffer::kSbuf, "st");
    Tensor mv = t.Allocate({40, 64}, proto::FLOAT32, Buffer::kSbuf, "mv");
    line = __LINE__ + 1;
    isa::nc_matmul(dst, st.Slice(0, 16, 40), mv);
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            At(line) +
                "nc_matmul: operand 'stationary' spans 40 partitions "
                "starting at partition 16; 40 partitions must start "
                "at 0 or 64");
}

TEST(TraceCheckTest, MatmulOperandStartingAtPartition64IsAccepted) {
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor dst = t.Allocate({32, 64}, proto::FLOAT32, Buffer::kPsum, "dst");
    Tensor st = t.Allocate({128, 32}, proto::FLOAT32, Buffer::kSbuf, "st");
    Tensor mv = t.Allocate({40, 64}, proto::FLOAT32, Buffer::kSbuf, "mv");
    isa::nc_matmul(dst, st.Slice(0, 64, 40), mv);
  });
  EXPECT_TRUE(graph.ok()) << graph.status();
}

TEST(TraceCheckTest, DmaCopyFromPsumMustBeStagedThroughSbuf) {
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor out = t.Allocate({4, 8}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    Tensor acc = t.Allocate({4, 8}, proto::FLOAT32, Buffer::kPsum, "acc");
    line = __LINE__ + 1;
    isa::dma_copy(out, acc);
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            At(line) +
                "dma_copy: DMA cannot access psum ('acc'); stage it "
                "through sbuf with tensor_copy first");
}

TEST(TraceCheckTest, DmaCopyWithDifferentElementCountsIsRefused) {
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor in = t.Input("in", {4, 4}, proto::FLOAT32);
    Tensor tile = t.Allocate({4, 8}, proto::FLOAT32, Buffer::kSbuf, "tile");
    line = __LINE__ + 1;
    isa::dma_copy(tile, in);
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            At(line) + "dma_copy: 'dst' has 32 elements but 'src' has 16");
}

TEST(TraceCheckTest, SliceOutsideTheViewIsRefused) {
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor in = t.Input("in", {4, 6}, proto::FLOAT32);
    line = __LINE__ + 1;
    in.Slice(1, 4, 4);
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            At(line) + "Slice of 'in' dim 1: [4, 7] step 1 is outside [0, 6)");
}

TEST(TraceCheckTest, SliceWithAStepPastTheEndIsRefused) {
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor in = t.Input("in", {4, 6}, proto::FLOAT32);
    in.Slice(1, 1, 3, 2);  // elements 1, 3, 5: fine
    in.Slice(1, 2, 3, 2);  // elements 2, 4, 6: 6 is outside
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("Slice of 'in' dim 1: [2, 6] step 2 is outside "
                        "[0, 6)"));
}

TEST(TraceCheckTest, ActivationWithABiasThatIsNotAColumnIsRefused) {
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor data = t.Allocate({16, 32}, proto::FLOAT32, Buffer::kSbuf, "data");
    Tensor out = t.Allocate({16, 32}, proto::FLOAT32, Buffer::kSbuf, "out");
    Tensor bias = t.Allocate({16, 2}, proto::FLOAT32, Buffer::kSbuf, "bias");
    line = __LINE__ + 1;
    isa::activation(out, isa::ActFunc::kRelu, data, {.bias = bias});
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            At(line) + "activation: 'bias' must be [16, 1], not [16, 2]");
}

TEST(TraceCheckTest, TensorTensorWithMismatchedShapesIsRefused) {
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor a = t.Allocate({4, 8}, proto::FLOAT32, Buffer::kSbuf, "a");
    Tensor b = t.Allocate({4, 4}, proto::FLOAT32, Buffer::kSbuf, "b");
    Tensor c = t.Allocate({4, 8}, proto::FLOAT32, Buffer::kSbuf, "c");
    line = __LINE__ + 1;
    isa::tensor_tensor(c, a, b, isa::Alu::kAdd);
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            At(line) + "tensor_tensor: 'dst' is [4, 8] but 'data2' is [4, 4]");
}

TEST(TraceCheckTest, OnChipTensorOfOneCoreUsedOnAnotherIsRefused) {
  int line = 0;
  Tensor core0_tile;  // outlives core 0's run of the body
  absl::StatusOr<proto::Graph> graph = TraceWorld(1, 2, [&](Tracer& t) {
    Tensor in = t.Input("in", {4, 8}, proto::FLOAT32);
    if (t.program_id() == 0) {
      core0_tile = t.Allocate({4, 8}, proto::FLOAT32, Buffer::kSbuf, "tile");
      isa::dma_copy(core0_tile, in);
    } else {
      line = __LINE__ + 1;
      isa::dma_copy(core0_tile, in);
    }
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            absl::StrCat(kFile, ":", line,
                         " [core 1]: tensor 'tile' belongs to core 0 and "
                         "cannot be used on core 1"));
}

TEST(TraceCheckTest, SharedHbmAllocationsThatDifferBetweenCoresAreRefused) {
  int line = 0;
  absl::StatusOr<proto::Graph> graph = TraceWorld(1, 2, [&](Tracer& t) {
    const int64_t cols = t.program_id() == 0 ? 8 : 16;
    line = __LINE__ + 1;
    t.Allocate({4, cols}, proto::FLOAT32, Buffer::kSharedHbm, "scratch");
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            absl::StrCat(kFile, ":", line,
                         " [core 1]: shared-HBM allocation 'scratch' on core "
                         "1 differs from core 0's 'scratch'; control flow "
                         "must not differ between cores"));
}

TEST(TraceCheckTest, SharedHbmAllocationOnlyOnCoreOneIsRefused) {
  int line = 0;
  absl::StatusOr<proto::Graph> graph = TraceWorld(1, 2, [&](Tracer& t) {
    if (t.program_id() == 1) {
      line = __LINE__ + 1;
      t.Allocate({4, 8}, proto::FLOAT32, Buffer::kSharedHbm, "extra");
    }
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              StartsWith(absl::StrCat(kFile, ":", line, " [core 1]: ")));
  EXPECT_THAT(graph.status().message(),
              HasSubstr("core 1 allocates shared-HBM tensor 'extra' that core "
                        "0 did not; control flow must not differ between "
                        "cores"));
}

TEST(TraceCheckTest, SharedHbmAllocationOnlyOnCoreZeroIsRefused) {
  absl::StatusOr<proto::Graph> graph = TraceWorld(1, 2, [&](Tracer& t) {
    if (t.program_id() == 0) {
      t.Allocate({4, 8}, proto::FLOAT32, Buffer::kSharedHbm, "only_core0");
    }
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("core 1 allocated 0 shared-HBM tensors but core 0 "
                        "allocated 1; control flow must not differ between "
                        "cores"));
}

TEST(TraceCheckTest, SharedHbmAllocationsInTheSameOrderAreOneTensor) {
  absl::StatusOr<proto::Graph> graph = TraceWorld(1, 2, [&](Tracer& t) {
    t.Allocate({4, 8}, proto::FLOAT32, Buffer::kSharedHbm, "scratch");
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->tensors_size(), 1);
  EXPECT_EQ(graph->tensors(0).space(), proto::SHARED_HBM);
  EXPECT_EQ(graph->streams_size(), 2);
}

TEST(TraceCheckTest, OutputOfASliceIsRefused) {
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor out = t.Allocate({4, 8}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    line = __LINE__ + 1;
    t.Output("out", out.Slice(0, 0, 2));
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            At(line) + "output 'out' must be a whole tensor, not a view");
}

TEST(TraceCheckTest, OutputOfAPermutedWholeTensorIsRefused) {
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor out = t.Allocate({4, 8}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    line = __LINE__ + 1;
    t.Output("out", out.Permute({1, 0}));
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            At(line) + "output 'out' must be a whole tensor, not a view");
}

TEST(TraceCheckTest, OutputOfABroadcastRowOfTheSameSizeIsRefused) {
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor out = t.Allocate({2, 8}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    // Row 0 read twice: 16 elements at offset 0, but not the tensor.
    t.Output("out", out.Select(0, 0).Broadcast(0, 2));
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("output 'out' must be a whole tensor, not a view"));
}

TEST(TraceCheckTest, OutputOfAnOnChipTensorIsRefused) {
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor tile = t.Allocate({4, 8}, proto::FLOAT32, Buffer::kSbuf, "tile");
    t.Output("out", tile);
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("output 'out' must be in hbm, not sbuf"));
}

TEST(TraceCheckTest, AfterTheFirstErrorLaterCallsRecordNothing) {
  int first_line = 0;
  int second_line = 0;
  bool ran_to_the_end = false;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor in = t.Input("in", {4, 4}, proto::FLOAT32);
    Tensor tile = t.Allocate({4, 8}, proto::FLOAT32, Buffer::kSbuf, "tile");
    first_line = __LINE__ + 1;
    EXPECT_FALSE(isa::dma_copy(tile, in).valid());
    const std::string first = std::string(t.error().message());
    EXPECT_THAT(first, StartsWith(At(first_line)));

    // A second, different error is not recorded.
    second_line = __LINE__ + 1;
    t.Allocate({200, 4}, proto::FLOAT32, Buffer::kSbuf, "too_tall");
    EXPECT_EQ(t.error().message(), first);
    // Valid calls record nothing either.
    EXPECT_FALSE(
        t.Allocate({4, 4}, proto::FLOAT32, Buffer::kSbuf, "ok").valid());
    EXPECT_FALSE(isa::dma_copy(tile.Slice(1, 0, 4), in).valid());
    ran_to_the_end = true;
  });
  EXPECT_TRUE(ran_to_the_end);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), StartsWith(At(first_line)));
  EXPECT_THAT(graph.status().message(), HasSubstr("'dst' has 32 elements"));
  EXPECT_THAT(graph.status().message(),
              Not(HasSubstr(absl::StrCat(":", second_line, ":"))));
  EXPECT_THAT(graph.status().message(), Not(HasSubstr("too_tall")));
}

// Kernel code runs on after an error and may look at the invalid views it
// got back (their sizes, names, dtypes) before its next ISA call: that is
// safe, and the trace still reports the first error.
TEST(TraceCheckTest, InvalidViewsAreSafeToInspect) {
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor in = t.Input("in", {4, 4}, proto::FLOAT32);
    const Tensor bad = in.Slice(3, 0, 1);  // no dim 3
    EXPECT_FALSE(bad.valid());
    EXPECT_EQ(bad.rank(), 0);
    EXPECT_EQ(bad.dim(2), 0);
    EXPECT_EQ(bad.num_elements(), 0);
    EXPECT_TRUE(bad.shape().empty());
    EXPECT_EQ(bad.name(), "");
    EXPECT_EQ(bad.dtype(), proto::DTYPE_UNSPECIFIED);
    EXPECT_EQ(in.dim(-1), 0);
    EXPECT_EQ(in.dim(2), 0);
    EXPECT_FALSE(bad.Slice(0, 0, bad.dim(2)).valid());
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("dim 3"));
}

TEST(TraceCheckTest, TheFirstErrorOfCoreZeroStopsTheOtherCores) {
  int core1_runs = 0;
  absl::StatusOr<proto::Graph> graph = TraceWorld(1, 2, [&](Tracer& t) {
    if (t.program_id() == 1) ++core1_runs;
    t.Allocate({129, 1}, proto::FLOAT32, Buffer::kSbuf, "big");
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(core1_runs, 0);
  EXPECT_THAT(graph.status().message(), HasSubstr("[core 0]: on-chip tensor"));
}

}  // namespace
}  // namespace nkigraph
