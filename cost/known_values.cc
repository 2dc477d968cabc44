#include "cost/known_values.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ops/access_pattern.h"
#include "ops/dynamic_bounds.h"
#include "ops/exec_context.h"
#include "ops/instr_view.h"
#include "ops/op_def.h"
#include "util/dtype.h"

namespace nkigraph::cost {
namespace {

// Index tensors, rank ids and the arithmetic on them are a few elements;
// an operand beyond this is not executed (its writes become unknown), so
// a big graph's data tiles cost a lookup each, not their elements.
constexpr int64_t kMaxOperandElements = int64_t{1} << 14;
// Tensors larger than this never hold known values.
constexpr int64_t kMaxTensorBytes = int64_t{1} << 16;

// What a read of an unknown element returns inside the evaluator: the
// instruction's writes then become unknown. Never leaves this file.
absl::Status Unknown() { return absl::UnavailableError("unknown value"); }

// The tensor as operand `ap` sees it: the declaration, or its bitcast
// view (built in `storage`).
const proto::Tensor* OperandTensor(const proto::Tensor& declared,
                                   const proto::AccessPattern& ap,
                                   proto::Tensor* storage) {
  if (ap.view_dtype() == proto::DTYPE_UNSPECIFIED) return &declared;
  if (!ops::ViewedTensor(declared, ap.view_dtype(), storage).ok()) {
    return nullptr;
  }
  return storage;
}

int64_t TensorElements(const proto::Tensor& t) {
  int64_t n = 1;
  for (int64_t d : t.shape()) n *= d;
  return n;
}

// A tensor's bytes and which of them are known.
struct Store {
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> known;
};

class Evaluator final : public ops::ExecContext {
 public:
  explicit Evaluator(const graph::GraphIndex& index)
      : index_(index),
        graph_(index.graph()),
        fp8_max_(Fp8E4m3Max(index.graph().world().target())),
        slot_(static_cast<size_t>(index.graph().tensors_size()) + 1, -1),
        live_(index.num_cores()) {}

  KnownOffsets Run();

  const ops::InstrView& view() const override { return view_; }
  int rank() const override { return 0; }
  int core() const override { return core_; }
  absl::StatusOr<absl::Span<const float>> ReadFloat(int i) override;
  absl::StatusOr<absl::Span<const int64_t>> ReadInt(int i) override;
  absl::StatusOr<absl::Span<const uint8_t>> ReadRaw(int i) override;
  absl::StatusOr<Rows> ReadRows(int /*i*/) override { return Rows{}; }
  MatmulRows MatmulInPlace(int /*i*/, bool /*accumulate*/) override {
    return MatmulRows{};
  }
  MutableRows WriteFloatInPlace(int /*i*/) override { return MutableRows{}; }
  absl::Status WriteFloat(int i, absl::Span<const float> values) override;
  absl::Status WriteInt(int i, absl::Span<const int64_t> values) override;
  absl::Status WriteRaw(int i, absl::Span<const uint8_t> bytes) override;
  absl::Status WriteRawRows(int i, const Rows& rows) override;
  absl::Status MatmulWrite(int i, absl::Span<const float> values,
                           bool accumulate) override;
  // The engines' accumulation registers are not followed: an instruction
  // that uses them writes unknown values.
  absl::Span<float> ReduceRegisters(ops::Engine /*engine*/) override {
    used_registers_ = true;
    registers_.assign(128, 0.0f);
    return absl::MakeSpan(registers_);
  }
  std::vector<float>& ScratchFloat(int slot) override {
    if (static_cast<size_t>(slot) >= scratch_float_.size()) {
      scratch_float_.resize(slot + 1);
    }
    return scratch_float_[slot];
  }
  std::vector<int64_t>& ScratchInt(int slot) override {
    if (static_cast<size_t>(slot) >= scratch_int_.size()) {
      scratch_int_.resize(slot + 1);
    }
    return scratch_int_[slot];
  }

 private:
  struct Pending {
    uint32_t tensor;
    int64_t byte;
    uint64_t value;
    int size;
  };

