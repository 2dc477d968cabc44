#ifndef NKIGRAPH_COST_COST_TABLE_H_
#define NKIGRAPH_COST_COST_TABLE_H_

// The numbers the cost model charges, one table per target, kept beside
// the device profile (ops/device_profile.h) as data. Every number cites
// its public source in cost_table.cc (the sources are listed in
// shared/reference/nki-notes.md §2.3–2.4); a number no source publishes is
// marked there as an assumption. The model is an estimate, not a
// measurement.

#include <cstdint>

#include "absl/strings/string_view.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::cost {

struct CostTable {
  proto::Target target;
  absl::string_view name;

  // --- Tensor engine (PE array) ---------------------------------------
  double tensor_clock_ghz;
  int64_t pe_rows;  // contraction (partition) size of the array: 128
  int64_t pe_cols;  // stationary free size of the array: 128
  // The ISA's nc_matmul estimate: max(min(matmul_min_cycles, M), N) cycles
  // for stationary free size M and moving free size N, times a dtype
  // factor; nc_transpose on the tensor engine: max(P, min(64, F)).
  int64_t matmul_min_cycles;
  double matmul_fp32_factor;  // fp32 operands: this many times slower
  double matmul_fp8_factor;   // both operands fp8: this factor (< 1: faster)

  // --- Vector, Scalar, GpSimd ------------------------------------------
  // The ISA's per-instruction estimates count cycles from N, the elements
  // per partition (every engine has one lane per partition); see
  // instr_cost.h for the formula of each opcode.
  double vector_clock_ghz;
  double scalar_clock_ghz;
  double gpsimd_clock_ghz;
  // MIN_II: the minimum initiation interval of a small instruction.
  int64_t vector_min_cycles;
  int64_t scalar_min_cycles;
  // GPSIMD_START: a GpSimd instruction's start-up overhead.
  int64_t gpsimd_start_cycles;
  // Sequencer-only instructions (register reads such as the ring's rank
  // resolver): a fixed cost.
  double sequencer_fixed_ns;

  // --- DMA ---------------------------------------------------------------
  int dma_queues;                 // DMA engines per core
  double dma_queue_bytes_per_ns;  // per engine; x dma_queues = the core's
                                  // aggregate
  // SBUF partitions each engine serves: a transfer is spread over the
  // engines of the partitions it touches.
  int64_t dma_partitions_per_engine;
  double dma_fixed_ns;  // per DMA instruction
  // Contiguous runs (packets) shorter than this are charged as this many
  // bytes (the small-transfer penalty).
  int64_t dma_min_packet_bytes;
  // A minor (innermost) dimension strided by more than this many bytes
  // moves at dma_strided_factor of the bandwidth.
  int64_t dma_strided_minor_bytes;
  double dma_strided_factor;
  double dma_transpose_hbm_factor;   // dma_transpose from HBM: throughput
  double dma_transpose_sbuf_factor;  // dma_transpose from SBUF

  // --- HBM ---------------------------------------------------------------
  // One stack's bandwidth and the physical cores that share it; each core
  // gets an equal part (hbm_stack_bytes_per_ns / cores_per_hbm_stack).
  double hbm_stack_bytes_per_ns;
  int cores_per_hbm_stack;

  // --- Synchronisation and collectives -------------------------------------
  double core_barrier_ns;
  // Link bandwidth per core (the chip's link bandwidth over its cores) and
  // a placeholder latency per collective step.
  double link_bytes_per_ns;
  double collective_step_latency_ns;

  double hbm_core_bytes_per_ns() const {
    return hbm_stack_bytes_per_ns / cores_per_hbm_stack;
  }
  double dma_aggregate_bytes_per_ns() const {
    return dma_queue_bytes_per_ns * dma_queues;
  }
  // The roofline's bytes rate: the smaller of the core's HBM part and its
  // DMA aggregate.
  double roofline_bytes_per_ns() const;
  // TensorE peak in FLOP/ns for a matmul of this operand dtype class.
  double tensor_peak_flops_per_ns(double dtype_factor) const {
    return 2.0 * pe_rows * pe_cols * tensor_clock_ghz / dtype_factor;
  }
};

// TARGET_UNSPECIFIED reads as trn2, as the device profile does.
const CostTable& CostTableFor(proto::Target target);

}  // namespace nkigraph::cost

#endif  // NKIGRAPH_COST_COST_TABLE_H_
