#ifndef NKIGRAPH_BUILDER_TRACER_H_
#define NKIGRAPH_BUILDER_TRACER_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "builder/allocator.h"
#include "builder/interner.h"
#include "builder/page_prefaulter.h"
#include "builder/stream_buffer.h"
#include "builder/tensor.h"
#include "google/protobuf/arena.h"
#include "ops/instr_view.h"
#include "proto/nkigraph.pb.h"
#include "util/diagnostic.h"

namespace nkigraph::builder {

struct WorldConfig {
  proto::Target target = proto::TARGET_TRN2;
  int num_ranks = 1;
  int num_cores = 1;
  // Partition of the ranks into replica groups, each in ring order. Empty:
  // one group of all ranks.
  std::vector<std::vector<int>> replica_groups;
};

// The values a kernel input is meant to hold: whole numbers in [lo, hi],
// both included (proto::ValueRange).
struct ValueRange {
  int64_t lo;
  int64_t hi;
};

struct TraceConfig {
  std::string kernel_name;
  std::vector<std::pair<std::string, std::string>> params;
  WorldConfig world;
  // On-chip tensors are freed by Tracer::Release, in any order, instead of
  // at the end of their Scope (a front-end whose language frees a tile when
  // its last reference goes).
  bool explicit_release = false;
};

// A finished trace as the bytes of a binary graph file: exactly what
// SerializeDeterministic writes for the graph Trace returns.
struct SerializedGraph {
  std::string bytes;
  int64_t num_instructions = 0;
  int num_tensors = 0;
  int num_ranks = 0;
  int num_cores = 0;
};

// Handle to a recorded instruction (NKI's NkiInstruction).
struct Instr {
  int64_t id = -1;
  bool valid() const { return id >= 0; }
};

// Records a kernel's ISA calls into a Graph. The kernel body runs once per
// logical core with program_id() set, so per-core control flow is plain
// C++. Errors do not stop the kernel's C++ code: the first one is kept,
// later calls record nothing, and Trace returns it (as XLA's builders do).
class Tracer {
 public:
  explicit Tracer(TraceConfig config);
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;
  ~Tracer();

  // The tracer whose Trace is running on this thread, or nullptr.
  static Tracer* Current();

  // Runs `body` once per core and returns the graph, or the first error.
  // A Tracer traces once.
  absl::StatusOr<proto::Graph> Trace(absl::FunctionRef<void(Tracer&)> body);
  // The same, as a binary graph file's bytes. Instructions are serialized
  // as they are recorded (each is checked in its opcode's reused message,
  // then appended to its core's stream bytes), so a big trace never holds
  // its instructions as messages: what `nkigraph trace` writes.
  absl::StatusOr<SerializedGraph> TraceSerialized(
      absl::FunctionRef<void(Tracer&)> body);

  // --- Inside a trace ---------------------------------------------------
  // A kernel input in shared HBM. Every core gets the same tensor.
  // `values`, when given, is recorded as the input's valid values (random
  // inputs are drawn from it); lo > hi is an error.
  Tensor Input(absl::string_view name, absl::Span<const int64_t> shape,
               DType dtype, bool per_rank = true,
               std::optional<ValueRange> values = std::nullopt,
               Loc loc = Loc::current());
  // Publishes a whole HBM tensor as output `name`. An input published as
  // an output is written in place.
  void Output(const std::string& name, const Tensor& tensor,
              Loc loc = Loc::current());
  // Allocates a tensor. On-chip tensors are freed when the enclosing Scope
  // ends; shared-HBM allocations are the same tensor on every core (matched
  // by allocation order).
  // (A span and a string_view: kernels allocate in their inner loops, and a
  // braced shape or a literal name then costs no heap allocation.)
  Tensor Allocate(absl::Span<const int64_t> shape, DType dtype, Buffer buffer,
                  absl::string_view name, Loc loc = Loc::current());

  // --- For front-ends in other languages ------------------------------
  // While `file` is non-null, every call records `file`:`line` as its
  // source instead of its own C++ location (a Python kernel's line).
  // `file` must stay valid for the whole trace.
  void SetSourceOverride(const char* file, int line) {
    override_file_ = file;
    override_line_ = line;
  }
  // Tensor `id` viewed through `pattern` ([stride, count] pairs, outermost
  // first, over its flat elements) from `offset`; an operand's checks
  // bound it when an instruction uses it.
  Tensor View(uint32_t id, int64_t offset, absl::Span<const int64_t> pattern,
              Loc loc = Loc::current());
  // Frees on-chip tensor `id` (TraceConfig::explicit_release): its live
  // range ends at the current stream position and its bytes may be reused.
  void Release(uint32_t id, Loc loc = Loc::current());

  int program_id() const { return core_; }
  int num_programs() const { return config_.world.num_cores; }
  int num_ranks() const { return config_.world.num_ranks; }
  const proto::World& world() const { return graph_->world(); }
  int num_tensors() const { return graph_->tensors_size(); }
  const proto::Tensor& decl(uint32_t id) const {
    return graph_->tensors(static_cast<int>(id) - 1);
  }

  bool failed() const { return !error_.ok(); }
  const absl::Status& error() const { return error_; }
  // Keeps the first error, prefixed with the kernel source line and scope
  // (and the core, in a multi-core trace); error() carries it as a trace
  // diagnostic.
  void RecordError(absl::string_view message, Loc loc);

  // Raises the graph's schema version to at least `version` (graphs are
  // written with the lowest version that expresses them).
  void RequireSchemaVersion(proto::SchemaVersion version) {
    if (graph_->schema_version() < version) graph_->set_schema_version(version);
  }

