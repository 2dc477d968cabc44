#include "cost/instr_cost.h"

#include <algorithm>
#include <cmath>

#include "ops/access_pattern.h"
#include "ops/instr_facts.h"
#include "util/dtype.h"

namespace nkigraph::cost {
namespace {

bool IsFp8(proto::DType dtype) { return dtype == proto::FLOAT8_E4M3; }

// The dtype operand `ap` reads `tensor` as: its bitcast view's, or the
// tensor's own; the pattern counts elements of it.
proto::DType OperandDType(const proto::AccessPattern& ap,
                          const proto::Tensor& tensor) {
  return ap.view_dtype() != proto::DTYPE_UNSPECIFIED ? ap.view_dtype()
                                                     : tensor.dtype();
}

struct OperandFacts {
  int64_t elements = 0;
  int64_t bytes = 0;
  int64_t free_size = 0;  // elements per partition (on chip), else elements
  int64_t partitions = 1;
  int esize = 0;
  proto::DType dtype = proto::DTYPE_UNSPECIFIED;
  proto::MemorySpace space = proto::SBUF;
};

OperandFacts FactsOf(const graph::GraphIndex& index,
                     const proto::AccessPattern& ap) {
  OperandFacts f;
  const proto::Tensor& tensor = index.tensor(ap.tensor_id());
  f.dtype = OperandDType(ap, tensor);
  f.space = tensor.space();
  f.elements = ops::ApElements(ap);
  f.esize = DTypeSize(f.dtype);
  f.bytes = f.elements * std::max(f.esize, 1);
  f.free_size = f.elements;
  if (ops::IsOnChip(f.space) && ops::NumDims(ap) > 0) {
    f.partitions = std::max<int64_t>(ops::Count(ap, 0), 1);
    f.free_size = f.elements / f.partitions;
  }
  return f;
}

void AddTraffic(proto::MemorySpace space, int64_t bytes, bool write,
                Traffic* t) {
  switch (space) {
    case proto::SBUF:
      (write ? t->sbuf_write : t->sbuf_read) += bytes;
      break;
    case proto::PSUM:
      (write ? t->psum_write : t->psum_read) += bytes;
      break;
    default:
      (write ? t->hbm_write : t->hbm_read) += bytes;
      break;
  }
}

int64_t GroupSize(const proto::World& world) {
  const int64_t n = world.replica_groups_size() == 0
                        ? world.num_ranks()
                        : world.replica_groups(0).ranks_size();
  return std::max<int64_t>(n, 1);
}

// The dtype factor of a tensor-engine instruction reading `a` and `b`.
double MatmulFactor(const CostTable& t, proto::DType a, proto::DType b) {
  if (a == proto::FLOAT32 || b == proto::FLOAT32) return t.matmul_fp32_factor;
  if (IsFp8(a) && IsFp8(b)) return t.matmul_fp8_factor;
  return 1.0;
}

}  // namespace

void Traffic::Add(const Traffic& o) {
  hbm_read += o.hbm_read;
  hbm_write += o.hbm_write;
  sbuf_read += o.sbuf_read;
  sbuf_write += o.sbuf_write;
  psum_read += o.psum_read;
  psum_write += o.psum_write;
}

int64_t ChargedDmaBytes(const proto::AccessPattern& ap,
                        const proto::Tensor& tensor, int64_t min_packet,
                        int64_t strided_bytes, bool* strided) {
  const int64_t size = std::max(DTypeSize(OperandDType(ap, tensor)), 1);
  const int64_t elements = ops::ApElements(ap);
  const int dims = ops::NumDims(ap);
  // On chip, dim 0 walks partitions: packets never cross a partition.
  const int first_mergeable = ops::IsOnChip(tensor.space()) ? 1 : 0;
  int d = dims - 1;
  while (d >= first_mergeable && ops::Count(ap, d) == 1) --d;
  int64_t run = 1;
  if (d >= first_mergeable) {
    if (ops::Stride(ap, d) == 1) {
      // Merge outer dims while they continue the contiguous run.
      run = ops::Count(ap, d);
      for (--d; d >= first_mergeable; --d) {
        if (ops::Count(ap, d) == 1) continue;
        if (ops::Stride(ap, d) != run) break;
        run *= ops::Count(ap, d);
      }
    } else {
      // One descriptor gathers the strided row; the engine slows down.
      if (std::abs(ops::Stride(ap, d)) * size > strided_bytes) *strided = true;
      run = ops::Count(ap, d);
    }
  }
  run = std::max<int64_t>(run, 1);
  const int64_t packets = (elements + run - 1) / run;
  return packets * std::max(run * size, min_packet);
}

InstrCost CostOf(const graph::GraphIndex& index, int i, const CostTable& t) {
  InstrCost c;
  const graph::InstrInfo& info = index.info(i);
  const proto::Instruction& instr = *info.instr;
  // The first operands' facts, which the engines' formulas name.
  OperandFacts facts[3];
  const int n = std::min(instr.operands_size(), 16);
  int64_t max_free = 1;
  int inputs = 0;
  bool all_2byte = true;
  int64_t read_charged = 0, write_charged = 0;
  bool strided = false, touches_hbm = false;
  const bool dma = info.engine == ops::Engine::kDma;
  for (int o = 0; o < n; ++o) {
    const proto::AccessPattern& ap = instr.operands(o);
    if (ap.tensor_id() == 0) continue;
    const OperandFacts f = FactsOf(index, ap);
    if (o < 3) facts[o] = f;
    const bool reads = info.Reads(o);
    const bool writes = info.Writes(o);
    if (reads) AddTraffic(f.space, f.bytes, /*write=*/false, &c.traffic);
    if (writes) AddTraffic(f.space, f.bytes, /*write=*/true, &c.traffic);
    c.bytes = std::max(c.bytes, f.bytes);
    max_free = std::max(max_free, f.free_size);
    if (reads && f.free_size > 1) ++inputs;
    if (f.esize != 2) all_2byte = false;
    if (ops::IsHbm(f.space)) touches_hbm = true;
    if (dma) {
      const int64_t charged = ChargedDmaBytes(
          ap, index.tensor(ap.tensor_id()), t.dma_min_packet_bytes,
          t.dma_strided_minor_bytes, &strided);
      if (reads) read_charged += charged;
      if (writes) write_charged += charged;
    }
  }
  inputs = std::max(inputs, 1);
  const proto::Opcode op = instr.opcode();
  switch (info.engine) {
    case ops::Engine::kTensor: {
      if (op == proto::NC_MATMUL && n >= 3) {
        const OperandFacts& st = facts[1];
        const OperandFacts& mv = facts[2];
        const double factor = MatmulFactor(t, st.dtype, mv.dtype);
        const int64_t k = st.partitions, m = st.free_size, nn = mv.free_size;
        c.duration_ns =
            std::max(nn, t.matmul_min_cycles) * factor / t.tensor_clock_ghz;
        c.flops = 2.0 * k * m * nn;
        c.peak_ns = c.flops / t.tensor_peak_flops_per_ns(factor);
      } else {
        // nc_transpose: data (operand 1) against the identity.
        const OperandFacts& data = facts[n > 1 ? 1 : 0];
        const double factor = MatmulFactor(t, data.dtype, data.dtype);
        c.duration_ns = std::max(data.partitions, t.matmul_min_cycles) *
                        factor / t.tensor_clock_ghz;
      }
      break;
    }
    case ops::Engine::kVector:
    case ops::Engine::kScalar:
    case ops::Engine::kGpSimd: {
      if (op == proto::CORE_BARRIER) {
        c.duration_ns = t.core_barrier_ns;
        break;
      }
      double clock = t.vector_clock_ghz, lane = t.vector_lane_elems_other;
      int64_t fixed = t.vector_fixed_cycles;
      if (info.engine == ops::Engine::kVector) {
        if (all_2byte) lane = t.vector_lane_elems_2byte;
      } else if (info.engine == ops::Engine::kScalar) {
        clock = t.scalar_clock_ghz;
        lane = t.scalar_lane_elems;
        fixed = t.scalar_fixed_cycles;
      } else {
        clock = t.gpsimd_clock_ghz;
        lane = t.gpsimd_lane_elems;
        fixed = t.gpsimd_fixed_cycles;
      }
      const double cycles =
          fixed + std::ceil(static_cast<double>(max_free) * inputs / lane);
      c.duration_ns = cycles / clock;
      break;
    }
    case ops::Engine::kDma: {
      double rate = t.dma_queue_bytes_per_ns;
      if (strided) rate *= t.dma_strided_factor;
      if (op == proto::DMA_TRANSPOSE && n >= 2) {
        rate *= ops::IsHbm(facts[1].space) ? t.dma_transpose_hbm_factor
                                           : t.dma_transpose_sbuf_factor;
      }
      const int64_t charged = std::max(read_charged, write_charged);
      c.duration_ns = t.dma_fixed_ns + charged / rate;
      if (touches_hbm) c.dma_hbm_bytes = c.bytes;
      break;
    }
    case ops::Engine::kCollective: {
      const int64_t ranks = GroupSize(index.graph().world());
      const int64_t src = n >= 2 ? facts[1].bytes : 0;
      const double step = t.collective_step_latency_ns;
      const double link = t.link_bytes_per_ns;
      if (op == proto::COLLECTIVE_PERMUTE_IMPLICIT) {
        c.duration_ns = step + src / link;
      } else if (op == proto::ALL_GATHER) {
        c.duration_ns = (ranks - 1) * (step + src / link);
      } else if (op == proto::ALL_REDUCE) {
        c.duration_ns = 2.0 * (ranks - 1) *
                        (step + static_cast<double>(src) / ranks / link);
      } else {
        c.duration_ns = t.sequencer_fixed_ns;
      }
      break;
    }
    case ops::Engine::kSync:
      c.duration_ns = t.sequencer_fixed_ns;
      break;
  }
  return c;
}

}  // namespace nkigraph::cost
