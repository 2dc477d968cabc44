#include "ops/op_util.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "ops/access_pattern.h"
#include "util/dtype.h"

namespace nkigraph::ops {
namespace {

// The name of operand `operand`'s role; a variadic last role names every
// operand from its position on (dma_compute's sources).
absl::string_view RoleName(const InstrView& view, int operand) {
  const std::vector<OperandRole>& roles = view.def().roles;
  return roles[std::min<size_t>(operand, roles.size() - 1)].name;
}

}  // namespace

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
    return view.Error("operand '", RoleName(view, operand), "' spans ", count,
                      " partitions starting at partition ", start, "; ", count,
                      count > 64 ? " partitions must start at 0"
                      : count > 32
                          ? " partitions must start at 0 or 64"
                          : " partitions must start at 0, 32, 64 or 96");
  }
  return absl::OkStatus();
}

absl::Status CheckSameTile(const InstrView& view, int a, int b) {
  const OperandInfo& x = view.operand(a);
  const OperandInfo& y = view.operand(b);
  // With equal partition counts, equal element counts mean equal free sizes;
  // comparing those spares two divisions on every traced instruction.
  if (x.partitions() != y.partitions() || x.elements() != y.elements()) {
    return view.Error("'", RoleName(view, a), "' is [", x.partitions(), ", ",
                      x.free_size(), "] but '", RoleName(view, b), "' is [",
                      y.partitions(), ", ", y.free_size(), "]");
  }
  return absl::OkStatus();
}

absl::Status CheckSameElements(const InstrView& view, int a, int b) {
  const OperandInfo& x = view.operand(a);
  const OperandInfo& y = view.operand(b);
  if (x.elements() != y.elements()) {
    return view.Error("'", RoleName(view, a), "' has ", x.elements(),
                      " elements but '", RoleName(view, b), "' has ",
                      y.elements());
  }
  return absl::OkStatus();
}

absl::Status CheckColumn(const InstrView& view, int operand,
                         int64_t partitions) {
  const OperandInfo& info = view.operand(operand);
  if (!info.present()) return absl::OkStatus();
  if (info.partitions() != partitions || info.free_size() != 1) {
    return view.Error("'", RoleName(view, operand), "' must be [", partitions,
                      ", 1], not [", info.partitions(), ", ", info.free_size(),
                      "]");
  }
  return absl::OkStatus();
}

absl::Status CheckPartitions(const InstrView& view, int operand) {
  const OperandInfo& info = view.operand(operand);
  if (info.present() && IsOnChip(info.space()) &&
      info.partitions() > view.profile().num_partitions) {
    return view.Error("'", RoleName(view, operand), "' spans ",
                      info.partitions(), " partitions; the limit is ",
                      view.profile().num_partitions);
  }
  return absl::OkStatus();
}

absl::StatusOr<Alu> AluAttr(const InstrView& view, absl::string_view name) {
  absl::StatusOr<Alu> op = ParseAlu(view.StrAttr(name));
  if (!op.ok()) {
    return view.Error("attribute '", name, "': ", op.status().message());
  }
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

absl::Span<uint8_t> ScratchBytes(ExecContext& ctx, int slot, int64_t size) {
  std::vector<int64_t>& storage = ctx.ScratchInt(slot);
  storage.resize((size + 7) / 8);
  return absl::MakeSpan(reinterpret_cast<uint8_t*>(storage.data()),
                        static_cast<size_t>(size));
}

absl::Status CheckAffinePattern(const InstrView& view, int operand) {
  const OperandInfo& info = view.operand(operand);
  const absl::Span<const int64_t> pattern = view.IntsAttr("pattern");
  if (pattern.empty() || pattern.size() % 2 != 0 || pattern.size() > 8) {
    return view.Error(
        "attribute 'pattern' must hold 1 to 4 [step, num] pairs; ", "it has ",
        pattern.size(), " values");
  }
  // Bound |value| by |offset| + |channel_multiplier| * (P - 1) +
  // sum(|step_d| * (num_d - 1)); if the bound fits, every value does.
  const auto magnitude = [](int64_t x, int64_t* out) {
    if (x == std::numeric_limits<int64_t>::min()) return false;
    *out = x < 0 ? -x : x;
    return true;
  };
  constexpr int64_t kLimit = int64_t{1} << 62;
  int64_t bound = 0;
  int64_t term = 0;
  bool ok = magnitude(view.IntAttr("offset"), &bound) &&
            magnitude(view.IntAttr("channel_multiplier"), &term) &&
            !__builtin_mul_overflow(term, info.partitions() - 1, &term) &&
            !__builtin_add_overflow(bound, term, &bound);
  int64_t product = 1;
  for (size_t d = 0; d < pattern.size(); d += 2) {
    const int64_t step = pattern[d];
    const int64_t num = pattern[d + 1];
    if (num < 1 || num > info.free_size()) {
      return view.Error("pattern pair ", d / 2, " has num ", num, "; 1 to ",
                        info.free_size(), " ('", RoleName(view, operand),
                        "' free size) allowed");
    }
    if (num > info.free_size() / product) {  // the product would exceed it
      return view.Error("pattern covers more than ", info.free_size(),
                        " elements per partition, the free size of '",
                        RoleName(view, operand), "'");
    }
    product *= num;
    ok = ok && magnitude(step, &term) &&
         !__builtin_mul_overflow(term, num - 1, &term) &&
         !__builtin_add_overflow(bound, term, &bound);
  }
  if (product != info.free_size()) {
    return view.Error("pattern covers ", product,
                      " elements per partition but '", RoleName(view, operand),
                      "' has ", info.free_size());
  }
  if (!ok || bound > kLimit) {
    return view.Error("pattern, offset and channel_multiplier give values ",
                      "beyond 2^62");
  }
  return absl::OkStatus();
}

void AffineValues(const InstrView& view, int operand,
                  std::vector<int64_t>& values) {
  const OperandInfo& info = view.operand(operand);
  const absl::Span<const int64_t> pattern = view.IntsAttr("pattern");
  const int dims = static_cast<int>(pattern.size() / 2);
  const int64_t offset = view.IntAttr("offset");
  const int64_t multiplier = view.IntAttr("channel_multiplier");
  const int64_t p_count = info.partitions();
  const int64_t f_count = info.free_size();
  values.resize(p_count * f_count);
  int64_t index[4] = {0, 0, 0, 0};
  for (int64_t p = 0; p < p_count; ++p) {
    int64_t value = offset + p * multiplier;
    for (int d = 0; d < dims; ++d) index[d] = 0;
    for (int64_t f = 0; f < f_count; ++f) {
      values[p * f_count + f] = value;
      // Advance the odometer over the pattern dims, innermost last.
      for (int d = dims - 1; d >= 0; --d) {
        const int64_t step = pattern[2 * d];
        const int64_t num = pattern[2 * d + 1];
        if (++index[d] < num) {
          value += step;
          break;
        }
        value -= step * (num - 1);
        index[d] = 0;
      }
    }
  }
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
