#ifndef NKIGRAPH_COST_INSTR_COST_H_
#define NKIGRAPH_COST_INSTR_COST_H_

// What one instruction costs by itself, from the cost table: how long it
// occupies its engine (or DMA queue), the bytes it reads and writes in each
// memory, and the matmul work it does. Scheduling (cost/schedule.h) adds
// the waits.
//
// Formulas (the table's fields are in cost_table.h):
//   nc_matmul     max(N, matmul_min_cycles) x dtype factor / tensor clock,
//                 N the moving free size; the factor is matmul_fp32_factor
//                 when an operand is fp32, matmul_fp8_factor when both are
//                 fp8, else 1. FLOPs = 2·K·M·N.
//   nc_transpose on the tensor engine: a matmul against the identity, N =
//                 the data's partitions.
//   Vector / Scalar / GpSimd: (fixed + ceil(F · inputs / lane elements)) /
//                 clock; F the largest free size (elements per partition)
//                 of any operand, inputs the read operands with a free size
//                 above 1 (at least 1); Vector's lane rate is the 2-byte one
//                 when every operand is bf16/fp16.
//   DMA (dma_copy, dma_transpose, dma_compute, sendrecv): dma_fixed_ns +
//                 charged bytes / (queue bandwidth x factors). Charged bytes
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
