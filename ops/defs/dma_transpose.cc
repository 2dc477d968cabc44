// dma_transpose: dst = src with its access-pattern dims permuted by `axes`
// ((1, 0), (2, 1, 0) or (3, 1, 2, 0)), moved bit-exactly by the DMA engines
// into SBUF. 2-byte dtypes only.
#include "absl/strings/str_join.h"
#include "ops/block_copy.h"
#include "ops/exec_context.h"
#include "ops/op_def.h"
#include "ops/op_util.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

constexpr OperandRole kRoles[] = {{"dst", Access::kWrite, kSbuf},
                                  {"src", Access::kRead, kSbufOrHbm}};
constexpr int kDst = RoleOf(kRoles, "dst");
constexpr int kSrc = RoleOf(kRoles, "src");

constexpr AttrSpec kAttrs[] = {
    IntsSpec("axes", "the permutation of src's dims").Required()};
constexpr const AttrSpec& kAxes = AttrOf(kAttrs, "axes");

constexpr int kMaxRank = 4;

bool AllowedAxes(absl::Span<const int64_t> axes) {
  static constexpr int64_t k2d[] = {1, 0};
  static constexpr int64_t k3d[] = {2, 1, 0};
  static constexpr int64_t k4d[] = {3, 1, 2, 0};
  return axes == absl::MakeConstSpan(k2d) || axes == absl::MakeConstSpan(k3d) ||
         axes == absl::MakeConstSpan(k4d);
}

absl::Status Check(const InstrView& v) {
  const OperandInfo& dst = v.operand(kDst);
  const OperandInfo& src = v.operand(kSrc);
  const absl::Span<const int64_t> axes = v.Ints(kAxes);
  if (!AllowedAxes(axes)) {
    return v.Error("axes (", absl::StrJoin(axes, ", "),
                   ") not supported; (1, 0), (2, 1, 0) or (3, 1, 2, 0) "
                   "allowed");
  }
  if (src.num_dims() != static_cast<int>(axes.size())) {
    return v.Error("'src' has ", src.num_dims(), " access-pattern dims but ",
                   "axes permutes ", axes.size());
  }
  for (int i : {kDst, kSrc}) {
    if (DTypeSize(v.operand(i).dtype()) != 2) {
      return v.Error("'", v.RoleName(i), "' is ",
                     DTypeName(v.operand(i).dtype()),
                     "; only 2-byte dtypes (bfloat16, float16, int16, uint16) "
                     "allowed");
    }
  }
  if (dst.dtype() != src.dtype()) {
    return v.Error("'dst' is ", DTypeName(dst.dtype()), " but 'src' is ",
                   DTypeName(src.dtype()), "; they must match");
  }
  NKI_RETURN_IF_ERROR(CheckPartitions(v, kDst));
  NKI_RETURN_IF_ERROR(CheckSameElements(v, kDst, kSrc));
  const int64_t lead = src.count(static_cast<int>(axes[0]));
  if (dst.partitions() != lead) {
    return v.Error("'dst' spans ", dst.partitions(),
                   " partitions but the permuted 'src' leads with dim ",
                   axes[0], " of count ", lead);
  }
  return absl::OkStatus();
}

absl::Status Execute(ExecContext& ctx) {
  const InstrView& v = ctx.view();
  const OperandInfo& src = v.operand(kSrc);
  const absl::Span<const int64_t> axes = v.Ints(kAxes);
  const int rank = static_cast<int>(axes.size());
  const int64_t size = DTypeSize(src.dtype());
  const int64_t n = src.elements();
  // Row-major strides of src's counts, then the permuted walk over them.
  int64_t src_stride[kMaxRank];
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    src_stride[d] = stride;
    stride *= src.count(d);
  }
  // dst's dims in order: count[k] elements, src_stride[axes[k]] apart in
  // src and out_stride[k] apart in dst.
  int64_t count[kMaxRank], step[kMaxRank], out_stride[kMaxRank];
  for (int k = 0; k < rank; ++k) {
    count[k] = src.count(static_cast<int>(axes[k]));
    step[k] = src_stride[axes[k]];
  }
  stride = 1;
  for (int k = rank - 1; k >= 0; --k) {
    out_stride[k] = stride;
    stride *= count[k];
  }
  NKI_ASSIGN_OR_RETURN(absl::Span<const uint8_t> in, ctx.ReadRaw(kSrc));
  absl::Span<uint8_t> out = ScratchBytes(ctx, 0, n * size);
  // One block copy (a transposition of dst's first and last dims) for each
  // index of the dims between them.
  const int64_t last = rank - 1;
  int64_t middle[kMaxRank] = {};
  int64_t from = 0, to = 0;  // elements of the block's origin
  for (;;) {
    CopyBlock({out.data() + to * size, count[0], count[last],
               out_stride[0] * size, out_stride[last] * size},
              {in.data() + from * size, count[0], count[last], step[0] * size,
               step[last] * size},
              size);
    int k = last - 1;
    for (; k >= 1; --k) {
      if (++middle[k] < count[k]) {
        from += step[k];
        to += out_stride[k];
        break;
      }
      from -= step[k] * (count[k] - 1);
      to -= out_stride[k] * (count[k] - 1);
      middle[k] = 0;
    }
    if (k < 1) break;
  }
  return ctx.WriteRaw(kDst, out);
}

}  // namespace

template <>
OpDef DefineOp<proto::DMA_TRANSPOSE>() {
  return {.engine = Engine::kDma,
          .roles = kRoles,
          .attrs = kAttrs,
          .check = Check,
          .execute = Execute};
}

}  // namespace nkigraph::ops