  const proto::Tensor& Declared(uint32_t id) const { return index_.tensor(id); }
  Store* StoreOf(uint32_t id) {
    const int s = slot_[id];
    return s < 0 ? nullptr : &stores_[s];
  }
  Store* CreateStore(uint32_t id);
  void Drop(uint32_t id);
  // Drops the known tensors of this core whose bytes a write of tensor
  // `id` may overwrite (another tensor at the same address), and those
  // whose on-chip lifetime ended.
  void DropAliases(uint32_t id, uint32_t position);

  // Index entry `flat` of tensor `id`, when known.
  bool IndexValue(uint32_t id, int64_t flat, int64_t* value);
  // The flat elements operand `ap` reaches, when its dynamic offset's
  // entries are known and in range (rows an OOB_SKIP offset skips do not
  // count); false otherwise or when nothing is reached.
  bool Reach(const proto::AccessPattern& ap, const proto::Tensor& t,
             int64_t* lo, int64_t* hi);
  // Flat elements of `t` that `ap` accesses, in element order; -1 where
  // an OOB_SKIP dynamic offset skips. Unknown() when an index entry is.
  absl::Status Positions(const proto::AccessPattern& ap, const proto::Tensor& t,
                         std::vector<int64_t>* out);
  absl::Status OperandPositions(int i, std::vector<int64_t>** out);
  // Operand i's values in its dtype, as `load` converts each (into
  // `cache`'s entry i), and the writes of values `store` converts.
  template <typename T>
  absl::StatusOr<absl::Span<const T>> ReadAs(
      int i, T (*load)(proto::DType, const uint8_t*),
      std::vector<std::vector<T>>& cache);
  template <typename T>
  absl::Status WriteAs(int i, absl::Span<const T> values,
                       void (*store)(proto::DType, T, uint8_t*, float));

  bool Eligible(const graph::InstrInfo& info) const;
  void Evaluate(int i, uint32_t position);
  void WriteUnknown(const graph::InstrInfo& info, uint32_t position);
  void Resolve(const graph::InstrInfo& info, KnownOffsets* out);

