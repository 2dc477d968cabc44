// tensor_scalar: dst = (data op0 operand0) op1 operand1 on the vector
// engine. Each operand is an immediate (scalar0 / scalar1) or a [P, 1]
// column broadcast along the free dims; reverseN swaps op N's sides. Exact
// integer math when data, dst and the operands are integral, fp32
// otherwise.
#include <cmath>

#include "ops/exec_context.h"
#include "ops/op_def.h"
#include "ops/op_util.h"
#include "ops/row_ops.h"
#include "ops/split_work.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

constexpr OperandRole kRoles[] = {
    {"dst", Access::kWrite, kOnChip},
    {"data", Access::kRead, kOnChip},
    {"operand0", Access::kRead, kSbuf, /*optional=*/true},
    {"operand1", Access::kRead, kSbuf, /*optional=*/true}};
constexpr int kDst = RoleOf(kRoles, "dst");
constexpr int kData = RoleOf(kRoles, "data");
constexpr int kOperand0 = RoleOf(kRoles, "operand0");
constexpr int kOperand1 = RoleOf(kRoles, "operand1");

constexpr AttrSpec kAttrs[] = {
    AluSpec("op0", "the first ALU operation"),
    FloatSpec("scalar0", 0.0, "op0's immediate, without an 'operand0' column")
        .WrittenAtDefault(),
    FlagSpec("reverse0", "1: operand0 op0 data"),
    StringSpec("op1", "", "the second ALU operation; absent: none")
        .OneOf(kAluNames, &IsAluName),
    FloatSpec("scalar1", 0.0, "op1's immediate, without an 'operand1' column")
        .WrittenAtDefault(),
    FlagSpec("reverse1", "1: operand1 op1 (data op0 operand0)"),
};
constexpr const AttrSpec& kOp0 = AttrOf(kAttrs, "op0");
constexpr const AttrSpec& kScalar0 = AttrOf(kAttrs, "scalar0");
constexpr const AttrSpec& kReverse0 = AttrOf(kAttrs, "reverse0");
constexpr const AttrSpec& kOp1 = AttrOf(kAttrs, "op1");
constexpr const AttrSpec& kScalar1 = AttrOf(kAttrs, "scalar1");
constexpr const AttrSpec& kReverse1 = AttrOf(kAttrs, "reverse1");

// An immediate the integer path can use exactly.
bool IsIntegral(double value) {
  return std::isfinite(value) && value == std::nearbyint(value) &&
         std::fabs(value) <= 9007199254740992.0;  // 2^53
}

// Whether an op's operand (the column `operand` if present, else the
// immediate attribute `scalar`) is integral.
bool OperandIsIntegral(const InstrView& v, int operand,
                       const AttrSpec& scalar) {
  if (v.operand(operand).present()) {
    return !IsFloatDType(v.operand(operand).dtype());
  }
  return IsIntegral(v.Float(scalar));
}

bool UseIntegers(const InstrView& v) {
  if (IsFloatDType(v.operand(kDst).dtype()) ||
      IsFloatDType(v.operand(kData).dtype())) {
    return false;
  }
  if (!OperandIsIntegral(v, kOperand0, kScalar0)) return false;
  return !v.Has(kOp1) || OperandIsIntegral(v, kOperand1, kScalar1);
}

absl::Status Check(const InstrView& v) {
  NKI_RETURN_IF_ERROR(CheckPartitions(v, kData));
  NKI_RETURN_IF_ERROR(CheckSameTile(v, kDst, kData));
  const int64_t p = v.operand(kData).partitions();
  NKI_RETURN_IF_ERROR(CheckColumn(v, kOperand0, p));
  NKI_RETURN_IF_ERROR(CheckColumn(v, kOperand1, p));
  const Alu op0 = AluOf(v, kOp0);
  if (!v.Has(kOp1)) {
    if (v.operand(kOperand1).present()) {
      return v.Error("'operand1' is given but attribute 'op1' is not");
    }
    return absl::OkStatus();
  }
  const Alu op1 = AluOf(v, kOp1);
  if (IsBitwise(op0) != IsBitwise(op1)) {
    return v.Error("op0 '", AluName(op0), "' and op1 '", AluName(op1),
                   "' must both be bitwise or both arithmetic");
  }
  return absl::OkStatus();
}

inline float Apply(Alu op, float a, float b) { return ApplyAlu(op, a, b); }
inline int64_t Apply(Alu op, int64_t a, int64_t b) {
  return ApplyAluInt(op, a, b);
}

// One op and its operand: an immediate, or a per-partition column.
template <typename T>
struct Stage {
  Alu op;
  bool reverse;
  T immediate;
  absl::Span<const T> column;  // empty: use the immediate

  T operator()(T x, int64_t partition) const {
    const T s = column.empty() ? immediate : column[partition];
    return reverse ? Apply(op, s, x) : Apply(op, x, s);
  }
};

template <typename T>
void Compute(absl::Span<const T> data, int64_t p, int64_t f, const Stage<T>& s0,
             const Stage<T>* s1, std::vector<T>& out) {
  out.resize(p * f);
  for (int64_t i = 0; i < p; ++i) {
    for (int64_t j = 0; j < f; ++j) {
      T value = s0(data[i * f + j], i);
      if (s1 != nullptr) value = (*s1)(value, i);
      out[i * f + j] = value;
    }
  }
}

