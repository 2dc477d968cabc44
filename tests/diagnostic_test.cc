// The structured diagnostic: its default rendering, its trip through an
// absl::Status payload, and, for each producer (loader, validator, tracer,
// interpreter), the fields of the diagnostic its errors carry, checked
// against what the test knows independently (the line it made the call on,
// the id the builder returned, the program it arranged to fail). Races and
// deadlocks are checked beside their scenarios (check_test, sync_test).
#include "util/diagnostic.h"

#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "builder/isa.h"
#include "builder/tracer.h"
#include "gmock/gmock.h"
#include "graph/validate.h"
#include "gtest/gtest.h"
#include "interp/interpreter.h"
#include "tests/scoped_temp_dir.h"
#include "tests/test_util.h"
#include "util/file_io.h"
#include "util/graph_io.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;
using testing::Floats;
using testing::Ints;
using testing::RunGraph;
using testing::Trace1;
using testing::TraceWorld;

constexpr char kFile[] = "tests/diagnostic_test.cc";

// The diagnostic `status` carries; fails the test when there is none, and
// checks the status says exactly what the diagnostic renders.
Diagnostic MustCarry(const absl::Status& status) {
  std::optional<Diagnostic> d = DiagnosticOf(status);
  EXPECT_TRUE(d.has_value()) << "no diagnostic in " << status;
  if (!d.has_value()) return Diagnostic();
  EXPECT_EQ(status.message(), Render(*d));
  return *d;
}

// ---------------------------------------------------------------------------
// Rendering and the payload

TEST(DiagnosticTest, RendersTheFormOfEachProducer) {
  Diagnostic device = MakeDiagnostic(DiagnosticKind::kDevice, "it failed");
  device.rank = 1;
  device.core = 0;
  device.instruction_id = 12;
  device.opcode = "nc_matmul";
  device.file = "kernels/x.cc";
  device.line = 40;
  device.scope = "layer/block";
  EXPECT_EQ(Render(device),
            "rank 1 core 0 instruction #12 nc_matmul at kernels/x.cc:40 "
            "(layer/block): it failed");
  EXPECT_EQ(RenderInstruction(device),
            "instruction #12 nc_matmul at kernels/x.cc:40 (layer/block)");

  // Unset fields leave their part out; an unknown opcode says so.
  Diagnostic bare = MakeDiagnostic(DiagnosticKind::kValidation, "bad");
  bare.instruction_id = 3;
  EXPECT_EQ(Render(bare), "instruction #3 (unknown opcode): bad");

  Diagnostic trace = MakeDiagnostic(DiagnosticKind::kTrace, "no");
  trace.file = "kernels/y.cc";
  trace.line = 7;
  EXPECT_EQ(Render(trace), "kernels/y.cc:7: no");
  trace.scope = "outer";
  trace.core = 1;
  EXPECT_EQ(Render(trace), "kernels/y.cc:7 (outer) [core 1]: no");

  Diagnostic tensor = MakeDiagnostic(DiagnosticKind::kValidation, "odd");
  tensor.tensor_id = 3;
  tensor.tensor = "x";
  EXPECT_EQ(Render(tensor), "tensor 3 ('x'): odd");
  // Only validation names a tensor up front; elsewhere it is a field.
  tensor.kind = DiagnosticKind::kInput;
  EXPECT_EQ(Render(tensor), "odd");

  Diagnostic deadlock = MakeDiagnostic(DiagnosticKind::kDeadlock, "stuck:");
  Diagnostic waits = device;
  waits.kind = DiagnosticKind::kDeadlock;
  waits.message = "waits";
  Diagnostic finished =
      MakeDiagnostic(DiagnosticKind::kDeadlock, "finished its stream");
  finished.rank = 0;
  finished.core = 1;
  deadlock.notes = {waits, finished,
                    MakeDiagnostic(DiagnosticKind::kDeadlock, "…")};
  EXPECT_EQ(Render(deadlock),
            "stuck:\n"
            "  rank 1 core 0 waits at instruction #12 nc_matmul at "
            "kernels/x.cc:40 (layer/block)\n"
            "  rank 0 core 1 finished its stream\n"
            "  …");
}

