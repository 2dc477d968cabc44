#include "kernels/kernel_io.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "util/dtype.h"

namespace nkigraph::kernels {
namespace {

std::string ShapeText(absl::Span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

proto::DType HostDType(const IoDecl& decl) {
  if (decl.raw_bits) return proto::UINT16;
  return IsFloatDType(decl.dtype) ? proto::FLOAT32 : proto::INT32;
}

}  // namespace

// --- KernelIo ----------------------------------------------------------------

KernelIo::KernelIo(builder::Tracer& tracer, std::string kernel,
                   const std::vector<IoDecl>& decls)
    : tracer_(tracer), kernel_(std::move(kernel)) {
  slots_.reserve(decls.size());
  for (const IoDecl& decl : decls) slots_.push_back(Slot{decl, {}, false});
}

std::string KernelIo::Where() const {
  return absl::StrCat("kernel '", kernel_, "'");
}

KernelIo::Slot* KernelIo::Find(absl::string_view name, bool output,
                               builder::Loc loc) {
  for (Slot& slot : slots_) {
    if (slot.decl.name != name) continue;
    const bool is_output = slot.decl.role == IoRole::kOutput;
    if (is_output != output) {
      tracer_.RecordError(absl::StrCat(Where(), ": '", name, "' is ",
                                       is_output ? "an output" : "an input",
                                       " in its I/O table, not ",
                                       output ? "an output" : "an input"),
                          loc);
      return nullptr;
    }
    if (slot.declared) {
      tracer_.RecordError(
          absl::StrCat(Where(), ": ", output ? "output" : "input", " '", name,
                       "' is declared twice"),
          loc);
      return nullptr;
    }
    slot.declared = true;
    return &slot;
  }
  tracer_.RecordError(
      absl::StrCat(Where(), " has no ", output ? "output" : "input", " '", name,
                   "' in its I/O table"),
      loc);
  return nullptr;
}

builder::Tensor KernelIo::Input(absl::string_view name, builder::Loc loc) {
  Slot* slot = Find(name, /*output=*/false, loc);
  if (slot == nullptr || !slot->decl.present) return builder::Tensor();
  const IoDecl& d = slot->decl;
  slot->tensor =
      tracer_.Input(d.name, d.shape, d.dtype, d.per_rank, d.values, loc);
  return slot->tensor;
}

builder::Tensor KernelIo::Output(absl::string_view name, builder::Loc loc) {
  Slot* slot = Find(name, /*output=*/true, loc);
  if (slot == nullptr || !slot->decl.present) return builder::Tensor();
  const IoDecl& d = slot->decl;
  slot->tensor = tracer_.Allocate(d.shape, d.dtype, builder::Buffer::kSharedHbm,
                                  d.name, loc);
  return slot->tensor;
}

builder::Tensor KernelIo::Output(absl::string_view name,
                                 const builder::Tensor& tensor,
                                 builder::Loc loc) {
  Slot* slot = Find(name, /*output=*/true, loc);
  if (slot == nullptr || !slot->decl.present) return builder::Tensor();
  const IoDecl& d = slot->decl;
  if (tensor.valid() &&
      (tensor.shape() != d.shape || tensor.dtype() != d.dtype)) {
    tracer_.RecordError(
        absl::StrCat(Where(), ": output '", name, "' is ",
                     DTypeName(tensor.dtype()), " ", ShapeText(tensor.shape()),
                     "; its I/O table says ", DTypeName(d.dtype), " ",
                     ShapeText(d.shape)),
        loc);
    return builder::Tensor();
  }
  slot->tensor = tensor;
  return tensor;
}

void KernelIo::Finish() {
  for (const Slot& slot : slots_) {
    if (tracer_.failed()) return;
    if (!slot.decl.present) continue;
    if (!slot.declared) {
      const bool output = slot.decl.role == IoRole::kOutput;
      tracer_.RecordError(
          absl::StrCat(Where(), ": ", output ? "output" : "input", " '",
                       slot.decl.name, "' of its I/O table was never ",
                       output ? "produced" : "declared"),
          builder::Loc::current());
      return;
    }
    if (slot.decl.role != IoRole::kInput) {
      tracer_.Output(slot.decl.name, slot.tensor, builder::Loc::current());
    }
  }
}

bool TraceOk(const absl::Status& status, builder::Loc loc) {
  if (status.ok()) return true;
  if (builder::Tracer* tracer = builder::Tracer::Current()) {
    tracer->RecordError(status.message(), loc);
  }
  return false;
}

// --- HostIo ------------------------------------------------------------------

HostIo::HostIo(std::vector<IoDecl> decls, int64_t num_ranks)
    : num_ranks_(num_ranks) {
  rows_.reserve(decls.size());
  for (IoDecl& decl : decls) {
    rows_.push_back(Row{std::move(decl), nullptr, nullptr});
  }
}

const HostIo::Row* HostIo::Find(absl::string_view name) const {
  for (const Row& row : rows_) {
    if (row.decl.name == name) return &row;
  }
  return nullptr;
}

std::vector<int64_t> HostIo::Shape(absl::string_view name) const {
  const Row* row = Find(name);
  if (row == nullptr) return {};
  std::vector<int64_t> shape;
  if (row->decl.per_rank && num_ranks_ > 1) shape.push_back(num_ranks_);
  shape.insert(shape.end(), row->decl.shape.begin(), row->decl.shape.end());
  return shape;
}

namespace {

// `array` (uint16 raw bits or float32 values of a 2-byte float tensor of
// `dtype`) in the other form, exactly: bits widen to their value, and
// values that came from such a tensor narrow back to the same bits. False
// when the pair is not one of those.
bool ConvertRawBits(const HostArray& array, proto::DType dtype,
                    proto::DType want, HostArray* out) {
  if (dtype != proto::BFLOAT16 && dtype != proto::FLOAT16) return false;
  *out = HostArray{array.name, want, array.shape, {}, {}, {}};
  if (array.dtype == proto::UINT16 && want == proto::FLOAT32) {
    for (uint16_t bits : array.u16) {
      out->f32.push_back(dtype == proto::BFLOAT16 ? Bf16ToFloat(bits)
                                                  : Fp16ToFloat(bits));
    }
    return true;
  }
  if (array.dtype == proto::FLOAT32 && want == proto::UINT16) {
    for (float v : array.f32) {
      out->u16.push_back(dtype == proto::BFLOAT16 ? FloatToBf16(v)
                                                  : FloatToFp16(v));
    }
    return true;
  }
  return false;
}

}  // namespace

absl::Status HostIo::BindInputs(const HostArrays& inputs) {
  for (Row& row : rows_) {
    if (row.decl.role == IoRole::kOutput || !row.decl.present) continue;
    const proto::DType want = HostDType(row.decl);
    // A 16-bit float input in the other host form (the bits a replay
    // bundle or `verify` reads back, or values for a raw-bits row) is
    // converted exactly.
    for (const HostArray& array : inputs) {
      if (array.name != row.decl.name || array.dtype == want) continue;
      auto converted = std::make_unique<HostArray>();
      if (ConvertRawBits(array, row.decl.dtype, want, converted.get())) {
        row.converted = std::move(converted);
      }
      break;
    }
    absl::StatusOr<const HostArray*> found =
        row.converted != nullptr
            ? FindHostInput({*row.converted}, row.decl.name,
                            Shape(row.decl.name), want)
            : FindHostInput(inputs, row.decl.name, Shape(row.decl.name), want);
    if (!found.ok()) return found.status();
    row.input = row.converted != nullptr ? row.converted.get() : *found;
  }
  return absl::OkStatus();
}

const HostArray& HostIo::In(absl::string_view name) const {
  static const HostArray* const kNone = new HostArray;
  const HostArray* input = Optional(name);
  return input != nullptr ? *input : *kNone;
}

const HostArray* HostIo::Optional(absl::string_view name) const {
  const Row* row = Find(name);
  return row != nullptr ? row->input : nullptr;
}

HostArray HostIo::Zeros(absl::string_view name) const {
  HostArray array;
  array.name = std::string(name);
  const Row* row = Find(name);
  if (row == nullptr) return array;
  array.dtype = HostDType(row->decl);
  array.shape = Shape(name);
  if (array.dtype == proto::INT32) {
    array.i32.assign(array.num_elements(), 0);
  } else if (array.dtype == proto::UINT16) {
    array.u16.assign(array.num_elements(), 0);
  } else {
    array.f32.assign(array.num_elements(), 0.0f);
  }
  return array;
}

}  // namespace nkigraph::kernels
