// dma_compute: dst = sum(srcs), or dst += sum(srcs) with accumulate (a
// read-modify-write inside the DMA engines), in fp32, for up to 16 sources
// in SBUF or HBM. Only reduce_op "add" exists on the hardware.
#include "ops/exec_context.h"
#include "ops/op_defs.h"
#include "ops/op_util.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

enum { kDst, kFirstSrc };

constexpr int kMaxSources = 16;

absl::Status Check(const InstrView& v) {
  for (int i = 0; i < v.num_operands(); ++i) {
    if (v.operand(i).present() && v.operand(i).space() == proto::PSUM) {
      return v.Error("DMA cannot access psum ('", v.operand(i).tensor->name(),
                     "'); stage it through sbuf with tensor_copy first");
    }
  }
  const int sources = v.num_operands() - kFirstSrc;
  if (sources > kMaxSources) {
    return v.Error("has ", sources, " 'src' operands; at most ", kMaxSources,
                   " allowed");
  }
  for (int i = kFirstSrc; i < v.num_operands(); ++i) {
    if (!v.operand(i).present()) {
      return v.Error("'src' operand ", i - kFirstSrc, " is missing");
    }
    NKI_RETURN_IF_ERROR(CheckSameElements(v, kDst, i));
  }
  const absl::string_view reduce_op = v.StrAttr("reduce_op", "add");
  if (reduce_op != "add") {
    return v.Error("reduce_op '", reduce_op, "' not supported; only add");
  }
  return absl::OkStatus();
}

absl::Status Execute(ExecContext& ctx) {
  const InstrView& v = ctx.view();
  const int64_t n = v.operand(kDst).elements();
  const bool accumulate = v.IntAttr("accumulate", 0) != 0;
  std::vector<float>& acc = ctx.ScratchFloat(0);
  int next = kFirstSrc;
  absl::Span<const float> first;
  if (accumulate) {
    NKI_ASSIGN_OR_RETURN(first, ctx.ReadFloat(kDst));
  } else {
    NKI_ASSIGN_OR_RETURN(first, ctx.ReadFloat(next++));
  }
  acc.assign(first.begin(), first.end());
  for (int i = next; i < v.num_operands(); ++i) {
    NKI_ASSIGN_OR_RETURN(absl::Span<const float> src, ctx.ReadFloat(i));
    for (int64_t k = 0; k < n; ++k) acc[k] += src[k];
  }
  return ctx.WriteFloat(kDst, acc);
}

}  // namespace

const OpDef& DmaComputeOp() {
  static const OpDef def{
      .opcode = proto::DMA_COMPUTE,
      .name = "dma_compute",
      .engine = Engine::kDma,
      // psum is admitted here only so Check can say why it is refused.
      .roles = {{"dst", Access::kReadWrite, kAnySpace},
                {"src", Access::kRead, kAnySpace, /*optional=*/false,
                 /*variadic=*/true}},
      .check = Check,
      .execute = Execute,
  };
  return def;
}

}  // namespace nkigraph::ops
