#ifndef NKIGRAPH_OPS_EXEC_CONTEXT_H_
#define NKIGRAPH_OPS_EXEC_CONTEXT_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
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

  // Writes fp32 values to operand `i`, rounded to its dtype.
  virtual absl::Status WriteFloat(int i, absl::Span<const float> values) = 0;
  // Writes integers to operand `i`, converted to its dtype (saturating).
  virtual absl::Status WriteInt(int i, absl::Span<const int64_t> values) = 0;
  // Writes raw element bytes; the element size must be the operand's.
  virtual absl::Status WriteRaw(int i, absl::Span<const uint8_t> bytes) = 0;

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
