#include "interp/interpreter.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "interp/device_memory.h"
#include "interp/program_state.h"
#include "interp/race_detector.h"
#include "interp/race_scope.h"
#include "interp/validate.h"
#include "ops/access_pattern.h"
#include "ops/op_def.h"
#include "ops/op_util.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::interp {

struct Interpreter::Impl {
  Impl(DeviceMemory m, int ranks, int cores, int64_t race_budget,
       std::vector<RaceScope> scopes)
      : memory(std::move(m)),
        race(ranks, cores, race_budget),
        race_scopes(std::move(scopes)) {}
  DeviceMemory memory;
  RaceDetector race;
  std::vector<RaceScope> race_scopes;                   // by tensor index
  std::vector<std::unique_ptr<ProgramState>> programs;  // [rank][core]
  std::vector<bool> input_set;                          // by tensor index
  int num_ranks = 1;
  int num_cores = 1;

  ProgramState& program(int rank, int core) {
    return *programs[rank * num_cores + core];
  }
};

namespace {

bool IsInput(const proto::Tensor& t) {
  return t.role() == proto::ROLE_INPUT || t.role() == proto::ROLE_INPUT_OUTPUT;
}

bool IsOutput(const proto::Tensor& t) {
  return t.role() == proto::ROLE_OUTPUT || t.role() == proto::ROLE_INPUT_OUTPUT;
}

const std::string& OutputName(const proto::Tensor& t) {
  return t.role() == proto::ROLE_INPUT_OUTPUT ? t.output_name() : t.name();
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

}  // namespace

Interpreter::Interpreter() = default;
Interpreter::~Interpreter() = default;

absl::StatusOr<std::unique_ptr<Interpreter>> Interpreter::Create(
    proto::Graph graph, RunOptions options) {
  NKI_RETURN_IF_ERROR(CheckGraph(graph));
  std::unique_ptr<Interpreter> interp(new Interpreter());
  interp->graph_ = std::move(graph);
  interp->options_ = std::move(options);
  const proto::Graph& g = interp->graph_;
  const int ranks = static_cast<int>(g.world().num_ranks());
  const int cores = static_cast<int>(g.world().num_cores());
  NKI_ASSIGN_OR_RETURN(const int64_t memory_bytes,
                       DeviceMemory::BytesNeeded(g));
  if (memory_bytes > interp->options_.memory_limit_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the graph needs ", memory_bytes,
        " bytes of device memory and its shadow state, over the limit of ",
        interp->options_.memory_limit_bytes));
  }
  // Executing an instruction buffers each operand: read into, or written
  // from, at least one byte per byte of it. Refuse an instruction whose
  // buffers alone would break the limit (e.g. a stride-0 pattern walking a
  // small tensor billions of times) instead of allocating them.
  const int64_t available = interp->options_.memory_limit_bytes - memory_bytes;
  for (const proto::Stream& stream : g.streams()) {
    for (const proto::Instruction& instr : stream.instructions()) {
      int64_t bytes = 0;
      for (const proto::AccessPattern& ap : instr.operands()) {
        if (ap.tensor_id() == 0) continue;
        const proto::Tensor& t =
            g.tensors(static_cast<int>(ap.tensor_id()) - 1);
        bytes += ops::ApElements(ap) * DTypeSize(t.dtype());
      }
      if (bytes > available) {
        return absl::ResourceExhaustedError(absl::StrCat(
            DescribeInstruction(g, instr), ": its operands need ", bytes,
            " bytes of buffers; with the device memory that is over the "
            "limit of ",
            interp->options_.memory_limit_bytes));
      }
    }
  }
  NKI_ASSIGN_OR_RETURN(
      DeviceMemory memory,
      DeviceMemory::Create(g, interp->options_.memory_limit_bytes));
  // Race-detection state grows with the distinct access runs seen on
  // shared tensors two cores touch, so it is bounded by what the limit
  // leaves once device memory is allocated, checked as it grows.
  interp->impl_ = std::make_unique<Impl>(
      std::move(memory), ranks, cores,
      interp->options_.memory_limit_bytes - memory_bytes, ComputeRaceScopes(g));
  Impl& impl = *interp->impl_;
  impl.num_ranks = ranks;
  impl.num_cores = cores;
  for (int r = 0; r < ranks; ++r) {
    for (int c = 0; c < cores; ++c) {
      impl.programs.push_back(std::make_unique<ProgramState>(
          g, impl.memory, impl.race, impl.race_scopes, r, c));
    }
  }
  impl.input_set.assign(g.tensors_size(), false);
  return interp;
}

