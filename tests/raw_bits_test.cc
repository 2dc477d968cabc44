// Raw-bits 16-bit I/O: uint16 host arrays for 2-byte tensors, taken and
// given bit for bit by .npy files, the interpreter, `nkigraph run
// --raw-bits` and replay bundles, NaN payloads and subnormals included.
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "builder/isa.h"
#include "builder/tracer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli_fixture.h"
#include "tests/test_util.h"
#include "util/dtype.h"
#include "util/graph_io.h"
#include "util/npy.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

// Patterns the float path changes: NaN payloads (quieted, or their low
// bits lost), signalling NaN, subnormals and -0 kept only as bits.
const std::vector<uint16_t> kBits = {0x7F81, 0xFFC3, 0x7FFF, 0x0001,
                                     0x8001, 0x007F, 0x8000, 0x3F80};

using testing::RawBits;

// x [2, 4] of `dtype` copied through SBUF to output "y".
proto::Graph CopyGraph(proto::DType dtype) {
  absl::StatusOr<proto::Graph> graph = testing::Trace1([dtype](Tracer& t) {
    Tensor x = t.Input("x", {2, 4}, dtype);
    Tensor tile = builder::ndarray({2, 4}, dtype, Buffer::kSbuf, "tile");
    isa::dma_copy(tile, x);
    Tensor y = t.Allocate({2, 4}, dtype, Buffer::kSharedHbm, "y");
    isa::dma_copy(y, tile);
    t.Output("y", y);
  });
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? *graph : proto::Graph();
}

TEST(RawBitsTest, NpyKeepsUint16ArraysAsTheyAre) {
  const HostArray array = RawBits("a", {2, 4}, kBits);
  absl::StatusOr<std::string> bytes = SerializeNpy(array);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_THAT(*bytes, HasSubstr("'descr': '<u2'"));
  // Data: 16 bytes after the 64-byte-aligned header, little-endian.
  ASSERT_EQ(bytes->size() % 16, 0u);
  EXPECT_EQ(static_cast<uint8_t>((*bytes)[bytes->size() - 16]), 0x81);
  EXPECT_EQ(static_cast<uint8_t>((*bytes)[bytes->size() - 15]), 0x7F);
  absl::StatusOr<HostArray> read = ParseNpy(*bytes, "a.npy");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->dtype, proto::UINT16);
  EXPECT_EQ(read->shape, (std::vector<int64_t>{2, 4}));
  EXPECT_THAT(read->u16, ElementsAreArray(kBits));
}

TEST(RawBitsTest, ABf16InputGivenAsBitsComesBackBitForBit) {
  for (proto::DType dtype : {proto::BFLOAT16, proto::FLOAT16, proto::INT16}) {
    SCOPED_TRACE(DTypeName(dtype));
    absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
        interp::Interpreter::Create(CopyGraph(dtype));
    ASSERT_TRUE(interp.ok()) << interp.status();
    ASSERT_TRUE((*interp)->SetInput(RawBits("x", {2, 4}, kBits)).ok());
    ASSERT_TRUE((*interp)->Run().ok());
    absl::StatusOr<HostArray> y =
        (*interp)->GetOutput("y", interp::Interpreter::HostForm::kRawBits16);
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y->dtype, proto::UINT16);
    EXPECT_THAT(y->u16, ElementsAreArray(kBits));
  }
  // The values form still reads floats: 1.0 is 1.0, the NaNs NaN.
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
      interp::Interpreter::Create(CopyGraph(proto::BFLOAT16));
  ASSERT_TRUE(interp.ok());
  ASSERT_TRUE((*interp)->SetInput(RawBits("x", {2, 4}, kBits)).ok());
  ASSERT_TRUE((*interp)->Run().ok());
  absl::StatusOr<HostArray> y = (*interp)->GetOutput("y");
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y->dtype, proto::FLOAT32);
  EXPECT_EQ(y->f32[7], 1.0f);
  EXPECT_TRUE(std::isnan(y->f32[0]));
}

TEST(RawBitsTest, RawBitsFor4ByteTensorsAreRefused) {
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
      interp::Interpreter::Create(CopyGraph(proto::FLOAT32));
  ASSERT_TRUE(interp.ok());
  const absl::Status status = (*interp)->SetInput(RawBits("x", {2, 4}, kBits));
  EXPECT_THAT(status.message(),
              HasSubstr("input 'x' is uint16 raw bits, but the graph declares "
                        "it float32 (raw bits are taken for 2-byte dtypes "
                        "only)"));
  // A float32 output read as raw bits stays float32 values.
  ASSERT_TRUE(
      (*interp)
          ->SetInput(testing::Floats("x", {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}))
          .ok());
  ASSERT_TRUE((*interp)->Run().ok());
  absl::StatusOr<HostArray> y =
      (*interp)->GetOutput("y", interp::Interpreter::HostForm::kRawBits16);
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y->dtype, proto::FLOAT32);
}

