#include "builder/tensor.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "builder/tracer.h"
#include "ops/access_pattern.h"
#include "util/dtype.h"

namespace nkigraph::builder {
namespace {

std::string ShapeString(const Shape& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

proto::DynamicOffset::OobMode OobModeOf(OobMode oob) {
  return oob == OobMode::kSkip ? proto::DynamicOffset::OOB_SKIP
                               : proto::DynamicOffset::OOB_ERROR;
}

}  // namespace

const proto::Tensor& Tensor::decl() const {
  if (tracer_ == nullptr) return proto::Tensor::default_instance();
  return tracer_->decl(id_);
}

Shape Tensor::shape() const {
  Shape shape;
  shape.reserve(rank());
  for (int d = 0; d < rank(); ++d) shape.push_back(count(d));
  return shape;
}

int64_t Tensor::num_elements() const {
  if (!valid()) return 0;
  return ops::ApElements(pattern_.data(), static_cast<int>(pattern_.size()));
}

Tensor::Dims Tensor::dims() const {
  Dims dims(rank());
  for (int d = 0; d < rank(); ++d) dims[d] = Dim{stride(d), count(d)};
  return dims;
}

void Tensor::set_dims(const Dims& dims) {
  pattern_.resize(2 * dims.size());
  for (size_t d = 0; d < dims.size(); ++d)
    set_dim(static_cast<int>(d), dims[d]);
}

Tensor Tensor::Invalid(const std::string& message, Loc loc) const {
  if (tracer_ != nullptr) tracer_->RecordError(message, loc);
  return Tensor();
}

Tensor Tensor::FullView(Tracer* tracer, uint32_t id) {
  const proto::Tensor& t = tracer->decl(id);
  const int rank = t.shape_size();
  const int64_t* shape = t.shape().data();
  Pattern pattern(2 * rank);
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    pattern[2 * d] = stride;
    pattern[2 * d + 1] = shape[d];
    stride *= shape[d];
  }
  return Tensor(tracer, id, 0, std::move(pattern));
}

Tensor Tensor::Slice(int d, int64_t start, int64_t size, int64_t step,
                     Loc loc) const {
  if (!valid()) return Tensor();
  if (d < 0 || d >= rank()) {
    return Invalid(absl::StrCat("Slice of '", name(), "': dim ", d,
                                " is not in a view of rank ", rank()),
                   loc);
  }
  if (start < 0 || size < 1 || step < 1 ||
      start + (size - 1) * step >= count(d)) {
    return Invalid(absl::StrCat("Slice of '", name(), "' dim ", d, ": [", start,
                                ", ", start + (size - 1) * step, "] step ",
                                step, " is outside [0, ", count(d), ")"),
                   loc);
  }
  Tensor view = *this;
  view.offset_ += start * stride(d);
  view.set_dim(d, Dim{stride(d) * step, size});
  return view;
}

Tensor Tensor::Select(int d, int64_t index, Loc loc) const {
  Tensor view = Slice(d, index, 1, 1, loc);
  if (!view.valid()) return view;
  const bool keep = d == 0 && ops::IsOnChip(space());
  if (!keep && view.rank() > 1) {
    view.pattern_.erase(view.pattern_.begin() + 2 * d,
                        view.pattern_.begin() + 2 * d + 2);
  }
  return view;
}

Tensor Tensor::Reshape(const Shape& new_shape, Loc loc) const {
  if (!valid()) return Tensor();
  int64_t new_elements = 1;
  for (int64_t d : new_shape) {
    if (d < 1) {
      return Invalid(
          absl::StrCat("Reshape of '", name(), "' to ", ShapeString(new_shape),
                       ": dims must be positive"),
          loc);
    }
    new_elements *= d;
  }
  if (new_shape.empty() || new_elements != num_elements()) {
    return Invalid(
        absl::StrCat("Reshape of '", name(), "' from ", ShapeString(shape()),
                     " to ", ShapeString(new_shape), ": element counts differ"),
        loc);
  }
  // On chip, the partition dim stays as it is; only free dims reshape.
  const int fixed = ops::IsOnChip(space()) ? 1 : 0;
  if (fixed == 1 && new_shape[0] != count(0)) {
    return Invalid(
        absl::StrCat("Reshape of on-chip '", name(), "' from ",
                     ShapeString(shape()), " to ", ShapeString(new_shape),
                     " changes the partition dim"),
        loc);
  }
  // Old dims without unit dims, then numpy's no-copy reshape: group old
  // and new dims into runs of equal size; a run of old dims must be
  // contiguous with respect to each other.
  Dims old_dims;
  for (int d = fixed; d < rank(); ++d) {
    if (count(d) != 1) old_dims.push_back(Dim{stride(d), count(d)});
  }
  Dims result(new_shape.size());
  for (int d = 0; d < fixed; ++d) result[d] = Dim{stride(d), count(d)};
  size_t oi = 0;
  size_t ni = fixed;
  while (ni < new_shape.size() && oi < old_dims.size()) {
    size_t oj = oi + 1;
    size_t nj = ni + 1;
    int64_t np = new_shape[ni];
    int64_t op = old_dims[oi].count;
    while (np != op) {
      if (np < op) {
        np *= new_shape[nj++];
      } else {
        op *= old_dims[oj++].count;
      }
    }
    for (size_t k = oi; k + 1 < oj; ++k) {
      if (old_dims[k].stride !=
          old_dims[k + 1].count * old_dims[k + 1].stride) {
        return Invalid(
            absl::StrCat("Reshape of '", name(), "' from ",
                         ShapeString(shape()), " to ", ShapeString(new_shape),
                         ": the view's strides cannot express it "
                         "without a copy"),
            loc);
      }
    }
    result[nj - 1] = Dim{old_dims[oj - 1].stride, new_shape[nj - 1]};
    for (size_t k = nj - 1; k > ni; --k) {
      result[k - 1] = Dim{result[k].stride * new_shape[k], new_shape[k - 1]};
    }
    ni = nj;
    oi = oj;
  }
  for (; ni < new_shape.size(); ++ni) result[ni] = Dim{1, new_shape[ni]};
  Tensor view = *this;
  view.set_dims(result);
  return view;
}

Tensor Tensor::Permute(const std::vector<int>& order, Loc loc) const {
  if (!valid()) return Tensor();
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> identity(rank());
  std::iota(identity.begin(), identity.end(), 0);
  if (sorted != identity) {
    return Invalid(
        absl::StrCat("Permute of '", name(), "': [", absl::StrJoin(order, ", "),
                     "] is not a permutation of ", rank(), " dims"),
        loc);
  }
  if (ops::IsOnChip(space()) && order[0] != 0) {
    return Invalid(absl::StrCat("Permute of on-chip '", name(),
                                "' must keep the partition dim first"),
                   loc);
  }
  Tensor view = *this;
  for (int d = 0; d < rank(); ++d) {
    view.set_dim(d, Dim{stride(order[d]), count(order[d])});
  }
  return view;
}

Tensor Tensor::Broadcast(int d, int64_t count, Loc loc) const {
  if (!valid()) return Tensor();
  const int first = ops::IsOnChip(space()) ? 1 : 0;
  if (d < first || d > rank() || count < 1) {
    return Invalid(absl::StrCat("Broadcast of '", name(), "': cannot insert ",
                                count, " copies at dim ", d),
                   loc);
  }
  Tensor view = *this;
  const int64_t inserted[2] = {0, count};
  view.pattern_.insert(view.pattern_.begin() + 2 * d, inserted, inserted + 2);
  return view;
}

Tensor Tensor::Ap(const std::vector<std::pair<int64_t, int64_t>>& pattern,
                  int64_t offset, Loc loc) const {
  if (!valid()) return Tensor();
  if (pattern.empty()) {
    return Invalid(absl::StrCat("Ap of '", name(), "': empty pattern"), loc);
  }
  Tensor view = *this;
  view.offset_ = offset;
  view.pattern_.clear();
  for (const auto& [stride, count] : pattern) {
    view.pattern_.push_back(stride);
    view.pattern_.push_back(count);
  }
  return view;
}

Tensor Tensor::WithScalarOffset(const Tensor& index, int indirect_dim,
                                OobMode oob, Loc loc) const {
  if (!valid()) return Tensor();
  if (!index.valid() || index.num_elements() != 1) {
    return Invalid(absl::StrCat("scalar offset into '", name(),
                                "' must be a one-element index view"),
                   loc);
  }
  if (indirect_dim < 0 || indirect_dim >= decl().shape_size()) {
    return Invalid(absl::StrCat("indirect_dim ", indirect_dim,
                                " is not a dim of '", name(), "'"),
                   loc);
  }
  Tensor view = *this;
  view.dynamic_ = ops::DynamicRef{
      proto::DynamicOffset::SCALAR,        index.id(),    index.offset(), 0,
      static_cast<uint32_t>(indirect_dim), OobModeOf(oob)};
  return view;
}

Tensor Tensor::WithVectorOffset(const Tensor& index, int indirect_dim,
                                OobMode oob, Loc loc) const {
  if (!valid()) return Tensor();
  if (!index.valid() || index.num_elements() != count(0)) {
    return Invalid(
        absl::StrCat("vector offset into '", name(),
                     "' needs one index per dim-0 entry (", count(0), ")"),
        loc);
  }
  if (indirect_dim < 0 || indirect_dim >= decl().shape_size()) {
    return Invalid(absl::StrCat("indirect_dim ", indirect_dim,
                                " is not a dim of '", name(), "'"),
                   loc);
  }
  int64_t entry_stride = 0;
  int non_unit = 0;
  for (int d = 0; d < index.rank(); ++d) {
    if (index.count(d) > 1) {
      entry_stride = index.stride(d);
      ++non_unit;
    }
  }
  if (non_unit > 1) {
    return Invalid(absl::StrCat("vector offset index '", index.name(),
                                "' must be a 1-D run of elements"),
                   loc);
  }
  Tensor view = *this;
  // The index selects the row; dim 0 itself no longer moves along it.
  if (indirect_dim == 0) view.pattern_[0] = 0;
  view.dynamic_ = ops::DynamicRef{proto::DynamicOffset::VECTOR,
                                  index.id(),
                                  index.offset(),
                                  entry_stride,
                                  static_cast<uint32_t>(indirect_dim),
                                  OobModeOf(oob)};
  return view;
}

Tensor Tensor::Bitcast(DType dtype, Loc loc) const {
  if (!valid()) return Tensor();
  const DType from = this->dtype();
  const int from_size = DTypeSize(from);
  const int to_size = IsValidDType(dtype) ? DTypeSize(dtype) : 0;
  auto refuse = [&](const std::string& why) {
    return Invalid(
        absl::StrCat("Bitcast of '", name(), "' (", DTypeName(from), " ",
                     ShapeString(shape()), ") as ",
                     to_size > 0 ? DTypeName(dtype) : "?", ": ", why),
        loc);
  };
  if (to_size == 0) return refuse("not a dtype");
  const int first_free = ops::IsOnChip(space()) ? 1 : 0;
  if (rank() <= first_free) {
    return refuse("an on-chip view needs a free dim to reinterpret");
  }
  proto::Tensor viewed;
  if (absl::Status s = ops::ViewedTensor(decl(), dtype, &viewed); !s.ok()) {
    return refuse(std::string(s.message()));
  }
  const Dim last{stride(rank() - 1), count(rank() - 1)};
  if (last.count > 1 && last.stride != 1) {
    return refuse(absl::StrCat("its last dim (stride ", last.stride,
                               ") is not contiguous"));
  }
  Tensor view = *this;
  view.view_dtype_ = dtype == decl().dtype() ? proto::DTYPE_UNSPECIFIED : dtype;
  if (to_size == from_size) return view;
  // Everything counted in `from` elements re-counts in `to` elements:
  // multiply by from/to when narrowing, divide by to/from when widening.
  const int64_t last_bytes = last.count * from_size;
  auto rescale = [&](int64_t elements, const char* what, int64_t* out) -> bool {
    const int64_t bytes = elements * from_size;
    if (bytes % to_size != 0) {
      refuse(absl::StrCat("its ", what, " (", elements, " ", DTypeName(from),
                          " elements) is not a whole number of ",
                          DTypeName(dtype), " elements"));
      return false;
    }
    *out = bytes / to_size;
    return true;
  };
  if (last_bytes % to_size != 0) {
    return refuse(absl::StrCat("its last dim's ", last_bytes,
                               " bytes are not a whole number of ",
                               DTypeName(dtype), " elements"));
  }
  if (!rescale(offset_, "offset", &view.offset_)) return Tensor();
  for (int d = 0; d + 1 < rank(); ++d) {
    if (!rescale(stride(d), "stride of an outer dim", &view.pattern_[2 * d])) {
      return Tensor();
    }
  }
  view.set_dim(rank() - 1, Dim{1, last_bytes / to_size});
  return view;
}

void Tensor::ToAccessPattern(proto::AccessPattern* ap) const {
  // Every field is written: the tracer reuses `ap` from an earlier
  // instruction.
  ap->set_tensor_id(id_);
  ap->set_offset(offset_);
  ap->set_view_dtype(view_dtype_);
  if (view_dtype_ != proto::DTYPE_UNSPECIFIED) {
    tracer_->RequireSchemaVersion(proto::SCHEMA_VERSION_VIEW_DTYPE);
  }
  auto* pattern = ap->mutable_pattern();
  pattern->Clear();
  pattern->Add(pattern_.begin(), pattern_.end());
  if (has_dynamic()) {
    proto::DynamicOffset* dyn = ap->mutable_dynamic();
    dyn->set_kind(dynamic_.kind);
    dyn->set_tensor_id(dynamic_.tensor_id);
    dyn->set_offset_element(dynamic_.offset_element);
    dyn->set_offset_stride(dynamic_.offset_stride);
    dyn->set_indirect_dim(dynamic_.indirect_dim);
    dyn->set_oob_mode(dynamic_.oob_mode);
  } else if (ap->has_dynamic()) {
    ap->clear_dynamic();
  }
}

void Tensor::ToPattern(ops::PatternRef* ref) const {
  ref->tensor_id = id_;
  ref->offset = offset_;
  ref->view_dtype = view_dtype_;
  if (view_dtype_ != proto::DTYPE_UNSPECIFIED) {
    tracer_->RequireSchemaVersion(proto::SCHEMA_VERSION_VIEW_DTYPE);
  }
  ref->pattern = pattern_.data();
  ref->pattern_size = static_cast<int>(pattern_.size());
  ref->has_dynamic = has_dynamic();
  ref->dynamic = dynamic_;
}

}  // namespace nkigraph::builder