std::vector<std::string> Interpreter::InputNames() const {
  std::vector<std::string> names;
  for (const proto::Tensor& t : graph_.tensors()) {
    if (IsInput(t)) names.push_back(t.name());
  }
  return names;
}

std::vector<std::string> Interpreter::OutputNames() const {
  std::vector<std::string> names;
  for (const proto::Tensor& t : graph_.tensors()) {
    if (IsOutput(t)) names.push_back(OutputName(t));
  }
  return names;
}

std::vector<int64_t> Interpreter::HostShape(const proto::Tensor& t) const {
  std::vector<int64_t> shape;
  if (t.per_rank() && impl_->num_ranks > 1) shape.push_back(impl_->num_ranks);
  shape.insert(shape.end(), t.shape().begin(), t.shape().end());
  return shape;
}

const proto::Tensor* Interpreter::FindInput(const std::string& name) const {
  for (const proto::Tensor& t : graph_.tensors()) {
    if (IsInput(t) && t.name() == name) return &t;
  }
  return nullptr;
}

const proto::Tensor* Interpreter::FindOutput(const std::string& name) const {
  for (const proto::Tensor& t : graph_.tensors()) {
    if (IsOutput(t) && OutputName(t) == name) return &t;
  }
  return nullptr;
}

absl::Status Interpreter::SetInput(const HostArray& array) {
  const proto::Tensor* t = FindInput(array.name);
  if (t == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", array.name, "' is not an input of kernel '", graph_.kernel_name(),
        "' (inputs: ", absl::StrJoin(InputNames(), ", "), ")"));
  }
  const std::vector<int64_t> expected = HostShape(*t);
  if (array.shape != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input '", array.name, "' has shape ", ShapeString(array.shape),
        "; the graph expects ", ShapeString(expected)));
  }
  const bool integer = !IsFloatDType(t->dtype());
  if (integer != (array.dtype == proto::INT32)) {
    return absl::InvalidArgumentError(
        absl::StrCat("input '", array.name, "' is ", DTypeName(array.dtype),
                     "; the graph ", "expects ", integer ? "int32" : "float32",
                     " (declared ", DTypeName(t->dtype()), ")"));
  }
  const size_t values = integer ? array.i32.size() : array.f32.size();
  if (values != static_cast<size_t>(array.num_elements())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input '", array.name, "' has shape ", ShapeString(array.shape),
        " but holds ", values, " values"));
  }
  const int64_t per_rank = [&] {
    int64_t n = 1;
    for (int64_t d : t->shape()) n *= d;
    return n;
  }();
  const int64_t esize = DTypeSize(t->dtype());
  const float fp8_max = ops::ProfileFor(graph_.world().target()).fp8_e4m3_max;
  const bool stacked = t->per_rank() && impl_->num_ranks > 1;
  for (int r = 0; r < impl_->num_ranks; ++r) {
    Region& region = impl_->memory.RegionFor(*t, r, 0);
    uint8_t* dst = &region.data[t->address()];
    const int64_t first = stacked ? r * per_rank : 0;
    for (int64_t e = 0; e < per_rank; ++e) {
      if (integer) {
        const int32_t v = array.i32[first + e];
        if (t->dtype() == proto::INT32 || t->dtype() == proto::UINT32) {
          std::memcpy(dst + e * esize, &v, 4);
        } else {
          StoreFromFloat(t->dtype(), static_cast<float>(v), dst + e * esize,
                         fp8_max);
        }
      } else {
        StoreFromFloat(t->dtype(), array.f32[first + e], dst + e * esize,
                       fp8_max);
      }
    }
    std::memset(&region.shadow[t->address()], kInitialized, per_rank * esize);
  }
  impl_->input_set[t->id() - 1] = true;
  return absl::OkStatus();
}

