// dma_compute: dst = sum(srcs), or dst += sum(srcs) with accumulate (a
// read-modify-write inside the DMA engines), in fp32, for up to 16 sources
// in SBUF or HBM. Only reduce_op "add" exists on the hardware.
#include "ops/exec_context.h"
#include "ops/op_def.h"
#include "ops/op_util.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

// psum is admitted here only so Check can say why it is refused. dst is
// read only when accumulating, so the dependency analysis orders an
// accumulation after dst's last writer and a plain sum only as a write.
constexpr OperandRole kRoles[] = {
    {.name = "dst",
     .access = Access::kWrite,
     .spaces = kAnySpace,
     .also_read_if = "accumulate"},
    {"src", Access::kRead, kAnySpace, /*optional=*/false, /*variadic=*/true}};
constexpr int kDst = RoleOf(kRoles, "dst");
constexpr int kFirstSrc = RoleOf(kRoles, "src");

constexpr absl::string_view kReduceOps[] = {AluName(Alu::kAdd)};
constexpr AttrSpec kAttrs[] = {
    StringSpec("reduce_op", AluName(Alu::kAdd),
               "how sources combine (the hardware has only add)")
        .OneOf(kReduceOps)
        .WrittenAtDefault(),
    FlagSpec("accumulate", "1: dst += sum(srcs); 0: dst = sum(srcs)")
        .WrittenAtDefault(),
};
constexpr const AttrSpec& kAccumulate = AttrOf(kAttrs, "accumulate");

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
  return absl::OkStatus();
}

absl::Status Execute(ExecContext& ctx) {
  const InstrView& v = ctx.view();
  const int64_t n = v.operand(kDst).elements();
  const bool accumulate = v.Int(kAccumulate) != 0;
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

template <>
OpDef DefineOp<proto::DMA_COMPUTE>() {
  return {.engine = Engine::kDma,
          .roles = kRoles,
          .attrs = kAttrs,
          .check = Check,
          .execute = Execute,
          .label = [](const proto::Instruction& i) {
            return AccumulateLabel(i, kAccumulate);
          }};
}

}  // namespace nkigraph::ops