TEST(RawBitsTest, NeverWrittenBf16ElementsReadAsQuietNanBits) {
  absl::StatusOr<proto::Graph> graph = testing::Trace1([](Tracer& t) {
    Tensor x = t.Input("x", {1, 2}, proto::BFLOAT16);
    Tensor y = t.Allocate({1, 4}, proto::BFLOAT16, Buffer::kSharedHbm, "y");
    isa::dma_copy(y.Slice(1, 0, 2), x);
    t.Output("y", y);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
      interp::Interpreter::Create(*graph);
  ASSERT_TRUE(interp.ok());
  ASSERT_TRUE((*interp)->SetInput(RawBits("x", {1, 2}, {0x0001, 0x7F81})).ok());
  ASSERT_TRUE((*interp)->Run().ok());
  absl::StatusOr<HostArray> y =
      (*interp)->GetOutput("y", interp::Interpreter::HostForm::kRawBits16);
  ASSERT_TRUE(y.ok());
  EXPECT_THAT(y->u16, ElementsAreArray({0x0001, 0x7F81, 0x7FC0, 0x7FC0}));
}

class RawBitsCliTest : public testing::CliFixture {};

TEST_F(RawBitsCliTest, RunWritesRawBitsAndTheBundleReplaysThem) {
  ASSERT_TRUE(WriteGraph(CopyGraph(proto::BFLOAT16), Path("g.pb")).ok());
  ASSERT_TRUE(WriteNpy(Path("x.npy"), RawBits("", {2, 4}, kBits)).ok());
  const testing::CliResult r = RunCli(absl::StrCat(
      "run '", Path("g.pb"), "' --input x='", Path("x.npy"), "' -o '",
      Path("out"), "' --raw-bits --save-bundle '", Path("b.pb"), "'"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  absl::StatusOr<HostArray> y = ReadNpy(Path("out/y.npy"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->dtype, proto::UINT16);
  EXPECT_THAT(y->u16, ElementsAreArray(kBits));

  // The bundle holds the input's and the output's bits.
  proto::Bundle bundle;
  ASSERT_TRUE(ReadMessage(Path("b.pb"), &bundle).ok());
  ASSERT_EQ(bundle.inputs_size(), 1);
  EXPECT_EQ(bundle.inputs(0).dtype(), proto::UINT16);
  EXPECT_EQ(bundle.inputs(0).data().size(), 2 * kBits.size());
  EXPECT_EQ(static_cast<uint8_t>(bundle.inputs(0).data()[0]), 0x81);
  ASSERT_EQ(bundle.outputs_size(), 1);
  EXPECT_EQ(bundle.outputs(0).dtype(), proto::UINT16);
  const testing::CliResult replay =
      RunCli(absl::StrCat("replay '", Path("b.pb"), "'"));
  EXPECT_EQ(replay.exit_code, 0) << replay.out << replay.err;
  EXPECT_THAT(replay.out, HasSubstr("identical bit for bit"));

  // A changed output bit is found, and shown as bits.
  bundle.mutable_outputs(0)->mutable_data()->at(0) = 0x40;
  ASSERT_TRUE(WriteMessage(bundle, Path("b2.pb")).ok());
  const testing::CliResult changed =
      RunCli(absl::StrCat("replay '", Path("b2.pb"), "'"));
  EXPECT_EQ(changed.exit_code, 1);
  EXPECT_THAT(changed.out, HasSubstr("bundle 0x7f40 (raw bits), replay "
                                     "0x7f81 (raw bits)"));

  // Without --raw-bits the output is float32 values.
  const testing::CliResult values =
      RunCli(absl::StrCat("run '", Path("g.pb"), "' --input x='", Path("x.npy"),
                          "' -o '", Path("values"), "'"));
  ASSERT_EQ(values.exit_code, 0) << values.err;
  absl::StatusOr<HostArray> v = ReadNpy(Path("values/y.npy"));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->dtype, proto::FLOAT32);
  EXPECT_EQ(v->f32[7], 1.0f);
}

}  // namespace
}  // namespace nkigraph