  // --- Instruction emission (used by builder/isa) ------------------------
  // The instruction to fill in, one at a time; nullptr once the trace has
  // failed. Each opcode has one message, reused for every instruction of
  // it and overwritten in place (its attribute names and string values
  // keep their memory): an instruction is filled through AddOperand and
  // AddAttr only. The message never holds operands: AddOperand keeps them
  // in the tracer, where they are checked and written from.
  proto::Instruction* BeginInstr(proto::Opcode opcode, Loc loc);
  // Appends `tensor` (an invalid tensor: an absent optional operand). The
  // operand is read from `tensor` in place: it must live, unchanged, until
  // FinishInstr.
  void AddOperand(proto::Instruction* instr, const Tensor& tensor, Loc loc);
  // Appends an attribute named `name`, its value for the caller to set.
  // `spec` is its index in the op's attribute specs (whose name it has).
  proto::Attr* AddAttr(proto::Instruction* instr, absl::string_view name,
                       int spec);
  // Runs the op's checks, then appends the instruction to its core's
  // stream; on failure drops it and records the error.
  Instr FinishInstr(proto::Instruction* instr, Loc loc);

  // --- Scopes and jit frames --------------------------------------------
  void PushScope(absl::string_view name);
  void PopScope();
  // False (and an error recorded) when `key` is already being traced: a
  // kernel that calls itself.
  bool EnterKernel(const void* key, absl::string_view name, Loc loc);
  void ExitKernel();

 private:
  // RecordError for a diagnostic that already says what it is about (an
  // opcode, a tensor); the location is added here.
  void RecordError(Diagnostic diagnostic, Loc loc);
  // A trace diagnostic about an instruction of `opcode`.
  static Diagnostic AboutOpcode(proto::Opcode opcode, std::string message);

  proto::Tensor* NewTensor(absl::string_view name,
                           absl::Span<const int64_t> shape, DType dtype,
                           proto::MemorySpace space, Loc loc);
  bool AllocateOnChip(proto::Tensor* tensor, Loc loc);
  int64_t StreamPosition() const { return stream_sizes_[core_]; }
  // The location a call records: the override, else its own.
  const char* FileOf(const Loc& loc) const {
    return override_file_ != nullptr ? override_file_ : loc.file_name();
  }
  int LineOf(const Loc& loc) const {
    return override_file_ != nullptr ? override_line_
                                     : static_cast<int>(loc.line());
  }
  // Ends the live range of the on-chip tensors still allocated at the end
  // of a core's stream.
  void EndLiveRanges(const std::vector<uint32_t>& ids);
  void FinishCore();
  // Runs the trace; graph_ then holds everything but the streams.
  absl::Status Run(absl::FunctionRef<void(Tracer&)> body);
  // The graph's bytes: graph_'s fields with the streams in their place.
  std::string Serialize();

  TraceConfig config_;
  // Brings in the pages of the stream buffers and the arena's big blocks
  // ahead of their use, on its own thread (declared first: it outlives
  // the memory it works on).
  PagePrefaulter prefaulter_;
  // The graph without its streams (tensors, world, interned names) grows
  // on an arena: a big trace makes hundreds of thousands of tensors.
  google::protobuf::Arena arena_;
  proto::Graph* graph_;
  // The instruction message of each opcode (made at its first use), the
  // operands and attributes the one being built has so far, and each
  // core's stream so far as the bytes of its serialized `instructions`
  // entries.
  // The message holds the instruction's header and attributes; its
  // operands are kept in the builder's own form instead (no message per
  // operand): the first kMaxOperands in operands_, each pointing at its
  // view's pattern, num_operands_ counting them all (more is an error the
  // check reports).
  std::array<std::unique_ptr<proto::Instruction>, proto::Opcode_ARRAYSIZE>
      instrs_;
  std::array<ops::PatternRef, ops::kMaxOperands> operands_;
  int num_operands_ = 0;
  int num_attrs_ = 0;
  // The spec index of each attribute so far (the first
  // kMaxResolvedAttrs; with more, the check looks them up by name).
  std::array<uint8_t, ops::kMaxResolvedAttrs> attr_specs_;
  std::vector<StreamBuffer> stream_bytes_;
  std::vector<int64_t> stream_sizes_;
  SourceInterner interner_;
  absl::Status error_;
  bool traced_ = false;
  Tracer* previous_ = nullptr;

  int core_ = 0;
  int64_t next_instr_id_ = 0;
  HbmAllocator hbm_;
  OnChipStack on_chip_;      // the current core's
  OnChipHeap on_chip_heap_;  // the current core's, with explicit_release
  const char* override_file_ = nullptr;
  int override_line_ = 0;

  // Cross-core matching of shared tensors.
  std::vector<uint32_t> inputs_;
  std::vector<uint32_t> shared_allocs_;
  size_t shared_alloc_index_ = 0;

  std::vector<uint32_t> scope_stack_;  // enclosing scopes' indexes
  uint32_t scope_index_ = 0;
  std::vector<std::pair<const void*, std::string>> kernels_;
  // Reused by every check: a fresh InstrView zeroes all kMaxOperands
  // operand slots, which showed up in tracing profiles. MakeInstrView sets
  // every slot the instruction has, as the interpreter relies on too.
  // Valid only inside FinishInstr: its operands point at the views the
  // ISA call passed, which are gone once it returns.
  ops::InstrView check_view_;
};

// RAII name scope that also frees the on-chip tensors allocated inside it.
class Scope {
 public:
  explicit Scope(absl::string_view name);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  Tracer* tracer_;
};

// NKI-style conveniences on the current tracer.
Tensor ndarray(absl::Span<const int64_t> shape, DType dtype, Buffer buffer,
               absl::string_view name, Loc loc = Loc::current());
int program_id();
int num_programs();

}  // namespace nkigraph::builder

#endif  // NKIGRAPH_BUILDER_TRACER_H_
