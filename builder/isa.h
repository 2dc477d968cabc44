#ifndef NKIGRAPH_BUILDER_ISA_H_
#define NKIGRAPH_BUILDER_ISA_H_

// The ISA calls of the DSL, destination first as in current NKI. Each
// records one instruction into the active trace after the op's checks
// (ops/defs/<name>.cc) pass; a failed check becomes the trace's error, naming
// the calling kernel line. Names follow nki.isa so kernels read like the
// design notes.

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "builder/tensor.h"
#include "builder/tracer.h"
#include "ops/activation_functions.h"
#include "ops/alu.h"
#include "ops/op_def.h"

namespace nkigraph::builder::isa {

using ops::ActFunc;
using ops::Alu;
using ops::Engine;

// An immediate or a per-partition [P, 1] column.
struct Scalar {
  Scalar(float v) : value(v) {}  // NOLINT: implicit by design
  Scalar(double v) : value(static_cast<float>(v)) {}  // NOLINT
  Scalar(int v) : value(static_cast<float>(v)) {}     // NOLINT
  Scalar(const Tensor& t) : vector(t) {}              // NOLINT
  float value = 0.0f;
  Tensor vector;
};

using Pattern = std::vector<std::pair<int64_t, int64_t>>;  // [step, num]

Instr nc_matmul(const Tensor& dst, const Tensor& stationary,
                const Tensor& moving, bool accumulate = false,
                Loc loc = Loc::current());

// Tensor engine: data [P<=128, F<=128] in SBUF to dst [F, P] in PSUM;
// vector engine: up to 32 x 32, SBUF or PSUM.
Instr nc_transpose(const Tensor& dst, const Tensor& data,
                   Engine engine = Engine::kTensor, Loc loc = Loc::current());

enum class ReduceCmd { kIdle, kReset, kReduce, kResetReduce };

struct ActivationArgs {
  Scalar bias = 0.0f;   // immediate or [P, 1] fp32 column
  Scalar scale = 1.0f;  // immediate or [P, 1] fp32 column
  ReduceCmd reduce_cmd = ReduceCmd::kIdle;
  Tensor reduce_res =
      Tensor();  // [P, 1]: the accumulation registers after this call
};

// dst = func(data * scale + bias).
Instr activation(const Tensor& dst, ActFunc func, const Tensor& data,
                 const ActivationArgs& args = {}, Loc loc = Loc::current());

// dst = data1 op data2, elementwise.
Instr tensor_tensor(const Tensor& dst, const Tensor& data1, const Tensor& data2,
                    Alu op, Loc loc = Loc::current());

struct TensorScalarArgs {
  bool reverse0 = false;
  std::optional<Alu> op1;
  Scalar operand1 = 0.0f;
  bool reverse1 = false;
};

// dst = (data op0 operand0) op1 operand1; an operand is an immediate or a
// [P, 1] column broadcast along the free dims; reverse swaps its sides.
Instr tensor_scalar(const Tensor& dst, const Tensor& data, Alu op0,
                    const Scalar& operand0, const TensorScalarArgs& args = {},
                    Loc loc = Loc::current());

// dst = (data op0 operand0) op1 operand1, on the vector engine: operand0 is
// an immediate or a [P, 1] column broadcast along the free dims, operand1 a
// tile shaped like data; reverseN swaps op N's sides (operand0 op0 data,
// operand1 op1 ...). Arithmetic ops only, in fp32.
Instr scalar_tensor_tensor(const Tensor& dst, const Tensor& data, Alu op0,
                           const Scalar& operand0, Alu op1,
                           const Tensor& operand1, bool reverse0 = false,
                           bool reverse1 = false, Loc loc = Loc::current());

// An inclusive scan along each partition's free elements, on the vector
// engine: r = (data0[i] op0 r) op1 data1[i], dst[i] = r, r starting at
// `initial` (an immediate or a [P, 1] column); reverseN swaps op N's sides.
// Arithmetic ops only, in fp32.
Instr tensor_tensor_scan(const Tensor& dst, const Tensor& data0,
                         const Tensor& data1, const Scalar& initial, Alu op0,
                         Alu op1, bool reverse0 = false, bool reverse1 = false,
                         Loc loc = Loc::current());

// dst = data op0 operand0 (as tensor_scalar with one arithmetic op), and
// reduce_res [P, 1] = reduce_op over each partition's results (add,
// subtract, multiply, maximum or minimum).
Instr tensor_scalar_reduce(const Tensor& dst, const Tensor& data, Alu op0,
                           const Scalar& operand0, Alu reduce_op,
                           const Tensor& reduce_res, bool reverse0 = false,
                           Loc loc = Loc::current());

// dst [P, 6] = (count, mean, variance * count) of data's even, then odd,
// free elements, per partition (at most bn_stats_fmax = 512 of them).
Instr bn_stats(const Tensor& dst, const Tensor& data, Loc loc = Loc::current());

// dst [P, 2] = the mean and variance that data's bn_stats triples make.
Instr bn_aggr(const Tensor& dst, const Tensor& data, Loc loc = Loc::current());

// Reduces the last `num_axes` dims of data's view with op into dst.
Instr tensor_reduce(const Tensor& dst, Alu op, const Tensor& data,
                    int num_axes = 1, bool negate = false,
                    Loc loc = Loc::current());

Instr tensor_copy(const Tensor& dst, const Tensor& src,
                  Engine engine = Engine::kVector, Loc loc = Loc::current());

// dst = src where predicate (uint8/16/32, shaped like dst) is non-zero
// (zero with reverse_pred), dst unchanged elsewhere; src is a tile of dst's
// dtype (copied bit for bit) or an immediate.
Instr tensor_copy_predicated(const Tensor& dst, const Scalar& src,
                             const Tensor& predicate, bool reverse_pred = false,
                             Loc loc = Loc::current());

// dst[p, i...] = offset + p * channel_multiplier + sum(step_d * i_d).
Instr iota(const Tensor& dst, const Pattern& pattern, int64_t offset = 0,
           int64_t channel_multiplier = 0, Loc loc = Loc::current());

Instr memset(const Tensor& dst, float value, Engine engine = Engine::kVector,
             Loc loc = Loc::current());

// dst = cmp_op(affine, 0) ? on_true : on_false_value, with affine built as
// in iota.
Instr affine_select(const Tensor& dst, const Pattern& pattern,
                    int64_t channel_multiplier, const Tensor& on_true,
                    float on_false_value, Alu cmp_op = Alu::kEqual,
                    int64_t offset = 0, Loc loc = Loc::current());

Instr dma_copy(const Tensor& dst, const Tensor& src, Loc loc = Loc::current());

// dst = src with its dims permuted by `axes` (2-byte dtypes; dst in SBUF).
Instr dma_transpose(const Tensor& dst, const Tensor& src,
                    const std::vector<int>& axes = {1, 0},
                    Loc loc = Loc::current());

// dst = sum(srcs), or dst += sum(srcs) with accumulate (read-modify-write
// inside the DMA engine).
Instr dma_compute(const Tensor& dst, const std::vector<Tensor>& srcs,
                  bool accumulate = true, Loc loc = Loc::current());

// Per partition, the index of the first occurrence of each of vals' 8
// values in data (all-ones when absent); a repeated value takes the next
// occurrence after the one its previous copy found.
Instr nc_find_index8(const Tensor& dst, const Tensor& data, const Tensor& vals,
                     Loc loc = Loc::current());

// Per partition, the 8 largest values in descending order.
Instr max8(const Tensor& dst, const Tensor& src, Loc loc = Loc::current());

// Moves partitions inside each 32-partition quadrant: dst partition i of a
// quadrant takes src partition mask[i] (255: leave dst unchanged).
Instr nc_stream_shuffle(const Tensor& dst, const Tensor& src,
                        const std::vector<int64_t>& mask,
                        Loc loc = Loc::current());

// Sends src to core send_to and receives dst from core recv_from of this
// rank; both sides must reach a matching sendrecv with the same pipe_id.
Instr sendrecv(const Tensor& dst, const Tensor& src, int send_to, int recv_from,
               int pipe_id = 0, Loc loc = Loc::current());

// Waits until every core of the rank reaches a core_barrier on `data`
// (a shared-HBM tensor that names the barrier).
Instr core_barrier(const Tensor& data, Loc loc = Loc::current());

// Concatenates src of every rank of this rank's replica group along
// collective_dim into dst, in group order.
Instr all_gather(const Tensor& dst, const Tensor& src, int collective_dim,
                 Loc loc = Loc::current());

Instr all_reduce(const Tensor& dst, const Tensor& src, Alu op = Alu::kAdd,
                 Loc loc = Loc::current());

// One ring step: each rank sends src to its successor in the replica group
// and receives its predecessor's into dst.
Instr collective_permute_implicit(const Tensor& dst, const Tensor& src,
                                  int channel = 0, Loc loc = Loc::current());

// Writes into dst (one int32) the group-local rank whose data the ring has
// delivered at `iteration`: (rank - iteration) mod group size.
Instr collective_permute_implicit_current_processing_rank_id(
    const Tensor& dst, int iteration, int channel = 0,
    Loc loc = Loc::current());

}  // namespace nkigraph::builder::isa

#endif  // NKIGRAPH_BUILDER_ISA_H_