TEST(DiagnosticTest, TravelsInAStatusWithEveryField) {
  Diagnostic d = MakeDiagnostic(DiagnosticKind::kRace, "racy");
  d.rank = 0;  // present although zero
  d.core = 1;
  d.instruction_id = 0;
  d.opcode = "dma_copy";
  d.file = "f.cc";
  d.line = 9;
  d.scope = "s";
  d.tensor_id = 4;
  d.tensor = "buf";
  d.notes.push_back(MakeDiagnostic(DiagnosticKind::kDevice, "note"));
  const absl::Status status = DiagnosticError(absl::StatusCode::kAborted, d);
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted);
  const Diagnostic back = MustCarry(status);
  EXPECT_EQ(back.kind, DiagnosticKind::kRace);
  EXPECT_EQ(back.rank, 0);
  EXPECT_EQ(back.core, 1);
  EXPECT_EQ(back.instruction_id, 0);
  EXPECT_EQ(back.opcode, "dma_copy");
  EXPECT_EQ(back.file, "f.cc");
  EXPECT_EQ(back.line, 9);
  EXPECT_EQ(back.scope, "s");
  EXPECT_EQ(back.tensor_id, 4u);
  EXPECT_EQ(back.tensor, "buf");
  EXPECT_EQ(back.message, "racy");
  ASSERT_EQ(back.notes.size(), 1u);
  EXPECT_EQ(back.notes[0].message, "note");
  // Unset coordinates stay unset.
  const Diagnostic plain = MustCarry(DiagnosticError(
      absl::StatusCode::kInternal, MakeDiagnostic(DiagnosticKind::kLoad, "x")));
  EXPECT_EQ(plain.rank, -1);
  EXPECT_EQ(plain.core, -1);
  EXPECT_EQ(plain.instruction_id, -1);
  // A status without one has none.
  EXPECT_FALSE(DiagnosticOf(absl::InvalidArgumentError("plain")).has_value());
  EXPECT_EQ(
      DiagnosticOr(absl::InvalidArgumentError("plain"), DiagnosticKind::kInput)
          .kind,
      DiagnosticKind::kInput);
}

// A fuzzed graph's scope held a byte that is not UTF-8: protobuf refuses to
// parse such a string field back, so the error carried no diagnostic. The
// payload, and the message with it, now hold U+FFFD for each such byte.
TEST(DiagnosticTest, TravelsInAStatusWhateverBytesItsStringsHold) {
  Diagnostic d = MakeDiagnostic(DiagnosticKind::kValidation, "bad \xff");
  d.instruction_id = 0;
  d.opcode = "op\x80";
  d.file = "f\xf5.cc";
  d.line = 3;
  d.scope = "n_ti\xc3le";
  d.tensor = "\xe2\x82";
  d.notes.push_back(MakeDiagnostic(DiagnosticKind::kDevice, "note \xc0\xaf"));
  const Diagnostic back =
      MustCarry(DiagnosticError(absl::StatusCode::kInvalidArgument, d));
  const std::string fffd = "\xef\xbf\xbd";
  EXPECT_EQ(back.message, "bad " + fffd);
  EXPECT_EQ(back.opcode, "op" + fffd);
  EXPECT_EQ(back.file, "f" + fffd + ".cc");
  EXPECT_EQ(back.scope, "n_ti" + fffd + "le");
  EXPECT_EQ(back.tensor, fffd + fffd);  // a truncated sequence: two bytes
  ASSERT_EQ(back.notes.size(), 1u);
  EXPECT_EQ(back.notes[0].message, "note " + fffd + fffd);  // overlong '/'
  // Valid UTF-8 travels unchanged.
  d = MakeDiagnostic(DiagnosticKind::kValidation, "caf\xc3\xa9 \xe2\x82\xac");
  d.scope = "\xf0\x9f\x98\x80";
  const Diagnostic same =
      MustCarry(DiagnosticError(absl::StatusCode::kInvalidArgument, d));
  EXPECT_EQ(same.message, "caf\xc3\xa9 \xe2\x82\xac");
  EXPECT_EQ(same.scope, "\xf0\x9f\x98\x80");
}

// ---------------------------------------------------------------------------
// The loader

TEST(DiagnosticProducerTest, LoaderErrorsAreLoadDiagnostics) {
  const testing::ScopedTempDir temp;
  const std::string& dir = temp.path();
  const Diagnostic missing =
      MustCarry(ReadGraph(dir + "/no_such_graph.pb").status());
  EXPECT_EQ(missing.kind, DiagnosticKind::kLoad);

  const std::string corrupt = dir + "/corrupt.pb";
  ASSERT_TRUE(WriteFileAtomically(corrupt, "\xff\xff\xff").ok());
  const Diagnostic bad = MustCarry(ReadGraph(corrupt).status());
  EXPECT_EQ(bad.kind, DiagnosticKind::kLoad);
  EXPECT_EQ(bad.message, absl::StrCat("'", corrupt,
                                      "' is not a valid binary "
                                      "nkigraph.proto.Graph (truncated or "
                                      "corrupt)"));

  const std::string unversioned = dir + "/unversioned.pbtxt";
  ASSERT_TRUE(WriteFileAtomically(unversioned, "kernel_name: \"k\"\n").ok());
  const Diagnostic old = MustCarry(ReadGraph(unversioned).status());
  EXPECT_EQ(old.kind, DiagnosticKind::kLoad);
  EXPECT_EQ(old.message,
            absl::StrCat("'", unversioned,
                         "': graph has no schema_version; it was not "
                         "written by nkigraph"));
}

