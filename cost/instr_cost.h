#ifndef NKIGRAPH_COST_INSTR_COST_H_
#define NKIGRAPH_COST_INSTR_COST_H_

// What one instruction costs by itself, from the cost table: how long it
// occupies its engine (or DMA engines), the bytes it reads and writes in each
// memory, and the matmul work it does. Scheduling (cost/schedule.h) adds
// the waits.
//
// Formulas (the table's fields are in cost_table.h). The engines' are the
// ISA reference's "Estimated instruction cost" (cited in cost_table.cc),
// N the elements per partition of the instruction's data (its largest
// operand's), MIN_II the engine's min cycles:
//   nc_matmul     max(min(matmul_min_cycles, M), N) x dtype factor / tensor
//                 clock, M the stationary and N the moving free size; the
//                 factor is matmul_fp32_factor when an operand is fp32,
//                 matmul_fp8_factor when both are fp8, else 1.
//                 FLOPs = 2·K·M·N.
//   nc_transpose on the tensor engine: max(P, min(64, F)) for the data's
//                 P partitions and F elements per partition.
//   activation    max(MIN_II, N), + MIN_II with an accumulating reduce_cmd
//   tensor_scalar, tensor_copy, nc_stream_shuffle, nc_transpose (vector):
//                 max(MIN_II, N)
//   tensor_tensor max(MIN_II, N) when one input is in PSUM and the other in
//                 SBUF, or all are bf16 in SBUF, contiguous, with add,
//                 subtract or multiply; else max(MIN_II, 2N)
//   scalar_tensor_tensor  N for bf16 subtract-then-multiply (N even), else
//                 2N
//   tensor_reduce N/2 for bf16 in and out with add or maximum, else N
//   memset        max(MIN_II, N/2) for zero in bf16/fp16, else max(MIN_II, N)
//   max8, nc_find_index8  N
//   iota, affine_select   GPSIMD_START + N
//   other opcodes max(MIN_II, N x inputs) (ASSUMPTION); on GpSimd every
//                 formula adds GPSIMD_START (ASSUMPTION, as for iota).
//   Cycles are divided by the engine's clock.
//   DMA (dma_copy, dma_transpose, dma_compute, sendrecv): spread over the
//                 DMA engines serving the SBUF partitions it touches, one
//                 engine per dma_partitions_per_engine partitions (all of
//                 them for HBM to HBM); dma_fixed_ns + charged bytes /
//                 (engines x engine bandwidth x factors). Charged bytes
//                 = max(bytes read, bytes written), each operand counted in
//                 contiguous packets of at least dma_min_packet_bytes; the
//                 factors are dma_strided_factor when an operand's minor
//                 dim strides more than dma_strided_minor_bytes, and the
//                 transpose factor for dma_transpose.
//   core_barrier  core_barrier_ns.
//   collective_permute_implicit  latency + bytes / link bandwidth.
//   all_gather    (n−1) x (latency + src bytes / link bandwidth), n ranks
//                 in the replica group (a ring).
//   all_reduce    2(n−1) x (latency + src bytes / n / link bandwidth)
//                 (ring reduce-scatter, then all-gather).
//   anything else on the sync or collective engine: sequencer_fixed_ns.

#include <cstdint>

#include "cost/cost_table.h"
#include "graph/graph_index.h"

namespace nkigraph::cost {

// Bytes read and written per memory.
struct Traffic {
  int64_t hbm_read = 0;
  int64_t hbm_write = 0;
  int64_t sbuf_read = 0;
  int64_t sbuf_write = 0;
  int64_t psum_read = 0;
  int64_t psum_write = 0;
  void Add(const Traffic& other);
  int64_t hbm() const { return hbm_read + hbm_write; }
};

struct InstrCost {
  double duration_ns = 0;  // on its engine or queue, waits excluded
  Traffic traffic;
  // For the roofline: 2·K·M·N of a matmul, and its time at the tensor
  // engine's peak for its dtype.
  double flops = 0;
  double peak_ns = 0;
  // Bytes a DMA-engine instruction moves to or from HBM (0 for others).
  int64_t dma_hbm_bytes = 0;
  // The DMA engines a DMA-engine instruction is spread over: engines
  // [dma_first_engine, dma_first_engine + dma_engines).
  int dma_first_engine = 0;
  int dma_engines = 1;
  // Bytes of the largest operand (for trace arguments).
  int64_t bytes = 0;
};

InstrCost CostOf(const graph::GraphIndex& index, int i, const CostTable& table);

// Charged bytes of one DMA operand: its contiguous packets, each counted as
// at least `min_packet` bytes; sets *strided when its minor dim strides by
// more than `strided_bytes`. Exposed for tests.
int64_t ChargedDmaBytes(const proto::AccessPattern& ap,
                        const proto::Tensor& tensor, int64_t min_packet,
                        int64_t strided_bytes, bool* strided);

}  // namespace nkigraph::cost

#endif  // NKIGRAPH_COST_INSTR_COST_H_
