#ifndef NKIGRAPH_OPS_EXEC_CONTEXT_H_
#define NKIGRAPH_OPS_EXEC_CONTEXT_H_

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ops/block_copy.h"
#include "ops/instr_view.h"

namespace nkigraph::ops {

// What an op's semantics see of the machine while one instruction of one
// program (rank, core) executes. The interpreter implements it; it owns
// bounds, initialisation, race and clobber tracking, so op code only says
// what the instruction computes.
//
// Element order: an operand's elements are enumerated row-major over its
// access pattern's dims (dim 0, for on-chip operands, is the partition).
// Rows skipped by an OOB_SKIP dynamic offset read as zero, and writes to
// the same element positions of every operand are dropped for the rest of
// the instruction, so a skipped gather row leaves its destination alone.
class ExecContext {
 public:
  virtual ~ExecContext() = default;

  virtual const InstrView& view() const = 0;
  virtual int rank() const = 0;
  virtual int core() const = 0;

  // Reads operand `i` converted to fp32. Valid until the instruction ends.
  virtual absl::StatusOr<absl::Span<const float>> ReadFloat(int i) = 0;
  // Reads operand `i` as integers (exact for integer dtypes; floats
  // rounded to nearest).
  virtual absl::StatusOr<absl::Span<const int64_t>> ReadInt(int i) = 0;
  // Reads operand `i` as raw element bytes (dtype-sized elements).
  virtual absl::StatusOr<absl::Span<const uint8_t>> ReadRaw(int i) = 0;

  // Operand `i` where it lies, when its elements are `rows` runs of `cols`
  // contiguous elements `stride` bytes apart in device memory (the
  // partition rows of an on-chip tile, a block of an HBM matrix) and no
  // dynamic offset or skipped row is involved: checked as ReadRaw checks
  // it, and valid until the instruction ends. `data` is null when the
  // operand is laid out otherwise (ReadFloat / ReadRaw then). For hot ops
  // that would otherwise copy large operands.
  struct Rows {
    const uint8_t* data = nullptr;
    int64_t rows = 0;
    int64_t cols = 0;
    int64_t stride = 0;  // bytes from one row's start to the next's
  };
  virtual absl::StatusOr<Rows> ReadRows(int i) = 0;

  // Operand `i` where it lies as a block of rows of elements in element
  // order (ops::StridedBlock: any strides, so also a transposed view), when
  // its access pattern has no dynamic offset and at most two dims that do
  // not merge: checked as ReadRaw checks it, and valid until the
  // instruction ends. `data` is null, and nothing is checked, when the
  // operand is laid out otherwise (ReadRaw then). A context may always say
  // so; the default does.
  virtual absl::StatusOr<ConstBlock> ReadBlock(int /*i*/) {
    return ConstBlock{};
  }
  // Operand `i` to overwrite in place, as a block of rows of `cols`
  // elements (see ReshapeToCols), marked written now, for the caller to
  // fill every element of before the instruction ends. Null (nothing
  // marked) when it does not lie so, or when its write could fail part
  // way (a dynamic offset, a shared tensor the race detector follows):
  // WriteRaw then. The default always says so.
  virtual MutableBlock WriteBlockInPlace(int /*i*/, int64_t /*cols*/) {
    return MutableBlock{};
  }

  // The float32 PSUM operand `i` of a matmul, in place: `rows` runs of
  // `cols` floats `stride` floats apart, for the caller to overwrite
  // (accumulate=false) or add into (accumulate=true) right away; marked
  // written by a matmul as MatmulWrite would. `data` is null, and nothing
  // is marked, when the operand is laid out otherwise or an accumulation
  // would fail: MatmulWrite then says why.
  struct MatmulRows {
    float* data = nullptr;
    int64_t rows = 0;
    int64_t cols = 0;
    int64_t stride = 0;  // floats
  };
  virtual MatmulRows MatmulInPlace(int i, bool accumulate) = 0;

  // An on-chip float32 operand `i` to write in place, when it lies in rows
  // (as ReadRows): marked written now, for the caller to fill every
  // element of before the instruction ends; null (nothing marked) when it
  // does not lie so. On chip nothing can refuse a write (no races there),
  // so an op that asks for this last, after its reads, behaves as with
  // WriteFloat. Each element's value must depend only on the same element
  // of the operands it overlaps (an element-wise op), see InPlaceSafe.
  struct MutableRows {
    float* data = nullptr;
    int64_t rows = 0;
    int64_t cols = 0;
    int64_t stride = 0;  // floats
    float* row(int64_t r) const { return data + r * stride; }
  };
  virtual MutableRows WriteFloatInPlace(int i) = 0;

  // An element-wise op's float32 operands all in place, in one call: the
  // sources `srcs` read as ReadRows reads them (checked, in order) and
  // operand `dst` written as WriteFloatInPlace writes it (marked written,
  // after the checks), when every one of them lies in rows of the same
  // rows and columns, `dst` on chip, and each source is apart from `dst`
  // or the same elements (ops::InPlaceSafe). Otherwise `dst.data` is null
  // and nothing is checked or marked: the op reads and writes the general
  // way (ReadFloatRows, FloatDestination). The default always says so.
  // For ops on tiles of a few elements, where the separate calls would
  // cost more than the arithmetic.
  static constexpr int kMaxElementwiseSources = 3;
  struct ElementwiseRows {
    MutableRows dst;
    const float* src[kMaxElementwiseSources] = {};
    int64_t src_stride[kMaxElementwiseSources] = {};  // floats
    const float* src_row(int s, int64_t r) const {
      return src[s] + r * src_stride[s];
    }
  };
  virtual absl::Status ElementwiseInPlace(int /*dst*/,
                                          std::initializer_list<int> /*srcs*/,
                                          ElementwiseRows* rows) {
    *rows = {};
    return absl::OkStatus();
  }

  // Writes fp32 values to operand `i`, rounded to its dtype.
  virtual absl::Status WriteFloat(int i, absl::Span<const float> values) = 0;
  // Writes integers to operand `i`, converted to its dtype (saturating).
  virtual absl::Status WriteInt(int i, absl::Span<const int64_t> values) = 0;
  // Writes raw element bytes; the element size must be the operand's.
  virtual absl::Status WriteRaw(int i, absl::Span<const uint8_t> bytes) = 0;
  // The same from rows of elements of the operand's size (a ReadRows
  // result, in element order), which must not overlap the operand.
  virtual absl::Status WriteRawRows(int i, const Rows& rows) = 0;

  // A matmul result into PSUM operand `i`. accumulate=false overwrites and
  // opens an accumulation group; accumulate=true adds in fp32 and is an
  // error where no matmul opened a group (uninitialised PSUM, or PSUM last
  // written by another instruction).
  virtual absl::Status MatmulWrite(int i, absl::Span<const float> values,
                                   bool accumulate) = 0;

  // The engine's per-partition 32-bit accumulation registers (activation
  // reduce_cmd), which persist across instructions of this core.
  virtual absl::Span<float> ReduceRegisters(Engine engine) = 0;

  // Per-instruction scratch buffers, reused across instructions so hot
  // paths do not allocate.
  virtual std::vector<float>& ScratchFloat(int slot) = 0;
  virtual std::vector<int64_t>& ScratchInt(int slot) = 0;
};

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_EXEC_CONTEXT_H_
