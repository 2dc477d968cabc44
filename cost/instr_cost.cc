#include "cost/instr_cost.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/string_view.h"
#include "ops/access_pattern.h"
#include "ops/attr_spec.h"
#include "ops/instr_facts.h"
#include "util/dtype.h"

namespace nkigraph::cost {
namespace {

bool IsFp8(proto::DType dtype) { return dtype == proto::FLOAT8_E4M3; }

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
  f.dtype = ops::OperandDType(ap, tensor);
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

bool Is2Byte(proto::DType dtype) {
  return dtype == proto::BFLOAT16 || dtype == proto::FLOAT16;
}

// Whether the innermost dim of `ap` walks consecutive elements.
bool UnitMinorStride(const proto::AccessPattern& ap) {
  const int dims = ops::NumDims(ap);
  return dims < 2 || ops::Stride(ap, dims - 1) == 1 ||
         ops::Count(ap, dims - 1) == 1;
}

// Cycles of a Vector, Scalar or GpSimd instruction: the ISA reference's
// estimate of its opcode (instr_cost.h lists them), `n` the elements per
// partition of its data.
double EngineCycles(const graph::InstrInfo& info, const CostTable& t,
                    const OperandFacts* facts, int n_operands, int64_t n,
                    int inputs) {
  const proto::Instruction& instr = *info.instr;
  const bool scalar = info.engine == ops::Engine::kScalar;
  const double min_ii =
      static_cast<double>(scalar ? t.scalar_min_cycles : t.vector_min_cycles);
  const double nn = static_cast<double>(n);
  auto floor_ii = [&](double cycles) { return std::max(min_ii, cycles); };
  auto fact = [&](int o) -> const OperandFacts* {
    return o < n_operands && o < 3 ? &facts[o] : nullptr;
  };
  double cycles = 0;
  const bool additive_start = info.engine == ops::Engine::kGpSimd;
  switch (instr.opcode()) {
    case proto::IOTA:
    case proto::AFFINE_SELECT:
      return t.gpsimd_start_cycles + nn;
    case proto::MEMSET: {
      const proto::Attr* value = ops::FindAttr(instr, "value");
      const bool zero = value == nullptr || value->f() == 0.0;
      const OperandFacts* dst = fact(0);
      cycles = zero && dst != nullptr && Is2Byte(dst->dtype) ? floor_ii(nn / 2)
                                                             : floor_ii(nn);
      break;
    }
    case proto::TENSOR_TENSOR: {
      const OperandFacts* a = fact(1);
      const OperandFacts* b = fact(2);
      const OperandFacts* d = fact(0);
      bool fast = false;
      if (a != nullptr && b != nullptr) {
        const bool mixed =
            (a->space == proto::PSUM) != (b->space == proto::PSUM);
        const absl::string_view op = ops::StrAttr(instr, "op").value_or("");
        const bool bf16_sbuf =
            a->dtype == proto::BFLOAT16 && b->dtype == proto::BFLOAT16 &&
            d != nullptr && d->dtype == proto::BFLOAT16 &&
            a->space == proto::SBUF && b->space == proto::SBUF &&
            (op == "add" || op == "multiply" || op == "subtract") &&
            UnitMinorStride(instr.operands(1)) &&
            UnitMinorStride(instr.operands(2));
        fast = mixed || bf16_sbuf;
      }
      cycles = fast ? floor_ii(nn) : floor_ii(2 * nn);
      break;
    }
    case proto::SCALAR_TENSOR_TENSOR: {
      const OperandFacts* data = fact(1);
      const bool fast = data != nullptr && data->dtype == proto::BFLOAT16 &&
                        n_operands > 3 && instr.operands(3).tensor_id() != 0 &&
                        ops::StrAttr(instr, "op0").value_or("") == "subtract" &&
                        ops::StrAttr(instr, "op1").value_or("") == "multiply" &&
                        n % 2 == 0;
      cycles = fast ? nn : 2 * nn;
      break;
    }
    case proto::TENSOR_REDUCE: {
      const OperandFacts* d = fact(0);
      const OperandFacts* data = fact(1);
      const absl::string_view op = ops::StrAttr(instr, "op").value_or("");
      const bool fast =
          d != nullptr && data != nullptr && d->dtype == proto::BFLOAT16 &&
          data->dtype == proto::BFLOAT16 && (op == "add" || op == "maximum");
      cycles = fast ? nn / 2 : nn;
      break;
    }
    case proto::ACTIVATION:
      cycles = floor_ii(nn);
      if (ops::StrAttr(instr, "reduce_cmd").value_or("idle") != "idle")
        cycles += min_ii;
      break;
    case proto::MAX8:
    case proto::NC_FIND_INDEX8:
      cycles = nn;
      break;
    case proto::TENSOR_SCALAR:
    case proto::TENSOR_COPY:
    case proto::NC_STREAM_SHUFFLE:
    case proto::NC_TRANSPOSE:
      cycles = floor_ii(nn);
      break;
    default:
      // ASSUMPTION: an opcode the reference gives no estimate for costs one
      // cycle per element per input, at least MIN_II.
      cycles = floor_ii(nn * inputs);
      break;
  }
  // ASSUMPTION: on GpSimd the Vector formulas apply after GPSIMD_START, as
  // the reference states for iota and affine_select.
  if (additive_start) cycles += t.gpsimd_start_cycles;
  return cycles;
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
  const int64_t size = std::max(DTypeSize(ops::OperandDType(ap, tensor)), 1);
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
  int64_t read_charged = 0, write_charged = 0;
  bool strided = false, touches_hbm = false;
  const bool dma = info.engine == ops::Engine::kDma;
  int64_t part_lo = INT64_MAX, part_hi = -1;  // DMA: on-chip partitions
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
    if (ops::IsHbm(f.space)) touches_hbm = true;
    if (dma && ops::IsOnChip(f.space)) {
      const ops::PartitionSpan span =
          ops::OperandPartitions(ap, index.tensor(ap.tensor_id()));
      part_lo = std::min(part_lo, span.lo);
      part_hi = std::max(part_hi, span.hi);
    }
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
        c.duration_ns = std::max(std::min(t.matmul_min_cycles, m), nn) *
                        factor / t.tensor_clock_ghz;
        c.flops = 2.0 * k * m * nn;
        c.peak_ns = c.flops / t.tensor_peak_flops_per_ns(factor);
      } else {
        // nc_transpose: data (operand 1) against the identity.
        const OperandFacts& data = facts[n > 1 ? 1 : 0];
        const double factor = MatmulFactor(t, data.dtype, data.dtype);
        c.duration_ns = std::max(data.partitions, std::min(t.matmul_min_cycles,
                                                           data.free_size)) *
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
      const double clock =
          info.engine == ops::Engine::kVector   ? t.vector_clock_ghz
          : info.engine == ops::Engine::kScalar ? t.scalar_clock_ghz
                                                : t.gpsimd_clock_ghz;
      c.duration_ns = EngineCycles(info, t, facts, n, max_free, inputs) / clock;
      break;
    }
    case ops::Engine::kDma: {
      double rate = t.dma_queue_bytes_per_ns;
      if (strided) rate *= t.dma_strided_factor;
      if (op == proto::DMA_TRANSPOSE && n >= 2) {
        rate *= ops::IsHbm(facts[1].space) ? t.dma_transpose_hbm_factor
                                           : t.dma_transpose_sbuf_factor;
      }
      // [dma]: each engine serves dma_partitions_per_engine SBUF
      // partitions; a transfer not touching SBUF is spread over all of
      // them (ASSUMPTION: "up to 16 engines, depending on the shape").
      const int queues = std::max(t.dma_queues, 1);
      int first = 0, last = queues - 1;
      if (part_hi > part_lo) {
        const int64_t per = std::max<int64_t>(t.dma_partitions_per_engine, 1);
        first =
            static_cast<int>(std::clamp<int64_t>(part_lo / per, 0, queues - 1));
        last = static_cast<int>(
            std::clamp<int64_t>((part_hi - 1) / per, first, queues - 1));
      }
      c.dma_first_engine = first;
      c.dma_engines = last - first + 1;
      const int64_t charged = std::max(read_charged, write_charged);
      c.duration_ns = t.dma_fixed_ns + charged / (rate * c.dma_engines);
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