// The float path row by row: each stage over a whole partition row with
// its operand fixed, which is the same arithmetic per element.
// `rows_in_place`: both `data` and `out` are the operands' own rows
// (RowSplitThreshold).
void ComputeRows(const FloatRows& data, const Stage<float>& s0,
                 const Stage<float>* s1, const ExecContext::MutableRows& out,
                 bool rows_in_place) {
  const int64_t f = data.cols;
  // Big instructions split their rows over the threads the run lends
  // (ForRowRanges); a row's result is the same on any thread.
  ForRowRanges(
      data.rows, data.rows * f, 1,
      [&](int64_t r0, int64_t r1) {
        for (const Stage<float>* stage : {&s0, s1}) {
          if (stage == nullptr) continue;
          for (int64_t i = r0; i < r1; ++i) {
            const float* in = stage == &s0 ? data.row(i) : out.row(i);
            const float s =
                stage->column.empty() ? stage->immediate : stage->column[i];
            ApplyAluRowScalar(stage->op, in, s, stage->reverse, out.row(i), f);
          }
        }
      },
      RowSplitThreshold(rows_in_place, kMinRowSplitWork));
}

absl::Status Execute(ExecContext& ctx) {
  const InstrView& v = ctx.view();
  const int64_t p = v.operand(kData).partitions();
  const int64_t f = v.operand(kData).free_size();
  const bool has_op1 = v.Has(kOp1);
  const Alu op0 = AluOf(v, kOp0);
  const Alu op1 = has_op1 ? AluOf(v, kOp1) : Alu::kBypass;
  const bool reverse0 = v.Int(kReverse0) != 0;
  const bool reverse1 = v.Int(kReverse1) != 0;
  const double scalar0 = v.Float(kScalar0);
  const double scalar1 = v.Float(kScalar1);
  const bool column0 = v.operand(kOperand0).present();
  const bool column1 = has_op1 && v.operand(kOperand1).present();

  if (UseIntegers(v)) {
    // UseIntegers guarantees the immediates in use are integral.
    const int64_t imm0 = column0 ? 0 : std::llround(scalar0);
    const int64_t imm1 = column1 || !has_op1 ? 0 : std::llround(scalar1);
    Stage<int64_t> s0{op0, reverse0, imm0, {}};
    Stage<int64_t> s1{op1, reverse1, imm1, {}};
    if (column0) {
      NKI_ASSIGN_OR_RETURN(s0.column, ctx.ReadInt(kOperand0));
    }
    if (column1) {
      NKI_ASSIGN_OR_RETURN(s1.column, ctx.ReadInt(kOperand1));
    }
    NKI_ASSIGN_OR_RETURN(absl::Span<const int64_t> data, ctx.ReadInt(kData));
    std::vector<int64_t>& out = ctx.ScratchInt(0);
    Compute<int64_t>(data, p, f, s0, has_op1 ? &s1 : nullptr, out);
    return ctx.WriteInt(kDst, out);
  }
  Stage<float> s0{op0, reverse0, static_cast<float>(scalar0), {}};
  Stage<float> s1{op1, reverse1, static_cast<float>(scalar1), {}};
  if (column0) {
    NKI_ASSIGN_OR_RETURN(s0.column, ctx.ReadFloat(kOperand0));
  }
  if (column1) {
    NKI_ASSIGN_OR_RETURN(s1.column, ctx.ReadFloat(kOperand1));
  }
  // The data and destination in place in one call where they lie in rows
  // (the columns above are copies, so they cannot alias the destination).
  ExecContext::ElementwiseRows in_place;
  NKI_RETURN_IF_ERROR(ctx.ElementwiseInPlace(kDst, {kData}, &in_place));
  if (in_place.dst.data != nullptr) {
    ComputeRows({in_place.src[0], in_place.dst.rows, in_place.dst.cols,
                 in_place.src_stride[0]},
                s0, has_op1 ? &s1 : nullptr, in_place.dst,
                /*rows_in_place=*/true);
    return absl::OkStatus();
  }
  NKI_ASSIGN_OR_RETURN(const FloatRows data, ReadFloatRows(ctx, kData));
  std::vector<float>& scratch = ctx.ScratchFloat(0);
  const FloatOut out = FloatDestination(ctx, kDst, {{kData, data}}, scratch);
  ComputeRows(data, s0, has_op1 ? &s1 : nullptr, out.rows,
              !data.copied && out.in_place);
  return FinishFloat(ctx, kDst, out, scratch);
}

std::string Label(const proto::Instruction& instr) {
  std::string ops(StringValue(instr, kOp0));
  if (HasAttr(instr, kOp1))
    absl::StrAppend(&ops, ",", StringValue(instr, kOp1));
  return ops;
}

}  // namespace

template <>
OpDef DefineOp<proto::TENSOR_SCALAR>() {
  return {.engine = Engine::kVector,
          .roles = kRoles,
          .attrs = kAttrs,
          .check = Check,
          .execute = Execute,
          .label = Label};
}

}  // namespace nkigraph::ops
