#ifndef NKIGRAPH_TESTS_TEST_UTIL_H_
#define NKIGRAPH_TESTS_TEST_UTIL_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "builder/isa.h"
#include "builder/tracer.h"
#include "gtest/gtest.h"
#include "interp/interpreter.h"
#include "kernels/registry.h"
#include "ops/instr_facts.h"
#include "proto/nkigraph.pb.h"
#include "util/host_array.h"

namespace nkigraph::testing {

// Traces `body` in a world of `num_ranks` x `num_cores`.
inline absl::StatusOr<proto::Graph> TraceWorld(
    int num_ranks, int num_cores,
    const std::function<void(builder::Tracer&)>& body,
    proto::Target target = proto::TARGET_TRN2) {
  builder::WorldConfig world;
  world.num_ranks = num_ranks;
  world.num_cores = num_cores;
  world.target = target;
  builder::Tracer tracer(builder::TraceConfig{"test", {}, world});
  return tracer.Trace(body);
}

inline absl::StatusOr<proto::Graph> Trace1(
    const std::function<void(builder::Tracer&)>& body) {
  return TraceWorld(1, 1, body);
}

// Every core of each of `num_ranks` ranks copies every other element of a
// 65536-element input into one shared-HBM output, starting at its core
// index: 32768 one-element intervals of race-detection state per core.
inline absl::StatusOr<proto::Graph> TraceInterleavedSharedCopy(int num_ranks) {
  return TraceWorld(num_ranks, 2, [](builder::Tracer& t) {
    const int c = t.program_id();
    builder::Tensor x = t.Input("x", {1, 65536}, proto::FLOAT32);
    builder::Tensor out = t.Allocate({1, 65536}, proto::FLOAT32,
                                     builder::Buffer::kSharedHbm, "o");
    builder::isa::dma_copy(out.Slice(1, c, 32768, 2), x.Slice(1, c, 32768, 2));
    t.Output("out", out);
  });
}

inline HostArray Floats(const std::string& name, std::vector<int64_t> shape,
                        std::vector<float> values) {
  HostArray a;
  a.name = name;
  a.dtype = proto::FLOAT32;
  a.shape = std::move(shape);
  a.f32 = std::move(values);
  return a;
}

inline HostArray Ints(const std::string& name, std::vector<int64_t> shape,
                      std::vector<int32_t> values) {
  HostArray a;
  a.name = name;
  a.dtype = proto::INT32;
  a.shape = std::move(shape);
  a.i32 = std::move(values);
  return a;
}

// The raw bits of 16-bit elements, as a uint16 .npy holds them.
inline HostArray RawBits(const std::string& name, std::vector<int64_t> shape,
                         std::vector<uint16_t> bits) {
  HostArray a;
  a.name = name;
  a.dtype = proto::UINT16;
  a.shape = std::move(shape);
  a.u16 = std::move(bits);
  return a;
}

// Operand `role` of `instr`, by the role's name in the op's definition
// (tests name operands, not positions). An unknown role fails the test and
// gives an empty operand.
// Traces the registered kernel `name` with `settings` and, where the kernel
// makes its own inputs (index inputs valid for it), puts them in `inputs`
// (seed 1). A failure is a test failure and gives an empty graph.
inline proto::Graph TraceKernel(
    const std::string& name,
    const std::vector<std::pair<std::string, std::string>>& settings,
    std::vector<HostArray>* inputs) {
  const kernels::KernelRegistry& registry = kernels::KernelRegistry::Global();
  const kernels::KernelDef* def = registry.Find(name);
  EXPECT_NE(def, nullptr) << name;
  absl::StatusOr<proto::Graph> graph = registry.Trace(name, settings);
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (def != nullptr && def->make_inputs) {
    absl::StatusOr<kernels::ParamValues> values =
        registry.ParseParams(*def, settings);
    EXPECT_TRUE(values.ok());
    absl::StatusOr<std::vector<HostArray>> made = def->make_inputs(*values, 1);
    EXPECT_TRUE(made.ok());
    *inputs = *std::move(made);
  }
  return graph.ok() ? *std::move(graph) : proto::Graph();
}

// Sets `inputs` on the interpreter, then draws the rest at random from
// `seed`: what a run does before Run.
inline absl::Status GiveInputs(interp::Interpreter& interp,
                               const std::vector<HostArray>& inputs,
                               uint64_t seed = 1) {
  for (const HostArray& input : inputs) {
    if (absl::Status s = interp.SetInput(input); !s.ok()) return s;
  }
  return interp.FillRandomInputs(seed);
}

// The bytes of a host array, whatever its dtype: what runs compared bit for
// bit are compared by.
inline std::string HostArrayBytes(const HostArray& a) {
  if (a.dtype == proto::INT32) {
    return std::string(reinterpret_cast<const char*>(a.i32.data()),
                       a.i32.size() * sizeof(int32_t));
  }
  if (a.dtype == proto::UINT16) {
    return std::string(reinterpret_cast<const char*>(a.u16.data()),
                       a.u16.size() * sizeof(uint16_t));
  }
  return std::string(reinterpret_cast<const char*>(a.f32.data()),
                     a.f32.size() * sizeof(float));
}

inline const proto::AccessPattern& OperandOf(const proto::Instruction& instr,
                                             absl::string_view role) {
  static const proto::AccessPattern* const kAbsent = new proto::AccessPattern;
  const absl::StatusOr<int> slot = ops::RoleSlot(instr.opcode(), role);
  EXPECT_TRUE(slot.ok()) << slot.status();
  if (!slot.ok() || *slot >= instr.operands_size()) return *kAbsent;
  return instr.operands(*slot);
}

// The instructions of `opcode` in `graph`, stream by stream; only those of
// the streams of core `core` when it is not negative.
inline std::vector<const proto::Instruction*> InstructionsOf(
    const proto::Graph& graph, proto::Opcode opcode, int core = -1) {
  std::vector<const proto::Instruction*> found;
  for (const proto::Stream& stream : graph.streams()) {
    if (core >= 0 && static_cast<int>(stream.core()) != core) continue;
    for (const proto::Instruction& instr : stream.instructions()) {
      if (instr.opcode() == opcode) found.push_back(&instr);
    }
  }
  return found;
}

// Tensor `id` of `graph` (ids count from 1); an empty tensor, and a test
// failure, for an id the graph does not have.
inline const proto::Tensor& TensorOf(const proto::Graph& graph, uint32_t id) {
  EXPECT_TRUE(id >= 1 && id <= static_cast<uint32_t>(graph.tensors_size()))
      << "no tensor " << id;
  if (id < 1 || id > static_cast<uint32_t>(graph.tensors_size())) {
    return proto::Tensor::default_instance();
  }
  return graph.tensors(static_cast<int>(id) - 1);
}

// The tensor an operand refers to.
inline const proto::Tensor& TensorOf(const proto::Graph& graph,
                                     const proto::AccessPattern& operand) {
  return TensorOf(graph, operand.tensor_id());
}

// The tensor operand `role` of `instr` refers to, in `graph`.
inline const proto::Tensor& OperandTensor(const proto::Graph& graph,
                                          const proto::Instruction& instr,
                                          absl::string_view role) {
  SCOPED_TRACE(absl::StrCat("operand '", role, "'"));
  return TensorOf(graph, OperandOf(instr, role));
}

// The same, to change it (tests that corrupt a graph).
inline proto::AccessPattern* MutableOperandOf(proto::Instruction* instr,
                                              absl::string_view role) {
  static proto::AccessPattern* const kAbsent = new proto::AccessPattern;
  const absl::StatusOr<int> slot = ops::RoleSlot(instr->opcode(), role);
  EXPECT_TRUE(slot.ok()) << slot.status();
  if (!slot.ok() || *slot >= instr->operands_size()) return kAbsent;
  return instr->mutable_operands(*slot);
}

// Attribute `name` of `instr` as the op reads it: the schema's default when
// absent. An attribute the op does not declare (or of another type) fails
// the test and reads as 0 or "".
inline int64_t IntAttr(const proto::Instruction& instr,
                       absl::string_view name) {
  const absl::StatusOr<int64_t> value = ops::IntAttr(instr, name);
  EXPECT_TRUE(value.ok()) << value.status();
  return value.value_or(0);
}
inline double FloatAttr(const proto::Instruction& instr,
                        absl::string_view name) {
  const absl::StatusOr<double> value = ops::FloatAttr(instr, name);
  EXPECT_TRUE(value.ok()) << value.status();
  return value.value_or(0.0);
}
inline std::string StrAttr(const proto::Instruction& instr,
                           absl::string_view name) {
  const absl::StatusOr<absl::string_view> value = ops::StrAttr(instr, name);
  EXPECT_TRUE(value.ok()) << value.status();
  return std::string(value.value_or(""));
}

// Loads kernel input `name` ([shape] in HBM, `dtype`) into a fresh SBUF
// tile of `tile_dtype` (the input's dtype unless given; a DMA casts).
inline builder::Tensor LoadTile(
    builder::Tracer& t, const std::string& name, const builder::Shape& shape,
    proto::DType dtype = proto::FLOAT32,
    proto::DType tile_dtype = proto::DTYPE_UNSPECIFIED) {
  builder::Tensor in = t.Input(name, shape, dtype);
  builder::Tensor tile = builder::ndarray(
      shape, tile_dtype == proto::DTYPE_UNSPECIFIED ? dtype : tile_dtype,
      builder::Buffer::kSbuf, name + "_sb");
  builder::isa::dma_copy(tile, in);
  return tile;
}

// Stores an on-chip tile as kernel output `name` of `dtype` (a DMA casts).
inline void StoreTile(builder::Tracer& t, const std::string& name,
                      const builder::Tensor& tile,
                      proto::DType dtype = proto::FLOAT32) {
  builder::Tensor out =
      t.Allocate(tile.shape(), dtype, builder::Buffer::kSharedHbm, name);
  builder::isa::dma_copy(out, tile);
  t.Output(name, out);
}

// Runs `graph` with `inputs`; returns every output by name.
inline absl::StatusOr<std::map<std::string, HostArray>> RunGraph(
    const proto::Graph& graph, const std::vector<HostArray>& inputs) {
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
      interp::Interpreter::Create(graph);
  if (!interp.ok()) return interp.status();
  for (const HostArray& input : inputs) {
    if (absl::Status s = (*interp)->SetInput(input); !s.ok()) return s;
  }
  if (absl::Status s = (*interp)->Run(); !s.ok()) return s;
  std::map<std::string, HostArray> outputs;
  for (const std::string& name : (*interp)->OutputNames()) {
    absl::StatusOr<HostArray> out = (*interp)->GetOutput(name);
    if (!out.ok()) return out.status();
    outputs[name] = *std::move(out);
  }
  return outputs;
}

// Traces `body` on one core and runs it with `inputs`: every output by
// name.
inline absl::StatusOr<std::map<std::string, HostArray>> TraceAndRun(
    const std::function<void(builder::Tracer&)>& body,
    const std::vector<HostArray>& inputs) {
  absl::StatusOr<proto::Graph> graph = Trace1(body);
  if (!graph.ok()) return graph.status();
  return RunGraph(*graph, inputs);
}

// The message a one-core trace of `body` fails with; the test fails if the
// trace succeeds.
inline std::string TraceError(
    const std::function<void(builder::Tracer&)>& body) {
  absl::StatusOr<proto::Graph> graph = Trace1(body);
  EXPECT_FALSE(graph.ok());
  return std::string(graph.status().message());
}

}  // namespace nkigraph::testing

#endif  // NKIGRAPH_TESTS_TEST_UTIL_H_
