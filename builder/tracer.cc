#include "builder/tracer.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "builder/instr_encoding.h"
#include "ops/access_pattern.h"
#include "ops/device_profile.h"
#include "ops/instr_facts.h"
#include "ops/instr_view.h"
#include "util/dtype.h"
#include "util/graph_arena.h"
#include "util/graph_io.h"
#include "util/wire_format.h"

namespace nkigraph::builder {
namespace {

thread_local Tracer* current_tracer = nullptr;

// The tracer's arena blocks: GraphArenaOptions' sizes (small blocks from
// malloc, big ones mapped), but a big block's pages are brought in by the
// running trace's prefaulter, on its thread, instead of by MAP_POPULATE
// in the allocating call. (The arena's allocator is a plain function:
// the prefaulter is the one of the trace running on this thread.)
thread_local PagePrefaulter* block_prefaulter = nullptr;

void* AllocateTraceBlock(size_t size) {
  PagePrefaulter* prefaulter = block_prefaulter;
  void* block =
      AllocateGraphArenaBlock(size, /*populate=*/prefaulter == nullptr);
  if (prefaulter != nullptr && size >= kMappedArenaBlock) {
    prefaulter->Request(block, size);
  }
  return block;
}

google::protobuf::ArenaOptions TraceArenaOptions() {
  google::protobuf::ArenaOptions options = GraphArenaOptions();
  options.block_alloc = AllocateTraceBlock;
  options.block_dealloc = FreeGraphArenaBlock;
  return options;
}

}  // namespace

proto::MemorySpace SpaceOf(Buffer buffer) {
  switch (buffer) {
    case Buffer::kHbm:
      return proto::HBM;
    case Buffer::kSharedHbm:
      return proto::SHARED_HBM;
    case Buffer::kSbuf:
      return proto::SBUF;
    case Buffer::kPsum:
      return proto::PSUM;
  }
  return proto::MEMORY_SPACE_UNSPECIFIED;
}

Tracer::Tracer(TraceConfig config)
    : config_(std::move(config)),
      arena_(TraceArenaOptions()),
      graph_(google::protobuf::Arena::CreateMessage<proto::Graph>(&arena_)),
      interner_(graph_) {
  graph_->set_schema_version(proto::SCHEMA_VERSION_CURRENT);
  graph_->set_kernel_name(config_.kernel_name);
  for (const auto& [name, value] : config_.params) {
    proto::Param* param = graph_->add_params();
    param->set_name(name);
    param->set_value(value);
  }
  proto::World* world = graph_->mutable_world();
  world->set_target(config_.world.target);
  world->set_num_ranks(config_.world.num_ranks);
  world->set_num_cores(config_.world.num_cores);
  for (const std::vector<int>& group : config_.world.replica_groups) {
    proto::ReplicaGroup* g = world->add_replica_groups();
    for (int rank : group) g->add_ranks(rank);
  }
}

Tracer::~Tracer() {
  if (current_tracer == this) current_tracer = previous_;
  prefaulter_.Drain();  // before the arena unmaps its blocks
}

Tracer* Tracer::Current() { return current_tracer; }

void Tracer::RecordError(absl::string_view message, Loc loc) {
  RecordError(MakeDiagnostic(DiagnosticKind::kTrace, std::string(message)),
              loc);
}

void Tracer::RecordError(Diagnostic diagnostic, Loc loc) {
  if (failed()) return;
  diagnostic.file = std::string(RelativeSource(FileOf(loc)));
  diagnostic.line = LineOf(loc);
  diagnostic.scope = graph_->scopes(scope_index_);
  if (config_.world.num_cores > 1) diagnostic.core = core_;
  error_ = DiagnosticError(absl::StatusCode::kInvalidArgument, diagnostic);
}

Diagnostic Tracer::AboutOpcode(proto::Opcode opcode, std::string message) {
  Diagnostic d = MakeDiagnostic(DiagnosticKind::kTrace, std::move(message));
  d.opcode = ops::OpcodeName(opcode);
  return d;
}

absl::StatusOr<proto::Graph> Tracer::Trace(
    absl::FunctionRef<void(Tracer&)> body) {
  absl::StatusOr<SerializedGraph> serialized = TraceSerialized(body);
  if (!serialized.ok()) return serialized.status();
  proto::Graph result;  // off the arena, for the caller to own
  if (!result.ParseFromString(serialized->bytes)) {
    return absl::InternalError("a traced graph does not parse back");
  }
  return result;
}

absl::StatusOr<SerializedGraph> Tracer::TraceSerialized(
    absl::FunctionRef<void(Tracer&)> body) {
  if (absl::Status status = Run(body); !status.ok()) return status;
  SerializedGraph result;
  result.bytes = Serialize();
  for (int64_t size : stream_sizes_) result.num_instructions += size;
  result.num_tensors = graph_->tensors_size();
  result.num_ranks = config_.world.num_ranks;
  result.num_cores = config_.world.num_cores;
  return result;
}

absl::Status Tracer::Run(absl::FunctionRef<void(Tracer&)> body) {
  if (traced_) {
    return DiagnosticError(
        absl::StatusCode::kFailedPrecondition,
        MakeDiagnostic(DiagnosticKind::kTrace, "a Tracer traces once"));
  }
  traced_ = true;
  const WorldConfig& world = config_.world;
  if (world.num_cores < 1 || world.num_cores > 2) {
    return DiagnosticError(
        absl::StatusCode::kInvalidArgument,
        MakeDiagnostic(DiagnosticKind::kTrace,
                       absl::StrCat("num_cores is ", world.num_cores,
                                    "; logical cores are 1 or 2")));
  }
  if (world.num_ranks < 1 || world.num_ranks > 4096) {
    return DiagnosticError(
        absl::StatusCode::kInvalidArgument,
        MakeDiagnostic(
            DiagnosticKind::kTrace,
            absl::StrCat("num_ranks is ", world.num_ranks, " (1 to 4096)")));
  }
  previous_ = current_tracer;
  current_tracer = this;
  PagePrefaulter* const previous_prefaulter = block_prefaulter;
  block_prefaulter = &prefaulter_;
  for (core_ = 0; core_ < world.num_cores && !failed(); ++core_) {
    stream_bytes_.emplace_back(&prefaulter_);
    stream_sizes_.push_back(0);
    shared_alloc_index_ = 0;
    on_chip_.Reset();
    on_chip_heap_.Reset();
    body(*this);
    FinishCore();
  }
  core_ = 0;
  current_tracer = previous_;
  block_prefaulter = previous_prefaulter;
  return error_;
}

std::string Tracer::Serialize() {
  // Fields go out in field-number order, as protobuf writes them: graph_'s
  // first fields (1-4), the tensors (5, written here: a big trace has
  // hundreds of thousands), the streams (6), then the interned names (7,
  // 8); the tensors and names are moved aside so graph_ writes only the
  // first part.
  proto::Graph* aside =
      google::protobuf::Arena::CreateMessage<proto::Graph>(&arena_);
  aside->mutable_tensors()->Swap(graph_->mutable_tensors());
  aside->mutable_files()->Swap(graph_->mutable_files());
  aside->mutable_scopes()->Swap(graph_->mutable_scopes());
  const std::string head = SerializeDeterministic(*graph_);
  StreamBuffer tensors(&prefaulter_);
  for (const proto::Tensor& tensor : aside->tensors()) {
    AppendTensor(tensor, &tensors);
  }
  aside->mutable_tensors()->Swap(graph_->mutable_tensors());
  const std::string tail = SerializeDeterministic(*aside);
  size_t total = head.size() + tensors.size() + tail.size();
  for (const StreamBuffer& stream : stream_bytes_) {
    total += stream.size() + 32;
  }
  std::string bytes;
  bytes.reserve(total);  // one copy of the streams, no growth
  // A big graph's pages are brought in half here, half on the
  // prefaulter's thread at the same time: by the time the copy reaches
  // the second half, it is in. (A small one's are not worth a thread.)
  constexpr size_t kSplitPrefault = size_t{4} << 20;
  const size_t half = total >= kSplitPrefault ? total / 2 : total;
  prefaulter_.Request(bytes.data() + half, total - half);
  PrefaultForWriting(bytes.data(), half);
  bytes += head;
  bytes.append(tensors.view().data(), tensors.view().size());
  for (size_t core = 0; core < stream_bytes_.size(); ++core) {
    // A Stream: its core (left out when 0), then its instructions.
    std::string core_field;
    if (core != 0) AppendVarintField(1, core, &core_field);
    AppendLengthDelimited(6, core_field.size() + stream_bytes_[core].size(),
                          &bytes);
    bytes += core_field;
    bytes.append(stream_bytes_[core].view().data(),
                 stream_bytes_[core].view().size());
  }
  bytes += tail;
  prefaulter_.Drain();  // nothing works on the caller's string after this
  aside->mutable_files()->Swap(graph_->mutable_files());
  aside->mutable_scopes()->Swap(graph_->mutable_scopes());
  return bytes;
}

void Tracer::FinishCore() {
  if (failed()) return;
  if (on_chip_.depth() != 1 || !scope_stack_.empty()) {
    RecordError("a Scope or jit kernel was left open at the end of the trace",
                Loc::current());
    return;
  }
  if (core_ > 0 && shared_alloc_index_ != shared_allocs_.size()) {
    RecordError(absl::StrCat("core ", core_, " allocated ", shared_alloc_index_,
                             " shared-HBM tensors but "
                             "core 0 allocated ",
                             shared_allocs_.size(),
                             "; control flow must not differ between cores"),
                Loc::current());
    return;
  }
  EndLiveRanges(on_chip_.top_tensors());
  EndLiveRanges(on_chip_heap_.Live());
}

void Tracer::EndLiveRanges(const std::vector<uint32_t>& ids) {
  const int64_t end = StreamPosition();
  for (uint32_t id : ids) {
    graph_->mutable_tensors(static_cast<int>(id) - 1)->set_live_end(end);
  }
}

proto::Tensor* Tracer::NewTensor(absl::string_view name,
                                 absl::Span<const int64_t> shape, DType dtype,
                                 proto::MemorySpace space, Loc loc) {
  if (failed()) return nullptr;
  if (DTypeSize(dtype) == 0) {
    RecordError(absl::StrCat("tensor '", name, "' has no valid dtype"), loc);
    return nullptr;
  }
  if (shape.empty()) {
    RecordError(absl::StrCat("tensor '", name, "' has an empty shape"), loc);
    return nullptr;
  }
  for (int64_t d : shape) {
    if (d < 1) {
      RecordError(absl::StrCat("tensor '", name, "' has shape [",
                               absl::StrJoin(shape, ", "),
                               "]; every dim must be positive"),
                  loc);
      return nullptr;
    }
  }
  proto::Tensor* tensor = graph_->add_tensors();
  tensor->set_id(graph_->tensors_size());
  tensor->set_name(name.data(), name.size());
  tensor->set_space(space);
  tensor->set_dtype(dtype);
  tensor->mutable_shape()->Add(shape.begin(), shape.end());
  tensor->set_core(space == proto::SHARED_HBM ? 0 : core_);
  return tensor;
}

Tensor Tracer::Input(absl::string_view name, absl::Span<const int64_t> shape,
                     DType dtype, bool per_rank,
                     std::optional<ValueRange> values, Loc loc) {
  if (failed()) return Tensor();
  if (values.has_value() && values->lo > values->hi) {
    RecordError(absl::StrCat("input '", name, "': its value range [",
                             values->lo, ", ", values->hi, "] is empty"),
                loc);
    return Tensor();
  }
  if (core_ > 0) {
    for (uint32_t id : inputs_) {
      const proto::Tensor& t = decl(id);
      if (t.name() == name) {
        if (static_cast<int>(shape.size()) != t.shape_size() ||
            !std::equal(shape.begin(), shape.end(), t.shape().begin())) {
          RecordError(absl::StrCat("input '", name,
                                   "' declared with different shapes on "
                                   "different cores"),
                      loc);
          return Tensor();
        }
        return Tensor::FullView(this, id);
      }
    }
    RecordError(absl::StrCat("input '", name, "' is declared on core ", core_,
                             " but not on core 0"),
                loc);
    return Tensor();
  }
  for (uint32_t id : inputs_) {
    if (decl(id).name() == name) {
      RecordError(absl::StrCat("input '", name, "' is declared twice"), loc);
      return Tensor();
    }
  }
  proto::Tensor* tensor = NewTensor(name, shape, dtype, proto::SHARED_HBM, loc);
  if (tensor == nullptr) return Tensor();
  tensor->set_role(proto::ROLE_INPUT);
  tensor->set_per_rank(per_rank);
  if (values.has_value()) {
    tensor->mutable_value_range()->set_lo(values->lo);
    tensor->mutable_value_range()->set_hi(values->hi);
  }
  int64_t bytes = DTypeSize(dtype);
  for (int64_t d : shape) bytes *= d;
  tensor->set_address(hbm_.Allocate(bytes));
  inputs_.push_back(tensor->id());
  return Tensor::FullView(this, tensor->id());
}

void Tracer::Output(const std::string& name, const Tensor& tensor, Loc loc) {
  if (failed()) return;
  if (!tensor.valid()) {
    RecordError(absl::StrCat("output '", name, "' is an invalid tensor"), loc);
    return;
  }
  proto::Tensor* t = graph_->mutable_tensors(static_cast<int>(tensor.id()) - 1);
  if (!ops::IsHbm(t->space()) ||
      (config_.world.num_cores > 1 && t->space() != proto::SHARED_HBM)) {
    RecordError(absl::StrCat("output '", name, "' must be in ",
                             config_.world.num_cores > 1 ? "shared_hbm" : "hbm",
                             ", not ", ops::SpaceName(t->space())),
                loc);
    return;
  }
  // The view must be the tensor itself, each element once in row-major
  // order; a permuted or broadcast view of the same size is not.
  const Tensor whole = Tensor::FullView(this, tensor.id());
  const bool is_whole = tensor.offset() == 0 && !tensor.has_dynamic() &&
                        tensor.pattern_ == whole.pattern_;
  if (!is_whole) {
    RecordError(
        absl::StrCat("output '", name, "' must be a whole tensor, not a view"),
        loc);
    return;
  }
  switch (t->role()) {
    case proto::ROLE_INPUT:
      t->set_role(proto::ROLE_INPUT_OUTPUT);
      t->set_output_name(name);
      return;
    case proto::ROLE_INTERNAL:
      t->set_role(proto::ROLE_OUTPUT);
      t->set_name(name);
      t->set_per_rank(true);
      return;
    default:
      // Already published (by an earlier core): it must be the same name.
      if ((t->role() == proto::ROLE_OUTPUT ? t->name() : t->output_name()) !=
          name) {
        RecordError(absl::StrCat("tensor '", t->name(),
                                 "' is published twice, also as '", name, "'"),
                    loc);
      }
  }
}

Tensor Tracer::Allocate(absl::Span<const int64_t> shape, DType dtype,
                        Buffer buffer, absl::string_view name, Loc loc) {
  if (failed()) return Tensor();
  const proto::MemorySpace space = SpaceOf(buffer);
  if (space == proto::SHARED_HBM && core_ > 0) {
    if (shared_alloc_index_ >= shared_allocs_.size()) {
      RecordError(
          absl::StrCat("core ", core_, " allocates shared-HBM tensor '", name,
                       "' that core 0 did not; control flow "
                       "must not differ between cores"),
          loc);
      return Tensor();
    }
    const uint32_t id = shared_allocs_[shared_alloc_index_++];
    const proto::Tensor& t = decl(id);
    if (t.dtype() != dtype || !std::equal(shape.begin(), shape.end(),
                                          t.shape().begin(), t.shape().end())) {
      RecordError(absl::StrCat("shared-HBM allocation '", name, "' on core ",
                               core_, " differs from core 0's '", t.name(),
                               "'; control flow must not differ between "
                               "cores"),
                  loc);
      return Tensor();
    }
    return Tensor::FullView(this, id);
  }
  proto::Tensor* tensor = NewTensor(name, shape, dtype, space, loc);
  if (tensor == nullptr) return Tensor();
  if (ops::IsOnChip(space)) {
    if (!AllocateOnChip(tensor, loc)) return Tensor();
  } else {
    int64_t bytes = DTypeSize(dtype);
    for (int64_t d : shape) bytes *= d;
    tensor->set_address(hbm_.Allocate(bytes));
    if (space == proto::SHARED_HBM) shared_allocs_.push_back(tensor->id());
  }
  return Tensor::FullView(this, tensor->id());
}

proto::Instruction* Tracer::BeginInstr(proto::Opcode opcode, Loc loc) {
  if (failed()) return nullptr;
  std::unique_ptr<proto::Instruction>& slot =
      instrs_[proto::Opcode_IsValid(opcode) ? opcode : 0];
  if (slot == nullptr) slot = std::make_unique<proto::Instruction>();
  proto::Instruction* instr = slot.get();
  num_operands_ = 0;
  num_attrs_ = 0;
  instr->set_id(static_cast<uint32_t>(next_instr_id_++));
  instr->set_opcode(opcode);
  instr->set_file(interner_.File(FileOf(loc)));
  instr->set_line(LineOf(loc));
  instr->set_scope(scope_index_);
  return instr;
}

void Tracer::AddOperand(proto::Instruction* instr, const Tensor& tensor,
                        Loc loc) {
  if (instr == nullptr) return;
  const int slot = num_operands_++;
  // Past kMaxOperands only counted: the check refuses the instruction.
  if (slot >= ops::kMaxOperands) return;
  ops::PatternRef& ref = operands_[slot];
  if (!tensor.valid()) {
    ref = ops::PatternRef{};
    return;
  }
  if (tensor.tracer() != this) {
    RecordError(
        AboutOpcode(instr->opcode(), "operand belongs to a different trace"),
        loc);
    return;
  }
  const proto::Tensor& t = decl(tensor.id());
  if (t.space() != proto::SHARED_HBM && static_cast<int>(t.core()) != core_) {
    RecordError(
        AboutOpcode(
            instr->opcode(),
            absl::StrCat("tensor '", t.name(), "' belongs to core ", t.core(),
                         " and cannot be used on core ", core_)),
        loc);
    return;
  }
  tensor.ToPattern(&ref);
}

proto::Attr* Tracer::AddAttr(proto::Instruction* instr, absl::string_view name,
                             int spec) {
  proto::Attr* attr = num_attrs_ < instr->attrs_size()
                          ? instr->mutable_attrs(num_attrs_)
                          : instr->add_attrs();
  if (num_attrs_ < ops::kMaxResolvedAttrs) {
    attr_specs_[num_attrs_] = static_cast<uint8_t>(spec);
  }
  ++num_attrs_;
  // The previous instruction of this opcode usually named it the same.
  if (attr->name() != name) attr->set_name(name.data(), name.size());
  return attr;
}

Instr Tracer::FinishInstr(proto::Instruction* instr, Loc loc) {
  if (instr == nullptr) return Instr{};
  // What the previous instruction of this opcode had beyond this one's.
  while (instr->attrs_size() > num_attrs_) instr->mutable_attrs()->RemoveLast();
  if (!failed()) {
    absl::Status status = ops::MakeInstrView(
        *instr, num_operands_, operands_.data(),
        num_attrs_ <= ops::kMaxResolvedAttrs ? attr_specs_.data() : nullptr,
        graph_->tensors(), graph_->world(), &check_view_);
    if (status.ok()) {
      AppendInstruction(*instr, num_operands_, operands_.data(),
                        &stream_bytes_[core_]);
      ++stream_sizes_[core_];
      return Instr{instr->id()};
    }
    RecordError(AboutOpcode(instr->opcode(), std::string(status.message())),
                loc);
  }
  --next_instr_id_;
  return Instr{};
}

void Tracer::PushScope(absl::string_view name) {
  scope_stack_.push_back(scope_index_);
  scope_index_ = interner_.Scope(scope_index_, name);
  on_chip_.PushFrame();
}

void Tracer::PopScope() {
  if (scope_stack_.empty() || on_chip_.depth() < 2) return;
  const int64_t end = failed() ? 0 : StreamPosition();
  for (uint32_t id : on_chip_.top_tensors()) {
    graph_->mutable_tensors(static_cast<int>(id) - 1)->set_live_end(end);
  }
  on_chip_.PopFrame();
  scope_index_ = scope_stack_.back();
  scope_stack_.pop_back();
}

bool Tracer::EnterKernel(const void* key, absl::string_view name, Loc loc) {
  for (const auto& [active, active_name] : kernels_) {
    if (active == key) {
      RecordError(
          absl::StrCat("kernel '", name,
                       "' calls itself; recursive kernels cannot be "
                       "traced (active kernels: ",
                       absl::StrJoin(kernels_, " -> ",
                                     [](std::string* out, const auto& k) {
                                       out->append(k.second);
                                     }),
                       ")"),
          loc);
      return false;
    }
  }
  kernels_.emplace_back(key, std::string(name));
  PushScope(name);
  return true;
}

void Tracer::ExitKernel() {
  PopScope();
  if (!kernels_.empty()) kernels_.pop_back();
}

Scope::Scope(absl::string_view name) : tracer_(Tracer::Current()) {
  if (tracer_ != nullptr) tracer_->PushScope(name);
}

Scope::~Scope() {
  if (tracer_ != nullptr) tracer_->PopScope();
}

Tensor ndarray(absl::Span<const int64_t> shape, DType dtype, Buffer buffer,
               absl::string_view name, Loc loc) {
  Tracer* tracer = Tracer::Current();
  if (tracer == nullptr) return Tensor();
  return tracer->Allocate(shape, dtype, buffer, name, loc);
}

int program_id() {
  Tracer* tracer = Tracer::Current();
  return tracer == nullptr ? 0 : tracer->program_id();
}

int num_programs() {
  Tracer* tracer = Tracer::Current();
  return tracer == nullptr ? 1 : tracer->num_programs();
}

}  // namespace nkigraph::builder
