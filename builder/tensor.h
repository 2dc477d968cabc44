#ifndef NKIGRAPH_BUILDER_TENSOR_H_
#define NKIGRAPH_BUILDER_TENSOR_H_

#include <cstdint>
#include <initializer_list>
#include <source_location>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "ops/access_pattern.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::builder {

class Tracer;

using Shape = std::vector<int64_t>;
using proto::DType;

enum class Buffer { kHbm, kSharedHbm, kSbuf, kPsum };
proto::MemorySpace SpaceOf(Buffer buffer);

enum class OobMode { kError, kSkip };

// Where in kernel source a call was made; every DSL entry point takes one
// as its last, defaulted argument so errors name the kernel's line.
using Loc = std::source_location;

// A view of a traced tensor: the tensor, a static offset and [stride, count]
// dims, in elements of the tensor's row-major layout; optionally a dynamic
// offset read at run time. Views are free: slicing, reshaping and permuting
// only change the pattern, and an ISA call turns the view into an operand's
// access pattern. For on-chip tensors dim 0 is the partition dim; views
// keep it first.
//
// A default-constructed Tensor is invalid; ISA calls on it record an error.
// Kernel code keeps running after a trace error, so an invalid view is safe
// to inspect: rank 0, dim(d) and num_elements() 0, an empty declaration
// (no name, no dtype).
class Tensor {
 public:
  struct Dim {
    int64_t stride;
    int64_t count;
  };
  using Dims = absl::InlinedVector<Dim, 6>;

  Tensor() = default;

  bool valid() const { return tracer_ != nullptr; }
  Tracer* tracer() const { return tracer_; }
  uint32_t id() const { return id_; }
  const proto::Tensor& decl() const;  // the declaration in the graph
  const std::string& name() const { return decl().name(); }
  // The dtype the view reads the bytes as: the tensor's, or a bitcast's.
  DType dtype() const {
    return view_dtype_ != proto::DTYPE_UNSPECIFIED ? view_dtype_
                                                   : decl().dtype();
  }
  proto::MemorySpace space() const { return decl().space(); }

  int rank() const { return static_cast<int>(pattern_.size() / 2); }
  // The count of dim `d`; 0 past the view's rank.
  int64_t dim(int d) const {
    return d >= 0 && d < rank() ? pattern_[2 * d + 1] : 0;
  }
  Shape shape() const;
  int64_t num_elements() const;
  int64_t offset() const { return offset_; }
  Dims dims() const;

  // Elements [start, start + size) of dim `d`, every `step`-th.
  Tensor Slice(int d, int64_t start, int64_t size, int64_t step = 1,
               Loc loc = Loc::current()) const;
  // Element `index` of dim `d`; the dim is dropped (kept with count 1 for
  // the partition dim of an on-chip tensor).
  Tensor Select(int d, int64_t index, Loc loc = Loc::current()) const;
  // Reinterprets the view's elements (in row-major view order) under a new
  // shape without copying; refused when the strides cannot express it.
  Tensor Reshape(const Shape& shape, Loc loc = Loc::current()) const;
  // Reorders dims; an on-chip view must keep dim 0 first.
  Tensor Permute(const std::vector<int>& order, Loc loc = Loc::current()) const;
  // Inserts a dim of `count` with stride 0 before dim `d` (reads the same
  // elements `count` times).
  Tensor Broadcast(int d, int64_t count, Loc loc = Loc::current()) const;
  // A raw pattern: `pattern` is [[stride, count], ...] outermost first, over
  // the tensor's flat elements, starting at `offset`.
  Tensor Ap(const std::vector<std::pair<int64_t, int64_t>>& pattern,
            int64_t offset, Loc loc = Loc::current()) const;

  // One dynamic offset for the whole access: element 0 of `index` (a
  // one-element int32 view) selects an index along `indirect_dim` of this
  // tensor, added to the view's offset at run time.
  Tensor WithScalarOffset(const Tensor& index, int indirect_dim,
                          OobMode oob = OobMode::kError,
                          Loc loc = Loc::current()) const;
  // One dynamic offset per index of dim 0: entry i of `index` (int32, one
  // element per dim-0 index) selects the row along `indirect_dim` that
  // iteration i of dim 0 reads or writes. Rows out of range are an error,
  // or skipped with OobMode::kSkip.
  Tensor WithVectorOffset(const Tensor& index, int indirect_dim,
                          OobMode oob = OobMode::kError,
                          Loc loc = Loc::current()) const;

  // The same bytes read as `dtype`, bit for bit (no numeric conversion):
  // the innermost dim must be contiguous (or a single element), and its
  // bytes are re-counted in `dtype`'s element size, so the last dim's count
  // changes (two bfloat16 columns of a row read as one int32) and offsets
  // and strides re-scale. Refused when the bytes do not divide: the view's
  // offset, outer strides or last count, or the tensor's last dim, or an
  // on-chip view whose only dim is the partition dim. Bitcasting back to
  // the tensor's own dtype gives a plain view. Recorded in the operand
  // (AccessPattern.view_dtype).
  Tensor Bitcast(DType dtype, Loc loc = Loc::current()) const;

  // The operand form of this view, as a message.
  void ToAccessPattern(proto::AccessPattern* ap) const;
  // The same without a message or a copy (what the tracer checks and
  // writes): `*ref` points at this view's [stride, count] pairs, so it is
  // valid while this view lives and is not changed.
  void ToPattern(ops::PatternRef* ref) const;

 private:
  friend class Tracer;
  // The whole tensor, compact row-major.
  static Tensor FullView(Tracer* tracer, uint32_t id);
  // The [stride, count] pairs, 2 * rank values, outermost first.
  using Pattern = absl::InlinedVector<int64_t, 2 * 6>;
  Tensor(Tracer* tracer, uint32_t id, int64_t offset, Pattern pattern)
      : tracer_(tracer),
        id_(id),
        offset_(offset),
        pattern_(std::move(pattern)) {}
  // Records `message` as the trace's error at `loc`; returns an invalid view.
  Tensor Invalid(const std::string& message, Loc loc) const;
  int64_t stride(int d) const { return pattern_[2 * d]; }
  int64_t count(int d) const { return pattern_[2 * d + 1]; }
  void set_dim(int d, Dim dim) {
    pattern_[2 * d] = dim.stride;
    pattern_[2 * d + 1] = dim.count;
  }
  void set_dims(const Dims& dims);
  bool has_dynamic() const {
    return dynamic_.kind != proto::DynamicOffset::KIND_UNSPECIFIED;
  }

  Tracer* tracer_ = nullptr;
  uint32_t id_ = 0;
  int64_t offset_ = 0;
  // Held as an operand's pattern is, so that an ISA call reads it in place.
  Pattern pattern_;
  // DTYPE_UNSPECIFIED: the tensor's own; otherwise the bitcast's, in whose
  // elements offset_ and pattern_ count.
  DType view_dtype_ = proto::DTYPE_UNSPECIFIED;
  // kind KIND_UNSPECIFIED: no dynamic offset.
  ops::DynamicRef dynamic_;
};

}  // namespace nkigraph::builder

#endif  // NKIGRAPH_BUILDER_TENSOR_H_
