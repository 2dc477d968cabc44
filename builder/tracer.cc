#include "builder/tracer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ops/access_pattern.h"
#include "ops/device_profile.h"
#include "ops/instr_view.h"
#include "util/dtype.h"

namespace nkigraph::builder {
namespace {

thread_local Tracer* current_tracer = nullptr;

constexpr int64_t kSbufAlign = 64;
constexpr int64_t kHbmAlign = 512;

int64_t AlignUp(int64_t value, int64_t align) {
  return (value + align - 1) / align * align;
}

// Arena blocks. A trace of a million instructions grows the arena by about
// 600 MB, and with protobuf's default 8 KiB malloc'd blocks a third of the
// tracing time went to page faults as the kernel handed that memory out one
// 4 KiB page at a time. Blocks instead double up to kMaxArenaBlock, and the
// big ones are mapped with MAP_POPULATE: the kernel fills a whole block in
// one call, about a third cheaper than faulting it in page by page. The
// cost is at most one block committed before it is used. Small traces stay
// on malloc. (Transparent huge pages were tried: on a virtual machine the
// first touch of a huge page can be many times slower than 4 KiB pages.)
constexpr size_t kFirstArenaBlock = size_t{16} << 10;
constexpr size_t kMappedArenaBlock = size_t{256} << 10;
constexpr size_t kMaxArenaBlock = size_t{4} << 20;

void* AllocateArenaBlock(size_t size) {
  if (size < kMappedArenaBlock) {
    void* block = std::malloc(size);
    if (block == nullptr) throw std::bad_alloc();
    return block;
  }
  void* block = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (block == MAP_FAILED) throw std::bad_alloc();
  return block;
}

void FreeArenaBlock(void* block, size_t size) {
  if (size < kMappedArenaBlock) {
    std::free(block);
  } else {
    munmap(block, size);
  }
}

google::protobuf::ArenaOptions TraceArenaOptions() {
  google::protobuf::ArenaOptions options;
  options.start_block_size = kFirstArenaBlock;
  options.max_block_size = kMaxArenaBlock;
  options.block_alloc = AllocateArenaBlock;
  options.block_dealloc = FreeArenaBlock;
  return options;
}

// Source paths are recorded relative to the project root so graphs are
// identical wherever the project is built.
absl::string_view RelativeSource(const char* file) {
  absl::string_view path(file);
  absl::string_view root(NKIGRAPH_SOURCE_DIR "/");
  if (path.substr(0, root.size()) == root) path.remove_prefix(root.size());
  return path;
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
      graph_(google::protobuf::Arena::CreateMessage<proto::Graph>(&arena_)) {
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
  graph_->add_scopes("");
  scope_ids_[""] = 0;
}

Tracer::~Tracer() {
  if (current_tracer == this) current_tracer = previous_;
}

Tracer* Tracer::Current() { return current_tracer; }

void Tracer::RecordError(absl::string_view message, Loc loc) {
  if (failed()) return;
  const std::string& scope = graph_->scopes(scope_index_);
  error_ = absl::InvalidArgumentError(absl::StrCat(
      RelativeSource(loc.file_name()), ":", loc.line(),
      scope.empty() ? "" : absl::StrCat(" (", scope, ")"),
      config_.world.num_cores > 1 ? absl::StrCat(" [core ", core_, "]") : "",
      ": ", message));
}

absl::StatusOr<proto::Graph> Tracer::Trace(
    absl::FunctionRef<void(Tracer&)> body) {
  absl::StatusOr<const proto::Graph*> graph = TraceInPlace(body);
  if (!graph.ok()) return graph.status();
  proto::Graph result;  // off the arena, for the caller to own
  result.CopyFrom(**graph);
  return result;
}

absl::StatusOr<const proto::Graph*> Tracer::TraceInPlace(
    absl::FunctionRef<void(Tracer&)> body) {
  if (traced_) return absl::FailedPreconditionError("a Tracer traces once");
  traced_ = true;
  const WorldConfig& world = config_.world;
  if (world.num_cores < 1 || world.num_cores > 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_cores is ", world.num_cores, "; logical cores are 1 or 2"));
  }
  if (world.num_ranks < 1 || world.num_ranks > 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_ranks is ", world.num_ranks, " (1 to 4096)"));
  }
  previous_ = current_tracer;
  current_tracer = this;
  for (core_ = 0; core_ < world.num_cores && !failed(); ++core_) {
    proto::Stream* stream = graph_->add_streams();
    stream->set_core(core_);
    shared_alloc_index_ = 0;
    num_frames_ = 0;
    PushFrame(0, 0);
    body(*this);
    FinishCore();
  }
  core_ = 0;
  current_tracer = previous_;
  if (failed()) return error_;
  return graph_;
}

void Tracer::FinishCore() {
  if (failed()) return;
  if (num_frames_ != 1 || !scope_stack_.empty()) {
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
  const int64_t end = StreamPosition();
  for (uint32_t id : top_frame().tensors) {
    graph_->mutable_tensors(static_cast<int>(id) - 1)->set_live_end(end);
  }
}

void Tracer::PushFrame(int64_t sbuf_top, int64_t psum_top) {
  if (num_frames_ == frames_.size()) frames_.push_back(Frame{0, 0, {}});
  Frame& frame = frames_[num_frames_++];
  frame.sbuf_top = sbuf_top;
  frame.psum_top = psum_top;
  frame.tensors.clear();
}

int64_t Tracer::StreamPosition() const {
  return graph_->streams(core_).instructions_size();
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

bool Tracer::AllocateOnChip(proto::Tensor* tensor, Loc loc) {
  const ops::DeviceProfile& profile = ops::ProfileFor(config_.world.target);
  const bool psum = tensor->space() == proto::PSUM;
  if (tensor->shape(0) > profile.num_partitions) {
    RecordError(absl::StrCat("on-chip tensor '", tensor->name(), "' has ",
                             tensor->shape(0),
                             " partitions; the partition dim is at most ",
                             profile.num_partitions),
                loc);
    return false;
  }
  int64_t row = DTypeSize(tensor->dtype());
  for (int d = 1; d < tensor->shape_size(); ++d) row *= tensor->shape(d);
  Frame& frame = top_frame();
  int64_t& top = psum ? frame.psum_top : frame.sbuf_top;
  const int64_t capacity =
      psum ? profile.psum_partition_bytes : profile.sbuf_partition_bytes;
  int64_t address;
  if (psum) {
    // A tile no larger than a bank never straddles two banks.
    const int64_t bank = profile.psum_bank_bytes;
    address = AlignUp(top, 4);
    if (row <= bank ? (address / bank != (address + row - 1) / bank)
                    : (address % bank != 0)) {
      address = AlignUp(address, bank);
    }
  } else {
    address = AlignUp(top, kSbufAlign);
  }
  if (address + row > capacity) {
    RecordError(
        absl::StrCat(ops::SpaceName(tensor->space()), " capacity exceeded: '",
                     tensor->name(), "' needs ", row,
                     " bytes per partition at offset ", address, ", but a ",
                     profile.name, " partition holds ", capacity, " bytes (",
                     address, " already in use by live tensors)"),
        loc);
    return false;
  }
  tensor->set_address(address);
  top = address + row;
  int64_t& high_water = psum ? psum_high_water_ : sbuf_high_water_;
  high_water = std::max(high_water, top);
  tensor->set_live_begin(StreamPosition());
  frame.tensors.push_back(tensor->id());
  return true;
}

Tensor Tracer::Input(absl::string_view name, absl::Span<const int64_t> shape,
                     DType dtype, bool per_rank, Loc loc) {
  if (failed()) return Tensor();
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
  int64_t bytes = DTypeSize(dtype);
  for (int64_t d : shape) bytes *= d;
  tensor->set_address(hbm_top_);
  hbm_top_ = AlignUp(hbm_top_ + bytes, kHbmAlign);
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
  bool is_whole =
      tensor.offset() == 0 && tensor.rank() == whole.rank() &&
      tensor.dynamic_.kind == proto::DynamicOffset::KIND_UNSPECIFIED;
  for (int d = 0; is_whole && d < whole.rank(); ++d) {
    is_whole = tensor.dims()[d].stride == whole.dims()[d].stride &&
               tensor.dims()[d].count == whole.dims()[d].count;
  }
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
    tensor->set_address(hbm_top_);
    hbm_top_ = AlignUp(hbm_top_ + bytes, kHbmAlign);
    if (space == proto::SHARED_HBM) shared_allocs_.push_back(tensor->id());
  }
  return Tensor::FullView(this, tensor->id());
}

uint32_t Tracer::InternFile(const char* file) {
  // Consecutive calls mostly come from the same kernel file.
  if (file == last_file_ptr_) return last_file_id_;
  last_file_ptr_ = file;
  last_file_id_ = InternFileSlow(file);
  return last_file_id_;
}

uint32_t Tracer::InternFileSlow(const char* file) {
  auto it = file_ids_by_ptr_.find(file);
  if (it != file_ids_by_ptr_.end()) return it->second;
  const std::string path(RelativeSource(file));
  auto [by_name, inserted] = file_ids_.try_emplace(path, graph_->files_size());
  if (inserted) graph_->add_files(path);
  file_ids_by_ptr_[file] = by_name->second;
  return by_name->second;
}

proto::Instruction* Tracer::BeginInstr(proto::Opcode opcode, Loc loc) {
  if (failed()) return nullptr;
  proto::Instruction* instr =
      graph_->mutable_streams(core_)->add_instructions();
  instr->set_id(static_cast<uint32_t>(next_instr_id_++));
  if (const ops::OpDef* def = ops::FindOp(opcode); def != nullptr) {
    instr->mutable_operands()->Reserve(static_cast<int>(def->roles.size()));
  }
  instr->set_opcode(opcode);
  instr->set_file(InternFile(loc.file_name()));
  instr->set_line(loc.line());
  instr->set_scope(scope_index_);
  return instr;
}

void Tracer::AddOperand(proto::Instruction* instr, const Tensor& tensor,
                        Loc loc) {
  if (instr == nullptr) return;
  proto::AccessPattern* ap = instr->add_operands();
  if (!tensor.valid()) return;
  if (tensor.tracer() != this) {
    RecordError("operand belongs to a different trace", loc);
    return;
  }
  const proto::Tensor& t = decl(tensor.id());
  if (t.space() != proto::SHARED_HBM && static_cast<int>(t.core()) != core_) {
    RecordError(absl::StrCat("tensor '", t.name(), "' belongs to core ",
                             t.core(), " and cannot be used on core ", core_),
                loc);
    return;
  }
  tensor.ToAccessPattern(ap);
}

Instr Tracer::FinishInstr(proto::Instruction* instr, Loc loc) {
  if (instr == nullptr) return Instr{};
  proto::Stream* stream = graph_->mutable_streams(core_);
  if (!failed()) {
    absl::Status status = ops::MakeInstrView(*instr, graph_->tensors(),
                                             graph_->world(), &check_view_);
    if (status.ok()) return Instr{instr->id()};
    RecordError(status.message(), loc);
  }
  stream->mutable_instructions()->RemoveLast();
  --next_instr_id_;
  return Instr{};
}

void Tracer::PushScope(absl::string_view name) {
  uint32_t index;
  if (scope_index_ == last_scope_parent_ && name == last_scope_name_) {
    index = last_scope_index_;
  } else {
    const std::string& parent = graph_->scopes(scope_index_);
    std::string path =
        parent.empty() ? std::string(name) : absl::StrCat(parent, "/", name);
    auto [it, inserted] =
        scope_ids_.try_emplace(std::move(path), graph_->scopes_size());
    if (inserted) graph_->add_scopes(it->first);
    index = it->second;
    last_scope_parent_ = scope_index_;
    last_scope_name_.assign(name.data(), name.size());
    last_scope_index_ = index;
  }
  scope_stack_.push_back(scope_index_);
  scope_index_ = index;
  const Frame& top = top_frame();
  PushFrame(top.sbuf_top, top.psum_top);
}

void Tracer::PopScope() {
  if (scope_stack_.empty() || num_frames_ < 2) return;
  const int64_t end = failed() ? 0 : StreamPosition();
  for (uint32_t id : top_frame().tensors) {
    graph_->mutable_tensors(static_cast<int>(id) - 1)->set_live_end(end);
  }
  --num_frames_;
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
