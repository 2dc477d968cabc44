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

proto::DType HostDType(proto::DType dtype) {
  return IsFloatDType(dtype) ? proto::FLOAT32 : proto::INT32;
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

// --- HostIo ------------------------------------------------------------------

HostIo::HostIo(std::vector<IoDecl> decls, int64_t num_ranks)
    : decls_(std::move(decls)), num_ranks_(num_ranks) {}

const IoDecl* HostIo::Decl(absl::string_view name) const {
  for (const IoDecl& decl : decls_) {
    if (decl.name == name) return &decl;
  }
  return nullptr;
}

std::vector<int64_t> HostIo::Shape(absl::string_view name) const {
  const IoDecl* decl = Decl(name);
  if (decl == nullptr) return {};
  std::vector<int64_t> shape;
  if (decl->per_rank && num_ranks_ > 1) shape.push_back(num_ranks_);
  shape.insert(shape.end(), decl->shape.begin(), decl->shape.end());
  return shape;
}

absl::StatusOr<const HostArray*> HostIo::Find(
    const std::vector<HostArray>& inputs, absl::string_view name) const {
  const IoDecl* decl = Decl(name);
  if (decl == nullptr || decl->role == IoRole::kOutput) {
    return absl::InternalError(
        absl::StrCat("no input '", name, "' in the kernel's I/O table"));
  }
  if (!decl->present) return nullptr;
  return FindHostInput(inputs, decl->name, Shape(name), HostDType(decl->dtype));
}

HostArray HostIo::Zeros(absl::string_view name) const {
  HostArray array;
  array.name = std::string(name);
  const IoDecl* decl = Decl(name);
  if (decl == nullptr) return array;
  array.dtype = HostDType(decl->dtype);
  array.shape = Shape(name);
  if (array.dtype == proto::INT32) {
    array.i32.assign(array.num_elements(), 0);
  } else {
    array.f32.assign(array.num_elements(), 0.0f);
  }
  return array;
}

}  // namespace nkigraph::kernels