// ---------------------------------------------------------------------------
// The validator

TEST(DiagnosticProducerTest, ValidationProblemsNameTheInstructionOrTensor) {
  int64_t id = -1;
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor in = t.Input("in", {4}, proto::FLOAT32);
    Tensor out = t.Allocate({4}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    builder::Scope scope("copy");
    line = __LINE__ + 1;
    id = isa::dma_copy(out, in).id;
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  proto::Graph bad = *graph;
  bad.mutable_streams(0)
      ->mutable_instructions(0)
      ->mutable_operands(1)
      ->set_tensor_id(99);
  bad.mutable_tensors(0)->set_id(7);  // "in" out of its place

  const std::vector<Diagnostic> problems = graph::ValidateGraph(bad);
  ASSERT_EQ(problems.size(), 1u) << Render(problems[0]);
  // Tensor problems stop validation before instructions are judged.
  EXPECT_EQ(problems[0].kind, DiagnosticKind::kValidation);
  EXPECT_EQ(problems[0].tensor_id, 1u);
  EXPECT_EQ(problems[0].tensor, "in");
  EXPECT_EQ(problems[0].instruction_id, -1);

  bad.mutable_tensors(0)->set_id(1);
  const absl::Status status = graph::CheckGraph(bad);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  const Diagnostic invalid = MustCarry(status);
  EXPECT_EQ(invalid.kind, DiagnosticKind::kValidation);
  EXPECT_EQ(invalid.message, "invalid graph (1 problem):");
  ASSERT_EQ(invalid.notes.size(), 1u);
  const Diagnostic& problem = invalid.notes[0];
  EXPECT_EQ(problem.kind, DiagnosticKind::kValidation);
  EXPECT_EQ(problem.instruction_id, id);
  EXPECT_EQ(problem.opcode, "dma_copy");
  EXPECT_EQ(problem.file, kFile);
  EXPECT_EQ(problem.line, line);
  EXPECT_EQ(problem.scope, "copy");
  EXPECT_EQ(problem.rank, -1);
  EXPECT_EQ(problem.core, -1);
  EXPECT_THAT(problem.message, ::testing::HasSubstr("names tensor id 99"));
}

TEST(DiagnosticProducerTest, LifetimeProblemsNameTheTensor) {
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor tile = t.Allocate({4, 2}, proto::FLOAT32, Buffer::kSbuf, "tile");
    line = __LINE__ + 1;
    isa::memset(tile, 1.0f);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  proto::Graph bad = *graph;
  for (proto::Tensor& t : *bad.mutable_tensors()) {
    if (t.name() == "tile") t.set_live_begin(5);
  }
  const std::vector<Diagnostic> problems = graph::ValidateGraph(bad);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].tensor, "tile");
  EXPECT_EQ(problems[0].opcode, "memset");
  EXPECT_EQ(problems[0].line, line);
  EXPECT_THAT(problems[0].message, ::testing::HasSubstr("lifetime"));
}

// ---------------------------------------------------------------------------
// The tracer

TEST(DiagnosticProducerTest, TraceErrorsNameTheCallAndTheCore) {
  int line = 0;
  absl::StatusOr<proto::Graph> graph = TraceWorld(1, 2, [&](Tracer& t) {
    Tensor a = t.Allocate({4, 8}, proto::FLOAT32, Buffer::kSbuf, "a");
    Tensor b = t.Allocate({4, 4}, proto::FLOAT32, Buffer::kSbuf, "b");
    builder::Scope scope("outer");
    if (t.program_id() == 1) {
      line = __LINE__ + 1;
      isa::tensor_tensor(a, a, b, isa::Alu::kAdd);
    }
  });
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  const Diagnostic d = MustCarry(graph.status());
  EXPECT_EQ(d.kind, DiagnosticKind::kTrace);
  EXPECT_EQ(d.file, kFile);
  EXPECT_EQ(d.line, line);
  EXPECT_EQ(d.scope, "outer");
  EXPECT_EQ(d.core, 1);
  EXPECT_EQ(d.rank, -1);
  EXPECT_EQ(d.opcode, "tensor_tensor");
  EXPECT_EQ(d.instruction_id, -1);  // dropped, never recorded
  EXPECT_EQ(graph.status().message(),
            absl::StrCat(kFile, ":", line,
                         " (outer) [core 1]: tensor_tensor: 'dst' is [4, 8] "
                         "but 'data2' is [4, 4]"));
}