void Interpreter::FillRandomInputs(uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (const proto::Tensor& t : graph_.tensors()) {
    if (!IsInput(t) || impl_->input_set[t.id() - 1]) continue;
    HostArray array;
    array.name = t.name();
    array.shape = HostShape(t);
    const int64_t n = array.num_elements();
    if (IsFloatDType(t.dtype())) {
      array.dtype = proto::FLOAT32;
      array.f32.resize(n);
      // 24 random bits per value: portable, unlike std distributions.
      for (float& v : array.f32) {
        v = static_cast<float>(rng() >> 40) * 0x1p-23f - 1.0f;
      }
    } else {
      array.dtype = proto::INT32;
      array.i32.resize(n);
      for (int32_t& v : array.i32) v = static_cast<int32_t>(rng() >> 61);
    }
    (void)SetInput(array);  // shape and dtype are right by construction
  }
}

std::vector<std::string> Interpreter::MissingInputs() const {
  std::vector<std::string> missing;
  for (const proto::Tensor& t : graph_.tensors()) {
    if (IsInput(t) && !impl_->input_set[t.id() - 1])
      missing.push_back(t.name());
  }
  return missing;
}

absl::StatusOr<HostArray> Interpreter::ReadTensor(uint32_t tensor_id, int rank,
                                                  int core) const {
  if (tensor_id < 1 ||
      tensor_id > static_cast<uint32_t>(graph_.tensors_size()) || rank < 0 ||
      rank >= impl_->num_ranks || core < 0 || core >= impl_->num_cores) {
    return absl::InvalidArgumentError("no such tensor or program");
  }
  const proto::Tensor& t = graph_.tensors(static_cast<int>(tensor_id) - 1);
  Region& region = impl_->memory.RegionFor(t, rank, core);
  HostArray array;
  array.name = t.name();
  array.shape.assign(t.shape().begin(), t.shape().end());
  const int64_t n = array.num_elements();
  const int64_t esize = DTypeSize(t.dtype());
  const bool floating = IsFloatDType(t.dtype());
  array.dtype = floating ? proto::FLOAT32 : proto::INT32;
  if (floating) {
    array.f32.resize(n);
  } else {
    array.i32.resize(n);
  }
  for (int64_t e = 0; e < n; ++e) {
    const int64_t byte = DeviceMemory::ByteOffset(t, e, region.partition_bytes);
    bool initialized = true;
    for (int64_t b = 0; b < esize; ++b) {
      initialized &= (region.shadow[byte + b] & kInitialized) != 0;
    }
    if (floating) {
      array.f32[e] = initialized ? LoadAsFloat(t.dtype(), &region.data[byte])
                                 : std::nanf("");
    } else if (initialized) {
      int64_t v = 0;
      if (t.dtype() == proto::INT32 || t.dtype() == proto::UINT32) {
        int32_t raw;
        std::memcpy(&raw, &region.data[byte], 4);
        v = raw;
      } else {
        v = static_cast<int64_t>(LoadAsFloat(t.dtype(), &region.data[byte]));
      }
      array.i32[e] = static_cast<int32_t>(v);
    }
  }
  return array;
}

