// all_gather: every rank of a replica group receives the srcs of all the
// group's ranks, in group order, concatenated along collective_dim: dim 0
// concatenates the element sequences (HBM or SBUF); dim 1 (SBUF [P, F]
// tiles only) puts rank j's row p at dst[p, j*F : (j+1)*F].
#include <cstring>
#include <vector>

#include "ops/access_pattern.h"
#include "ops/exec_context.h"
#include "ops/op_def.h"
#include "ops/op_util.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
namespace {

constexpr OperandRole kRoles[] = {{"dst", Access::kWrite, kSbufOrHbm},
                                  {"src", Access::kRead, kSbufOrHbm}};
constexpr int kDst = RoleOf(kRoles, "dst");
constexpr int kSrc = RoleOf(kRoles, "src");

constexpr AttrSpec kAttrs[] = {
    IntSpec("collective_dim", 0, "the dim the ranks' srcs concatenate along")
        .Range(0, 1)
        .WrittenAtDefault()};
constexpr const AttrSpec& kCollectiveDim = AttrOf(kAttrs, "collective_dim");

// Ranks per replica group (the validator makes the groups equal in size).
int64_t GroupSize(const proto::World& world) {
  const int64_t n = world.replica_groups_size() == 0
                        ? world.num_ranks()
                        : world.replica_groups(0).ranks_size();
  return n < 1 ? 1 : n;
}

absl::Status Check(const InstrView& v) {
  const OperandInfo& dst = v.operand(kDst);
  const OperandInfo& src = v.operand(kSrc);
  const bool hbm = IsHbm(dst.space());
  if (hbm != IsHbm(src.space())) {
    return v.Error("'dst' is in ", SpaceName(dst.space()), " and 'src' in ",
                   SpaceName(src.space()),
                   "; both must be in sbuf or both in hbm");
  }
  if (dst.dtype() != src.dtype()) {
    return v.Error("'dst' is ", DTypeName(dst.dtype()), " but 'src' is ",
                   DTypeName(src.dtype()), "; they must match");
  }
  const int64_t dim = v.Int(kCollectiveDim);
  if (hbm ? dim != 0 : dim != 0 && dim != 1) {
    return v.Error("collective_dim is ", dim, "; ",
                   hbm ? "0 allowed in hbm" : "0 or 1 allowed in sbuf");
  }
  const int64_t n = GroupSize(v.world());
  if (dim == 0) {
    if (dst.elements() % n != 0 || dst.elements() / n != src.elements()) {
      return v.Error("'dst' has ", dst.elements(), " elements; it must hold ",
                     n, " ranks' 'src' of ", src.elements(), " elements each");
    }
    return absl::OkStatus();
  }
  if (dst.partitions() != src.partitions() || dst.free_size() % n != 0 ||
      dst.free_size() / n != src.free_size()) {
    return v.Error("'dst' is [", dst.partitions(), ", ", dst.free_size(),
                   "]; it must hold ", n, " ranks' 'src' [", src.partitions(),
                   ", ", src.free_size(), "] side by side, each row ", n,
                   " times as long");
  }
  return absl::OkStatus();
}

absl::Status ExecuteGroup(absl::Span<ExecContext* const> group) {
  const int64_t n = static_cast<int64_t>(group.size());
  if (n == 0) return absl::OkStatus();
  const InstrView& v = group[0]->view();
  const int64_t dim = v.Int(kCollectiveDim);
  const int64_t partitions = v.operand(kSrc).partitions();
  const int64_t size = DTypeSize(v.operand(kSrc).dtype());
  const int64_t src_bytes = v.operand(kSrc).elements() * size;
  // Every participant must agree on the shapes: each passed Check alone.
  for (ExecContext* ctx : group) {
    const OperandInfo& src = ctx->view().operand(kSrc);
    const OperandInfo& dst = ctx->view().operand(kDst);
    if (src.elements() * size != src_bytes ||
        src.dtype() != v.operand(kSrc).dtype() ||
        src.partitions() != partitions || dst.dtype() != src.dtype() ||
        dst.elements() / n != src.elements() || dst.elements() % n != 0 ||
        (dim == 1 && dst.partitions() != partitions) ||
        ctx->view().Int(kCollectiveDim) != dim) {
      return v.Error("the ", n, " participants disagree on shapes, ",
                     "dtypes or collective_dim (rank ", ctx->rank(), ")");
    }
  }
  std::vector<uint8_t> gathered(n * src_bytes);
  const int64_t row = src_bytes / partitions;  // dim 1: bytes per src row
  for (int64_t j = 0; j < n; ++j) {
    NKI_ASSIGN_OR_RETURN(absl::Span<const uint8_t> src,
                         group[j]->ReadRaw(kSrc));
    if (dim == 0) {
      std::memcpy(&gathered[j * src_bytes], src.data(), src_bytes);
      continue;
    }
    for (int64_t p = 0; p < partitions; ++p) {
      std::memcpy(&gathered[(p * n + j) * row], &src[p * row], row);
    }
  }
  for (ExecContext* ctx : group) {
    NKI_RETURN_IF_ERROR(ctx->WriteRaw(kDst, gathered));
  }
  return absl::OkStatus();
}

std::string Label(const proto::Instruction& instr) {
  return absl::StrCat("dim ", IntValue(instr, kCollectiveDim));
}

}  // namespace

template <>
OpDef DefineOp<proto::ALL_GATHER>() {
  return {.engine = Engine::kCollective,
          .roles = kRoles,
          .attrs = kAttrs,
          .sync = SyncKind::kCollective,
          .sync_rule = kReplicaGroupRule,
          .check = Check,
          .execute_group = ExecuteGroup,
          .label = Label};
}

}  // namespace nkigraph::ops
