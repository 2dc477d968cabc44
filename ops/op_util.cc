#include "ops/op_util.h"

#include "ops/access_pattern.h"
#include "absl/strings/str_cat.h"
#include "util/dtype.h"

namespace nkigraph::ops {

absl::Status CheckPartitionStart(const InstrView& view, int operand) {
  const OperandInfo& info = view.operand(operand);
  if (!info.present() || !IsOnChip(info.space())) return absl::OkStatus();
  const int64_t start = info.tensor->partition_offset() +
                        info.ap->offset() / RowElements(*info.tensor);
  const int64_t count = info.partitions();
  bool ok;
  if (count > 64) {
    ok = start == 0;
  } else if (count > 32) {
    ok = start == 0 || start == 64;
  } else {
    ok = start % 32 == 0;
  }
  if (!ok) {
    return view.Error("operand '", view.def().roles[operand].name,
                      "' spans ", count, " partitions starting at partition ",
                      start, "; ", count,
                      count > 64   ? " partitions must start at 0"
                      : count > 32 ? " partitions must start at 0 or 64"
                                   : " partitions must start at 0, 32, 64 or 96");
  }
  return absl::OkStatus();
}

absl::Status CheckSameTile(const InstrView& view, int a, int b) {
  const OperandInfo& x = view.operand(a);
  const OperandInfo& y = view.operand(b);
  if (x.partitions() != y.partitions() || x.free_size() != y.free_size()) {
    return view.Error("'", view.def().roles[a].name, "' is [", x.partitions(),
                      ", ", x.free_size(), "] but '", view.def().roles[b].name,
                      "' is [", y.partitions(), ", ", y.free_size(), "]");
  }
  return absl::OkStatus();
}

absl::Status CheckSameElements(const InstrView& view, int a, int b) {
  const OperandInfo& x = view.operand(a);
  const OperandInfo& y = view.operand(b);
  if (x.elements() != y.elements()) {
    return view.Error("'", view.def().roles[a].name, "' has ", x.elements(),
                      " elements but '", view.def().roles[b].name, "' has ",
                      y.elements());
  }
  return absl::OkStatus();
}

absl::Status CheckColumn(const InstrView& view, int operand,
                         int64_t partitions) {
  const OperandInfo& info = view.operand(operand);
  if (!info.present()) return absl::OkStatus();
  if (info.partitions() != partitions || info.free_size() != 1) {
    return view.Error("'", view.def().roles[operand].name, "' must be [",
                      partitions, ", 1], not [", info.partitions(), ", ",
                      info.free_size(), "]");
  }
  return absl::OkStatus();
}

absl::Status CheckPartitions(const InstrView& view, int operand) {
  const OperandInfo& info = view.operand(operand);
  if (info.present() && IsOnChip(info.space()) &&
      info.partitions() > view.profile().num_partitions) {
    return view.Error("'", view.def().roles[operand].name, "' spans ",
                      info.partitions(), " partitions; the limit is ",
                      view.profile().num_partitions);
  }
  return absl::OkStatus();
}

absl::StatusOr<Alu> AluAttr(const InstrView& view, absl::string_view name) {
  absl::StatusOr<Alu> op = ParseAlu(view.StrAttr(name));
  if (!op.ok()) return view.Error("attribute '", name, "': ", op.status().message());
  return op;
}

absl::Status CopyOperand(ExecContext& ctx, int dst, int src) {
  const InstrView& view = ctx.view();
  if (view.operand(dst).dtype() == view.operand(src).dtype()) {
    absl::StatusOr<absl::Span<const uint8_t>> bytes = ctx.ReadRaw(src);
    if (!bytes.ok()) return bytes.status();
    return ctx.WriteRaw(dst, *bytes);
  }
  const bool integers = !IsFloatDType(view.operand(dst).dtype()) &&
                        !IsFloatDType(view.operand(src).dtype());
  if (integers) {
    absl::StatusOr<absl::Span<const int64_t>> values = ctx.ReadInt(src);
    if (!values.ok()) return values.status();
    return ctx.WriteInt(dst, *values);
  }
  absl::StatusOr<absl::Span<const float>> values = ctx.ReadFloat(src);
  if (!values.ok()) return values.status();
  return ctx.WriteFloat(dst, *values);
}

absl::StatusOr<GroupPosition> GroupOf(const proto::World& world, int rank) {
  GroupPosition position;
  if (world.replica_groups_size() == 0) {
    for (uint32_t r = 0; r < std::max<uint32_t>(world.num_ranks(), 1); ++r) {
      position.ranks.push_back(static_cast<int>(r));
    }
    position.index = rank;
    return position;
  }
  for (const proto::ReplicaGroup& group : world.replica_groups()) {
    for (int i = 0; i < group.ranks_size(); ++i) {
      if (static_cast<int>(group.ranks(i)) == rank) {
        position.ranks.assign(group.ranks().begin(), group.ranks().end());
        position.index = i;
        return position;
      }
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("rank ", rank, " is in no replica group of the world"));
}

}  // namespace nkigraph::ops