absl::StatusOr<HostArray> Interpreter::GetOutput(
    const std::string& name) const {
  const proto::Tensor* t = FindOutput(name);
  if (t == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", name, "' is not an output (outputs: ",
                     absl::StrJoin(OutputNames(), ", "), ")"));
  }
  const bool stacked = t->per_rank() && impl_->num_ranks > 1;
  HostArray result;
  for (int r = 0; r < (stacked ? impl_->num_ranks : 1); ++r) {
    NKI_ASSIGN_OR_RETURN(HostArray part, ReadTensor(t->id(), r, 0));
    if (r == 0) {
      result = std::move(part);
      // One allocation for every rank's part: stacked outputs of wide
      // graphs are large enough that growing by doubling would briefly
      // hold half as much again.
      if (stacked) {
        result.f32.reserve(result.f32.size() * impl_->num_ranks);
        result.i32.reserve(result.i32.size() * impl_->num_ranks);
      }
    } else {
      result.f32.insert(result.f32.end(), part.f32.begin(), part.f32.end());
      result.i32.insert(result.i32.end(), part.i32.begin(), part.i32.end());
    }
  }
  result.name = name;
  result.shape = HostShape(*t);
  return result;
}

namespace {

// Wraps an error from executing an instruction with where it happened.
absl::Status DeviceError(const proto::Graph& graph, const ProgramState& p,
                         const proto::Instruction& instr,
                         const absl::Status& status) {
  std::string who;
  if (graph.world().num_ranks() > 1)
    absl::StrAppend(&who, "rank ", p.rank(), " ");
  if (graph.world().num_cores() > 1)
    absl::StrAppend(&who, "core ", p.core(), " ");
  return absl::Status(kDeviceErrorCode,
                      absl::StrCat(who, DescribeInstruction(graph, instr), ": ",
                                   status.message()));
}

}  // namespace