TEST(DiagnosticProducerTest, AllocationErrorsNameTheTensor) {
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    line = __LINE__ + 1;
    t.Allocate({129, 4}, proto::FLOAT32, Buffer::kSbuf, "big");
  });
  ASSERT_FALSE(graph.ok());
  const Diagnostic d = MustCarry(graph.status());
  EXPECT_EQ(d.kind, DiagnosticKind::kTrace);
  EXPECT_EQ(d.tensor, "big");
  EXPECT_EQ(d.line, line);
  EXPECT_EQ(d.core, -1);  // a one-core trace
}

// ---------------------------------------------------------------------------
// The interpreter

TEST(DiagnosticProducerTest, DeviceErrorsNameRankCoreInstructionAndTensor) {
  int64_t id = -1;
  int line = 0;
  // Only core 1 gathers, and only rank 1's index is out of bounds, so the
  // error can only come from rank 1 core 1.
  absl::StatusOr<proto::Graph> graph = TraceWorld(2, 2, [&](Tracer& t) {
    Tensor table = t.Input("table", {4, 3}, proto::FLOAT32);
    Tensor e = t.Input("e", {1}, proto::INT32);
    Tensor row = t.Allocate({1, 3}, proto::FLOAT32, Buffer::kSharedHbm, "r");
    if (t.program_id() == 1) {
      builder::Scope scope("gather");
      line = __LINE__ + 1;
      id = isa::dma_copy(row, table.Slice(0, 0, 1).WithScalarOffset(e, 0)).id;
    }
    t.Output("row", row);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::map<std::string, HostArray>> out =
      RunGraph(*graph, {Floats("table", {2, 4, 3}, std::vector<float>(24, 1)),
                        Ints("e", {2, 1}, {3, 9})});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), interp::kDeviceErrorCode);
  const Diagnostic d = MustCarry(out.status());
  EXPECT_EQ(d.kind, DiagnosticKind::kDevice);
  EXPECT_EQ(d.rank, 1);
  EXPECT_EQ(d.core, 1);
  EXPECT_EQ(d.instruction_id, id);
  EXPECT_EQ(d.opcode, "dma_copy");
  EXPECT_EQ(d.file, kFile);
  EXPECT_EQ(d.line, line);
  EXPECT_EQ(d.scope, "gather");
  EXPECT_EQ(d.tensor, "table");
  EXPECT_EQ(d.message,
            "out-of-bounds dynamic offset: index 9 along dim 0 of 'table' "
            "(size 4)");
}

TEST(DiagnosticProducerTest, ReadsOfNeverWrittenMemoryNameTheTensor) {
  int64_t id = -1;
  int line = 0;
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor out = t.Allocate({2, 3}, proto::FLOAT32, Buffer::kSharedHbm, "o");
    Tensor s = builder::ndarray({2, 3}, proto::FLOAT32, Buffer::kSbuf, "s");
    line = __LINE__ + 1;
    id = isa::dma_copy(out, s).id;
    t.Output("out", out);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::map<std::string, HostArray>> out = RunGraph(*graph, {});
  ASSERT_FALSE(out.ok());
  const Diagnostic d = MustCarry(out.status());
  EXPECT_EQ(d.kind, DiagnosticKind::kDevice);
  EXPECT_EQ(d.instruction_id, id);
  EXPECT_EQ(d.line, line);
  EXPECT_EQ(d.tensor, "s");
  // One rank, one core: neither is named.
  EXPECT_EQ(d.rank, -1);
  EXPECT_EQ(d.core, -1);
}

TEST(DiagnosticProducerTest, HostInputsThatDoNotFitNameTheInput) {
  absl::StatusOr<proto::Graph> graph = Trace1([&](Tracer& t) {
    Tensor x = t.Input("x", {2}, proto::FLOAT32);
    t.Output("out", x);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
      interp::Interpreter::Create(*graph);
  ASSERT_TRUE(interp.ok()) << interp.status();
  const absl::Status wrong = (*interp)->SetInput(Floats("x", {3}, {1, 2, 3}));
  const Diagnostic d = MustCarry(wrong);
  EXPECT_EQ(d.kind, DiagnosticKind::kInput);
  EXPECT_EQ(d.tensor, "x");
  const Diagnostic missing = MustCarry((*interp)->Run());
  EXPECT_EQ(missing.kind, DiagnosticKind::kInput);
  EXPECT_EQ(missing.tensor, "x");
}

}  // namespace
}  // namespace nkigraph
