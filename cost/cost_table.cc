#include "cost/cost_table.h"

#include <algorithm>

#include "ops/device_profile.h"

namespace nkigraph::cost {
namespace {

// Sources, as shared/reference/nki-notes.md names them: paths in the
// aws-neuron-sdk documentation repository, each published at
// https://awsdocs-neuron.readthedocs-hosted.com/en/latest/<path>.html
// (the path without ".rst") unless said otherwise:
//   [arch1]  nki/guides/architecture/trainium_inferentia2_arch.rst (Trn1:
//            engine clocks, HBM)
//   [arch2]  nki/guides/architecture/trainium2_arch.rst (Trn2: engine
//            clocks and rates)
//   [perf]   nki/deep-dives/nki_perf_guide.rst
//   [dma]    nki/get-started/about/nki-dma-overview.rst (published at
//            .../en/latest/nki/about/nki-dma-overview.html; "Basic DMA
//            Capabilities", "Performance Considerations": 16 engines, a
//            transfer spread over up to 16 of them, 8 partitions each) and
//            nki/deep-dives/nki-dma-bandwidth-guide.rst (the per-engine
//            bandwidth table, ~1300 ns cross-engine start latency)
//   [hw2]    about-neuron/arch/neuron-hardware/trainium2.rst
//   [bp]     training/best-practices (NeuronLink bandwidth per chip)
//   [isa]    the ISA reference's "Estimated instruction cost" of each
//            instruction: aws-neuron-sdk general/nki/api/nki/isa/__init__.py
//            (NKI 0.1, documents Inf2/Trn1/Trn2), published per op as
//            https://awsdocs-neuron.readthedocs-hosted.com/en/v2.21.0.beta/
//            general/nki/api/generated/nki.isa.<op>.html (nc_matmul,
//            nc_transpose, activation, tensor_scalar, tensor_tensor,
//            tensor_copy, memset, iota, affine_select, ...). Its MIN_II is
//            "roughly 64 engine cycles", GPSIMD_START "roughly 150".
// "ASSUMPTION" marks a number no source publishes; for trn3 "trn2's" says
// the Trn2 figure is assumed because the Trn3 one is not published.

constexpr CostTable kTrn1{
    .target = proto::TARGET_TRN1,
    .name = "trn1",
    .tensor_clock_ghz = 2.8,  // [arch1]: TensorE 2.8 GHz (92 bf16 TFLOPS)
    .pe_rows = 128,           // [arch1]: 128x128 systolic array
    .pe_cols = 128,
    // [isa] nc_matmul: max(min(64, N_stationary), N_moving) cycles ([perf]
    // calls the 64 MM_INIT_LATENCY).
    .matmul_min_cycles = 64,
    .matmul_fp32_factor = 4.0,   // [isa] nc_matmul: 4x for float32 inputs
    .matmul_fp8_factor = 1.0,    // [isa]: fp8 costs as bf16
    .vector_clock_ghz = 1.12,    // [arch1]
    .scalar_clock_ghz = 1.4,     // [arch1]
    .gpsimd_clock_ghz = 1.4,     // [arch1]
    .vector_min_cycles = 64,     // [isa]: MIN_II roughly 64 cycles
    .scalar_min_cycles = 64,     // [isa] activation: MIN_II roughly 64
    .gpsimd_start_cycles = 150,  // [isa] iota, affine_select: GPSIMD_START
    .sequencer_fixed_ns = 50.0,  // ASSUMPTION: a register read, not published
    .dma_queues = 16,            // [dma]: 16 DMA engines per NeuronCore
    // [dma]: 17 B/ns per engine, 272 GB/s aggregate (nki-notes §2.1 also
    // quotes 27.2 GB/s per engine; the table's 17 B/ns x 16 = 272 is used).
    .dma_queue_bytes_per_ns = 17.0,
    // [dma]: "each DMA engine is typically responsible for moving data for
    // eight SBUF partitions (128 partitions / 16 DMA engines)"; a transfer
    // "is by default parallelized up to 16 DMA engines".
    .dma_partitions_per_engine = 8,
    .dma_fixed_ns = 600.0,  // ASSUMPTION: trn2's ~600 ns per DMA instruction
    // ASSUMPTION: 512 B; [dma] says payloads of >= 4 KiB per partition
    // saturate the engines and [perf] that transfers > 32 KiB reach full
    // bandwidth, but gives no curve below.
    .dma_min_packet_bytes = 512,
    .dma_strided_minor_bytes = 16,     // [perf]: minor stride > 16 B halves
    .dma_strided_factor = 0.5,         //   the bandwidth
    .dma_transpose_hbm_factor = 0.9,   // ASSUMPTION: trn2's [dma] figures
    .dma_transpose_sbuf_factor = 0.5,  //   (90 % / 50 %)
    // [arch1]: 820 GB/s HBM per chip, shared by its 2 cores.
    .hbm_stack_bytes_per_ns = 820.0,
    .cores_per_hbm_stack = 2,
    // ASSUMPTION: the ~1300 ns cross-engine semaphore latency of [dma]
    // taken as a core barrier's cost.
    .core_barrier_ns = 1300.0,
    .link_bytes_per_ns = 192.0,  // [bp]: NeuronLink-v2 384 GB/s per chip / 2
    // ASSUMPTION (placeholder): collective latency is not published.
    .collective_step_latency_ns = 2000.0,
};

constexpr CostTable kTrn2{
    .target = proto::TARGET_TRN2,
    .name = "trn2",
    .tensor_clock_ghz = 2.4,  // [arch2]: 2.4 GHz, 79 bf16 TFLOPS
    .pe_rows = 128,
    .pe_cols = 128,
    .matmul_min_cycles = 64,    // [isa] nc_matmul (documents Trn2 too)
    .matmul_fp32_factor = 4.0,  // [isa]; [arch2]: 20 fp32 vs 79 bf16 TFLOPS
    // [arch2]: 158 fp8 vs 79 bf16 TFLOPS (4x128 fp8 inputs per cycle); the
    // [isa] formula, written for Inf2/Trn1/Trn2 alike, gives no fp8 rate.
    .matmul_fp8_factor = 0.5,
    .vector_clock_ghz = 0.96,  // [arch2]
    .scalar_clock_ghz = 1.2,   // [arch2]
    .gpsimd_clock_ghz = 1.2,   // [arch2]
    // [isa]: MIN_II roughly 64 cycles. [arch2]'s perf mode (2-4x for some
    // copies and element-wise ops) is not modelled.
    .vector_min_cycles = 64,
    // [perf]: 222 ns (266 cycles) initiation interval observed for small
    // back-to-back ScalarE ops on Trn2, taken as its MIN_II.
    .scalar_min_cycles = 266,
    .gpsimd_start_cycles = 150,      // [isa] iota, affine_select
    .sequencer_fixed_ns = 50.0,      // ASSUMPTION
    .dma_queues = 16,                // [dma]: 16 DMA engines per NeuronCore
    .dma_queue_bytes_per_ns = 23.0,  // [dma]: 23 B/ns, 368 GB/s aggregate
    .dma_partitions_per_engine = 8,  // [dma] (see trn1)
    .dma_fixed_ns = 600.0,           // [perf]: each hardware-DGE DMA ~600 ns
    .dma_min_packet_bytes = 512,     // ASSUMPTION (see trn1)
    .dma_strided_minor_bytes = 16,   // [perf] (v2 figure, ASSUMPTION on v3)
    .dma_strided_factor = 0.5,
    .dma_transpose_hbm_factor = 0.9,   // [dma]: <= 90 % HBM->SBUF
    .dma_transpose_sbuf_factor = 0.5,  // [dma]: <= 50 % SBUF->SBUF
    // [hw2]: 2.9 TB/s over 4 HBM stacks, each shared by 2 physical cores.
    .hbm_stack_bytes_per_ns = 725.0,
    .cores_per_hbm_stack = 2,
    .core_barrier_ns = 1300.0,  // ASSUMPTION (see trn1)
    // [bp]: NeuronLink-v3 1.28 TB/s per chip over its 8 cores.
    .link_bytes_per_ns = 160.0,
    .collective_step_latency_ns = 2000.0,  // ASSUMPTION (placeholder)
};

// Trn3: nki-notes gives only the DMA table and capacities; everything else
// is trn2's (ASSUMPTION wherever it is not marked otherwise).
constexpr CostTable kTrn3{
    .target = proto::TARGET_TRN3,
    .name = "trn3",
    .tensor_clock_ghz = 2.4,  // trn2's
    .pe_rows = 128,
    .pe_cols = 128,
    .matmul_min_cycles = 64,    // trn2's
    .matmul_fp32_factor = 4.0,  // trn2's
    .matmul_fp8_factor = 0.5,   // trn2's
    .vector_clock_ghz = 0.96,   // trn2's
    .scalar_clock_ghz = 1.2,
    .gpsimd_clock_ghz = 1.2,
    .vector_min_cycles = 64,
    .scalar_min_cycles = 266,
    .gpsimd_start_cycles = 150,
    .sequencer_fixed_ns = 50.0,
    .dma_queues = 16,                // [dma]: 16 engines per core
    .dma_queue_bytes_per_ns = 33.0,  // [dma]: 33 B/ns, 528 GB/s aggregate
    .dma_partitions_per_engine = 8,  // [dma]: v2-v4 alike
    .dma_fixed_ns = 600.0,           // trn2's
    .dma_min_packet_bytes = 512,
    .dma_strided_minor_bytes = 16,
    .dma_strided_factor = 0.5,
    .dma_transpose_hbm_factor = 0.9,
    .dma_transpose_sbuf_factor = 0.5,
    .hbm_stack_bytes_per_ns = 725.0,  // trn2's (Trn3 HBM not in our sources)
    .cores_per_hbm_stack = 2,
    .core_barrier_ns = 1300.0,
    .link_bytes_per_ns = 160.0,  // trn2's
    .collective_step_latency_ns = 2000.0,
};

}  // namespace

double CostTable::roofline_bytes_per_ns() const {
  return std::min(hbm_core_bytes_per_ns(), dma_aggregate_bytes_per_ns());
}

const CostTable& CostTableFor(proto::Target target) {
  return ops::ForTarget(target, kTrn1, kTrn2, kTrn3);
}

}  // namespace nkigraph::cost