  const graph::GraphIndex& index_;
  const proto::Graph& graph_;
  const float fp8_max_;
  std::vector<int> slot_;  // by tensor id: index into stores_, or -1
  std::vector<Store> stores_;
  std::vector<std::vector<uint32_t>> live_;  // per core: ids with a store
  int core_ = 0;
  ops::InstrView view_;
  std::vector<Pending> pending_;
  bool used_registers_ = false;
  std::vector<float> registers_;
  std::vector<std::vector<int64_t>> positions_;  // per operand
  std::vector<std::vector<float>> read_float_;
  std::vector<std::vector<int64_t>> read_int_;
  std::vector<std::vector<uint8_t>> read_raw_;
  std::vector<std::vector<float>> scratch_float_;
  std::vector<std::vector<int64_t>> scratch_int_;
  std::vector<uint8_t> gathered_;
};

Store* Evaluator::CreateStore(uint32_t id) {
  if (Store* s = StoreOf(id)) return s;
  const proto::Tensor& t = Declared(id);
  if (t.space() == proto::SHARED_HBM) return nullptr;
  const int64_t bytes = TensorElements(t) * std::max(DTypeSize(t.dtype()), 1);
  if (bytes > kMaxTensorBytes) return nullptr;
  slot_[id] = static_cast<int>(stores_.size());
  stores_.push_back(
      Store{std::vector<uint8_t>(bytes, 0), std::vector<uint8_t>(bytes, 0)});
  live_[core_].push_back(id);
  return &stores_.back();
}

void Evaluator::Drop(uint32_t id) {
  const int s = slot_[id];
  if (s < 0) return;
  stores_[s] = Store{};
  slot_[id] = -1;
}

void Evaluator::DropAliases(uint32_t id, uint32_t position) {
  const proto::Tensor& w = Declared(id);
  std::vector<uint32_t>& live = live_[core_];
  auto overlaps = [&](const proto::Tensor& k) {
    if (k.space() != w.space()) return false;
    const int64_t w_size = std::max(DTypeSize(w.dtype()), 1);
    const int64_t k_size = std::max(DTypeSize(k.dtype()), 1);
    if (ops::IsOnChip(w.space())) {
      const int64_t w_p = w.partition_offset(), k_p = k.partition_offset();
      if (w_p + w.shape(0) <= k_p || k_p + k.shape(0) <= w_p) return false;
      const int64_t w_row = TensorElements(w) / w.shape(0) * w_size;
      const int64_t k_row = TensorElements(k) / k.shape(0) * k_size;
      return w.address() < k.address() + k_row &&
             k.address() < w.address() + w_row;
    }
    return w.address() < k.address() + TensorElements(k) * k_size &&
           k.address() < w.address() + TensorElements(w) * w_size;
  };
  size_t kept = 0;
  for (uint32_t k : live) {
    bool keep = slot_[k] >= 0;
    if (keep && k != id) {
      const proto::Tensor& t = Declared(k);
      const bool ended = ops::IsOnChip(t.space()) && t.live_end() > 0 &&
                         t.live_end() <= position;
      if (ended || overlaps(t)) {
        Drop(k);
        keep = false;
      }
    }
    if (keep) live[kept++] = k;
  }
  live.resize(kept);
}

bool Evaluator::IndexValue(uint32_t id, int64_t flat, int64_t* value) {
  const Store* s = StoreOf(id);
  if (s == nullptr) return false;
  const proto::Tensor& t = Declared(id);
  const int64_t size = std::max(DTypeSize(t.dtype()), 1);
  if (flat < 0 || (flat + 1) * size > static_cast<int64_t>(s->bytes.size())) {
    return false;
  }
  for (int64_t b = flat * size; b < (flat + 1) * size; ++b) {
    if (!s->known[b]) return false;
  }
  *value = LoadAsInt(t.dtype(), &s->bytes[flat * size]);
  return true;
}

bool Evaluator::Reach(const proto::AccessPattern& ap, const proto::Tensor& t,
                      int64_t* lo, int64_t* hi) {
  const proto::DynamicOffset& dyn = ap.dynamic();
  const bool vector = dyn.kind() == proto::DynamicOffset::VECTOR;
  const bool skip = dyn.oob_mode() == proto::DynamicOffset::OOB_SKIP;
  const int nd = ops::NumDims(ap);
  if (static_cast<int>(dyn.indirect_dim()) >= t.shape_size() ||
      (vector && nd == 0)) {
    return false;
  }
  const ops::DynamicBounds bounds = ops::DynamicBoundsOf(ap, t);
  bool any = false;
  auto add = [&](int64_t base) {
    *lo = any ? std::min(*lo, base + bounds.lo) : base + bounds.lo;
    *hi = any ? std::max(*hi, base + bounds.hi) : base + bounds.hi;
    any = true;
  };
  const int64_t rows = vector ? ops::Count(ap, 0) : 1;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t v = 0;
    if (!IndexValue(dyn.tensor_id(),
                    dyn.offset_element() + r * dyn.offset_stride(), &v)) {
      return false;
    }
    const int64_t row_base =
        ap.offset() + (vector ? r * ops::Stride(ap, 0) : 0);
    if (!ops::InBounds(bounds, v, row_base)) {
      if (skip) continue;
      return false;  // the run would fail here
    }
    add(row_base + v * bounds.dim_stride);
  }
  return any;
}

absl::Status Evaluator::Positions(const proto::AccessPattern& ap,
                                  const proto::Tensor& t,
                                  std::vector<int64_t>* out) {
  const int nd = ops::NumDims(ap);
  const int64_t total = ops::ApElements(ap);
  out->resize(total);
  const proto::DynamicOffset& dyn = ap.dynamic();
  const bool dynamic = dyn.kind() != proto::DynamicOffset::KIND_UNSPECIFIED;
  const bool vector = dyn.kind() == proto::DynamicOffset::VECTOR;
  ops::DynamicBounds bounds;
  if (dynamic) {
    if (static_cast<int>(dyn.indirect_dim()) >= t.shape_size()) {
      return Unknown();
    }
    bounds = ops::DynamicBoundsOf(ap, t);
  }
  const int64_t numel = TensorElements(t);
  // The row's shift by its index entry; -1 entries mark skipped rows.
  auto shift_of = [&](int64_t entry, int64_t* shift) -> absl::Status {
    int64_t v = 0;
    if (!IndexValue(dyn.tensor_id(), entry, &v)) return Unknown();
    if (v < 0 || v >= bounds.dim_size) {
      if (dyn.oob_mode() == proto::DynamicOffset::OOB_SKIP) {
        *shift = -1;
        return absl::OkStatus();
      }
      return Unknown();
    }
    *shift = v * bounds.dim_stride;
    return absl::OkStatus();
  };
  int64_t scalar_shift = 0;
  if (dynamic && !vector) {
    if (absl::Status s = shift_of(dyn.offset_element(), &scalar_shift);
        !s.ok()) {
      return s;
    }
  }
  std::vector<int64_t> idx(std::max(nd, 1), 0);
  int64_t row = -1, row_shift = scalar_shift;
  for (int64_t e = 0; e < total; ++e) {
    if (vector && idx[0] != row) {
      row = idx[0];
      if (absl::Status s = shift_of(
              dyn.offset_element() + row * dyn.offset_stride(), &row_shift);
          !s.ok()) {
        return s;
      }
    }
    int64_t flat = ap.offset();
    for (int d = 0; d < nd; ++d) flat += idx[d] * ops::Stride(ap, d);
    if (row_shift < 0 && dynamic) {
      (*out)[e] = -1;
    } else {
      flat += row_shift;
      if (flat < 0 || flat >= numel) {
        if (dynamic && dyn.oob_mode() == proto::DynamicOffset::OOB_SKIP) {
          flat = -1;
        } else {
          return Unknown();
        }
      }
      (*out)[e] = flat;
    }
    for (int d = nd - 1; d >= 0; --d) {
      if (++idx[d] < ops::Count(ap, d)) break;
      idx[d] = 0;
    }
  }
  return absl::OkStatus();
}

absl::Status Evaluator::OperandPositions(int i, std::vector<int64_t>** out) {
  if (static_cast<size_t>(i) >= positions_.size()) positions_.resize(i + 1);
  const ops::OperandInfo& op = view_.operand(i);
  if (!op.present() || op.ap == nullptr) return Unknown();
  *out = &positions_[i];
  return Positions(*op.ap, *op.tensor, *out);
}

absl::StatusOr<absl::Span<const uint8_t>> Evaluator::ReadRaw(int i) {
  std::vector<int64_t>* pos = nullptr;
  if (absl::Status s = OperandPositions(i, &pos); !s.ok()) return s;
  const ops::OperandInfo& op = view_.operand(i);
  const Store* store = StoreOf(op.ap->tensor_id());
  if (store == nullptr) return Unknown();
  const int64_t size = std::max(DTypeSize(op.dtype()), 1);
  if (static_cast<size_t>(i) >= read_raw_.size()) read_raw_.resize(i + 1);
  std::vector<uint8_t>& raw = read_raw_[i];
  raw.assign(pos->size() * size, 0);
  for (size_t k = 0; k < pos->size(); ++k) {
    const int64_t p = (*pos)[k];
    if (p < 0) continue;  // a skipped row reads as zero
    const int64_t byte = p * size;
    if (byte + size > static_cast<int64_t>(store->bytes.size())) {
      return Unknown();
    }
    for (int64_t b = 0; b < size; ++b) {
      if (!store->known[byte + b]) return Unknown();
    }
    std::memcpy(&raw[k * size], &store->bytes[byte], size);
  }
  return absl::Span<const uint8_t>(raw);
}

template <typename T>
absl::StatusOr<absl::Span<const T>> Evaluator::ReadAs(
    int i, T (*load)(proto::DType, const uint8_t*),
    std::vector<std::vector<T>>& cache) {
  absl::StatusOr<absl::Span<const uint8_t>> raw = ReadRaw(i);
  if (!raw.ok()) return raw.status();
  const proto::DType dtype = view_.operand(i).dtype();
  const int64_t size = std::max(DTypeSize(dtype), 1);
  if (static_cast<size_t>(i) >= cache.size()) cache.resize(i + 1);
  std::vector<T>& out = cache[i];
  out.resize(raw->size() / size);
  for (size_t k = 0; k < out.size(); ++k) {
    out[k] = load(dtype, raw->data() + k * size);
  }
  return absl::Span<const T>(out);
}

absl::StatusOr<absl::Span<const float>> Evaluator::ReadFloat(int i) {
  return ReadAs<float>(i, LoadAsFloat, read_float_);
}

absl::StatusOr<absl::Span<const int64_t>> Evaluator::ReadInt(int i) {
  return ReadAs<int64_t>(i, LoadAsInt, read_int_);
}

absl::Status Evaluator::WriteRaw(int i, absl::Span<const uint8_t> bytes) {
  std::vector<int64_t>* pos = nullptr;
  if (absl::Status s = OperandPositions(i, &pos); !s.ok()) return s;
  const ops::OperandInfo& op = view_.operand(i);
  const int size = std::max(DTypeSize(op.dtype()), 1);
  if (bytes.size() != pos->size() * size) {
    return absl::InvalidArgumentError("write size mismatch");
  }
  for (size_t k = 0; k < pos->size(); ++k) {
    if ((*pos)[k] < 0) continue;  // dropped with its skipped row
    Pending p{op.ap->tensor_id(), (*pos)[k] * size, 0, size};
    std::memcpy(&p.value, &bytes[k * size], size);
    pending_.push_back(p);
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status Evaluator::WriteAs(int i, absl::Span<const T> values,
                                void (*store)(proto::DType, T, uint8_t*,
                                              float)) {
  const proto::DType dtype = view_.operand(i).dtype();
  const int64_t size = std::max(DTypeSize(dtype), 1);
  gathered_.assign(values.size() * size, 0);
  for (size_t k = 0; k < values.size(); ++k) {
    store(dtype, values[k], &gathered_[k * size], fp8_max_);
  }
  return WriteRaw(i, gathered_);
}

absl::Status Evaluator::WriteFloat(int i, absl::Span<const float> values) {
  return WriteAs<float>(i, values, StoreFromFloat);
}

absl::Status Evaluator::WriteInt(int i, absl::Span<const int64_t> values) {
  return WriteAs<int64_t>(i, values, StoreFromInt);
}

absl::Status Evaluator::WriteRawRows(int i, const Rows& rows) {
  const int64_t size = std::max(DTypeSize(view_.operand(i).dtype()), 1);
  std::vector<uint8_t> bytes(rows.rows * rows.cols * size);
  for (int64_t r = 0; r < rows.rows; ++r) {
    std::memcpy(&bytes[r * rows.cols * size], rows.data + r * rows.stride,
                rows.cols * size);
  }
  return WriteRaw(i, bytes);
}

absl::Status Evaluator::MatmulWrite(int i, absl::Span<const float> values,
                                    bool accumulate) {
  if (!accumulate) return WriteFloat(i, values);
  absl::StatusOr<absl::Span<const float>> current = ReadFloat(i);
  if (!current.ok()) return current.status();
  std::vector<float> sum(values.begin(), values.end());
  for (size_t k = 0; k < sum.size() && k < current->size(); ++k) {
    sum[k] += (*current)[k];
  }
  return WriteFloat(i, sum);
}

bool Evaluator::Eligible(const graph::InstrInfo& info) const {
  if (info.def->sync != ops::SyncKind::kNone || info.def->execute == nullptr) {
    return false;
  }
  const proto::Instruction& instr = *info.instr;
  for (int o = 0; o < instr.operands_size(); ++o) {
    const proto::AccessPattern& ap = instr.operands(o);
    if (ap.tensor_id() == 0) continue;
    if (ops::ApElements(ap) > kMaxOperandElements) return false;
    const proto::Tensor& t = Declared(ap.tensor_id());
    if (t.space() == proto::SHARED_HBM) return false;
    if (info.Reads(o) && slot_[ap.tensor_id()] < 0) return false;
    const uint32_t index = ap.dynamic().tensor_id();
    if (ap.dynamic().kind() != proto::DynamicOffset::KIND_UNSPECIFIED &&
        (index == 0 || slot_[index] < 0)) {
      return false;
    }
  }
  return true;
}

void Evaluator::WriteUnknown(const graph::InstrInfo& info, uint32_t position) {
  const proto::Instruction& instr = *info.instr;
  std::vector<int64_t> pos;
  for (int o = 0; o < instr.operands_size(); ++o) {
    const proto::AccessPattern& ap = instr.operands(o);
    if (ap.tensor_id() == 0 || !info.Writes(o)) continue;
    DropAliases(ap.tensor_id(), position);
    Store* store = StoreOf(ap.tensor_id());
    if (store == nullptr) continue;
    proto::Tensor viewed;
    const proto::Tensor* t =
        OperandTensor(Declared(ap.tensor_id()), ap, &viewed);
    if (t == nullptr || !Positions(ap, *t, &pos).ok()) {
      Drop(ap.tensor_id());
      continue;
    }
    const int64_t size = std::max(DTypeSize(t->dtype()), 1);
    for (int64_t p : pos) {
      if (p < 0 || (p + 1) * size > static_cast<int64_t>(store->known.size())) {
        continue;
      }
      std::fill_n(store->known.begin() + p * size, size, 0);
    }
  }
}

void Evaluator::Evaluate(int i, uint32_t position) {
  const graph::InstrInfo& info = index_.info(i);
  bool done = false;
  if (Eligible(info) &&
      ops::BindInstrView(*info.instr, graph_.tensors(), graph_.world(), &view_)
          .ok()) {
    pending_.clear();
    used_registers_ = false;
    const absl::Status status = info.def->execute(*this);
    if (status.ok() && !used_registers_) {
      const proto::Instruction& instr = *info.instr;
      for (int o = 0; o < instr.operands_size(); ++o) {
        const uint32_t id = instr.operands(o).tensor_id();
        if (id != 0 && info.Writes(o)) DropAliases(id, position);
      }
      for (const Pending& p : pending_) {
        Store* store = CreateStore(p.tensor);
        if (store == nullptr ||
            p.byte + p.size > static_cast<int64_t>(store->bytes.size())) {
          continue;
        }
        std::memcpy(&store->bytes[p.byte], &p.value, p.size);
        std::fill_n(store->known.begin() + p.byte, p.size, 1);
      }
      done = true;
    }
  }
  if (!done) WriteUnknown(info, position);
}

void Evaluator::Resolve(const graph::InstrInfo& info, KnownOffsets* out) {
  const proto::Instruction& instr = *info.instr;
  for (int o = 0; o < instr.operands_size(); ++o) {
    const proto::AccessPattern& ap = instr.operands(o);
    if (ap.tensor_id() == 0 ||
        ap.dynamic().kind() == proto::DynamicOffset::KIND_UNSPECIFIED) {
      continue;
    }
    ++out->dynamic_operands;
    proto::Tensor viewed;
    const proto::Tensor* t =
        OperandTensor(Declared(ap.tensor_id()), ap, &viewed);
    int64_t lo = 0, hi = 0;
    if (t != nullptr && Reach(ap, *t, &lo, &hi)) {
      out->resolved[{instr.id(), o}] = graph::ResolvedRange{lo, hi};
    } else {
      ++out->data_dependent;
    }
  }
}

KnownOffsets Evaluator::Run() {
  KnownOffsets out;
  // A graph without dynamic offsets has nothing to resolve.
  bool any = false;
  for (int i = 0; i < index_.size() && !any; ++i) {
    for (const proto::AccessPattern& ap : index_.instr(i).operands()) {
      if (ap.dynamic().kind() != proto::DynamicOffset::KIND_UNSPECIFIED) {
        any = true;
        break;
      }
    }
  }
  if (!any) return out;
  for (int core = 0; core < index_.num_cores(); ++core) {
    core_ = core;
    const std::vector<int>& stream = index_.stream(core);
    for (size_t p = 0; p < stream.size(); ++p) {
      const graph::InstrInfo& info = index_.info(stream[p]);
      Resolve(info, &out);
      Evaluate(stream[p], static_cast<uint32_t>(p));
    }
  }
  return out;
}

}  // namespace

KnownOffsets ResolveKnownOffsets(const graph::GraphIndex& index) {
  Evaluator evaluator(index);
  return evaluator.Run();
}

}  // namespace nkigraph::cost