absl::Status Interpreter::Run() {
  if (std::vector<std::string> missing = MissingInputs(); !missing.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input", missing.size() > 1 ? "s " : " ",
                     absl::StrJoin(missing, ", "), " not given"));
  }
  Impl& impl = *impl_;
  const proto::Graph& g = graph_;

  auto notify_writes = [&](ProgramState& p, const proto::Instruction& instr) {
    if (!options_.on_write) return;
    const ops::InstrView& view = p.view();
    const std::vector<ops::OperandRole>& roles = view.def().roles;
    absl::flat_hash_set<uint32_t> seen;
    for (int i = 0; i < view.num_operands(); ++i) {
      const ops::OperandRole& role =
          roles[std::min<size_t>(i, roles.size() - 1)];
      const ops::OperandInfo& op = view.operand(i);
      if (!op.present() || role.access == ops::Access::kRead) continue;
      if (!seen.insert(op.tensor->id()).second) continue;
      options_.on_write(
          RunOptions::WriteEvent{p.rank(), p.core(), &instr, op.tensor});
    }
  };

  // Runs a program until it finishes or reaches a synchronising
  // instruction.
  auto run_until_sync = [&](ProgramState& p, bool* progressed) -> absl::Status {
    while (!p.done()) {
      const proto::Instruction& instr = p.current();
      const ops::OpDef* def = ops::FindOp(instr.opcode());
      if (def->sync != ops::SyncKind::kNone) return absl::OkStatus();
      NKI_RETURN_IF_ERROR(p.Bind(instr));
      if (absl::Status s = def->execute(p); !s.ok()) {
        return DeviceError(g, p, instr, s);
      }
      notify_writes(p, instr);
      p.Advance();
      ++instructions_executed_;
      *progressed = true;
    }
    return absl::OkStatus();
  };

  auto waiting_at = [&](ProgramState& p, ops::SyncKind kind) {
    return !p.done() && ops::FindOp(p.current().opcode())->sync == kind;
  };

  // The programs a waiting program synchronises with, in the order the op
  // expects them; empty until all of them have arrived.
  auto match = [&](ProgramState& p) -> std::vector<ProgramState*> {
    const proto::Instruction& instr = p.current();
    const ops::OpDef* def = ops::FindOp(instr.opcode());
    std::vector<ProgramState*> group;
    switch (def->sync) {
      case ops::SyncKind::kCoreBarrier:
        for (int c = 0; c < impl.num_cores; ++c) {
          ProgramState& q = impl.program(p.rank(), c);
          if (!waiting_at(q, ops::SyncKind::kCoreBarrier)) return {};
          group.push_back(&q);
        }
        return group;
      case ops::SyncKind::kSendRecv: {
        auto attr = [](const proto::Instruction& in, absl::string_view name) {
          for (const proto::Attr& a : in.attrs()) {
            if (a.name() == name) return a.i();
          }
          return int64_t{0};
        };
        const int64_t peer = attr(instr, "send_to");
        if (peer != attr(instr, "recv_from") || peer < 0 ||
            peer >= impl.num_cores) {
          return {};
        }
        if (peer == p.core()) return {&p};
        ProgramState& q = impl.program(p.rank(), static_cast<int>(peer));
        if (!waiting_at(q, ops::SyncKind::kSendRecv)) return {};
        const proto::Instruction& other = q.current();
        if (attr(other, "send_to") != p.core() ||
            attr(other, "recv_from") != p.core() ||
            attr(other, "pipe_id") != attr(instr, "pipe_id")) {
          return {};
        }
        return p.core() < q.core() ? std::vector<ProgramState*>{&p, &q}
                                   : std::vector<ProgramState*>{&q, &p};
      }
      case ops::SyncKind::kCollective: {
        absl::StatusOr<ops::GroupPosition> position =
            ops::GroupOf(g.world(), p.rank());
        if (!position.ok()) return {};
        for (int r : position->ranks) {
          ProgramState& q = impl.program(r, p.core());
          if (q.done() || q.current().id() != instr.id()) return {};
          group.push_back(&q);
        }
        return group;
      }
      case ops::SyncKind::kNone:
        break;
    }
    return {};
  };

  std::vector<ops::ExecContext*> contexts;
  while (true) {
    bool progressed = false;
    for (auto& program : impl.programs) {
      NKI_RETURN_IF_ERROR(run_until_sync(*program, &progressed));
    }
    for (auto& program : impl.programs) {
      ProgramState& p = *program;
      if (p.done()) continue;
      std::vector<ProgramState*> group = match(p);
      if (group.empty()) continue;
      const proto::Instruction& instr = p.current();
      const ops::OpDef* def = ops::FindOp(instr.opcode());
      contexts.clear();
      for (ProgramState* q : group) {
        NKI_RETURN_IF_ERROR(q->Bind(q->current()));
        contexts.push_back(q);
      }
      if (absl::Status s = def->execute_group(contexts); !s.ok()) {
        return DeviceError(g, p, instr, s);
      }
      std::vector<int> cores;
      for (ProgramState* q : group) {
        if (q->rank() == p.rank()) cores.push_back(q->core());
      }
      if (cores.size() > 1) impl.race.Sync(p.rank(), cores);
      for (ProgramState* q : group) {
        notify_writes(*q, q->current());
        q->Advance();
        ++instructions_executed_;
      }
      progressed = true;
    }
    bool all_done = true;
    for (auto& program : impl.programs) all_done &= program->done();
    if (all_done) return absl::OkStatus();
    if (progressed) continue;

    std::vector<std::string> lines;
    for (auto& program : impl.programs) {
      const ProgramState& p = *program;
      std::string who = absl::StrCat("rank ", p.rank(), " core ", p.core());
      if (p.done()) {
        lines.push_back(absl::StrCat(who, " finished its stream"));
      } else {
        lines.push_back(absl::StrCat(who, " waits at ",
                                     DescribeInstruction(g, p.current())));
      }
      if (lines.size() >= 64) {
        lines.push_back("…");
        break;
      }
    }
    return absl::Status(
        kDeviceErrorCode,
        absl::StrCat("deadlock: no program can proceed (mismatched "
                     "synchronisation):\n  ",
                     absl::StrJoin(lines, "\n  ")));
  }
}

}  // namespace nkigraph::interp
