#include "ops/op_util.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ops/access_pattern.h"
#include "ops/block_copy.h"
#include "ops/split_work.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::ops {
absl::Status CheckPartitionStart(const InstrView& view, int operand) {
  const OperandInfo& info = view.operand(operand);
  if (!info.present() || !IsOnChip(info.space())) return absl::OkStatus();
  const int64_t start = info.tensor->partition_offset() +
                        info.offset() / RowElements(*info.tensor);
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
    return view.Error("operand '", view.RoleName(operand), "' spans ", count,
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
    return view.Error("'", view.RoleName(a), "' is [", x.partitions(), ", ",
                      x.free_size(), "] but '", view.RoleName(b), "' is [",
                      y.partitions(), ", ", y.free_size(), "]");
  }
  return absl::OkStatus();
}

absl::Status CheckSameElements(const InstrView& view, int a, int b) {
  const OperandInfo& x = view.operand(a);
  const OperandInfo& y = view.operand(b);
  if (x.elements() != y.elements()) {
    return view.Error("'", view.RoleName(a), "' has ", x.elements(),
                      " elements but '", view.RoleName(b), "' has ",
                      y.elements());
  }
  return absl::OkStatus();
}

absl::Status CheckColumn(const InstrView& view, int operand,
                         int64_t partitions) {
  const OperandInfo& info = view.operand(operand);
  if (!info.present()) return absl::OkStatus();
  if (info.partitions() != partitions || info.free_size() != 1) {
    return view.Error("'", view.RoleName(operand), "' must be [", partitions,
                      ", 1], not [", info.partitions(), ", ", info.free_size(),
                      "]");
  }
  return absl::OkStatus();
}

absl::Status CheckTwoTiles(const InstrView& view, int dst, int data,
                           int other) {
  NKI_RETURN_IF_ERROR(CheckPartitions(view, data));
  NKI_RETURN_IF_ERROR(CheckSameTile(view, dst, data));
  NKI_RETURN_IF_ERROR(CheckSameTile(view, other, data));
  if (view.operand(data).space() == proto::PSUM &&
      view.operand(other).space() == proto::PSUM) {
    return view.Error("'", view.RoleName(data), "' and '", view.RoleName(other),
                      "' cannot both be in psum");
  }
  return absl::OkStatus();
}

absl::Status CheckArithmetic(const InstrView& view,
                             std::initializer_list<const AttrSpec*> specs) {
  for (const AttrSpec* spec : specs) {
    if (IsBitwise(AluOf(view, *spec))) {
      return view.Error(spec->name, " '", view.Str(*spec),
                        "' is bitwise; only arithmetic operations allowed");
    }
  }
  return absl::OkStatus();
}

absl::Status CheckPartitions(const InstrView& view, int operand) {
  const OperandInfo& info = view.operand(operand);
  if (info.present() && IsOnChip(info.space()) &&
      info.partitions() > view.profile().num_partitions) {
    return view.Error("'", view.RoleName(operand), "' spans ",
                      info.partitions(), " partitions; the limit is ",
                      view.profile().num_partitions);
  }
  return absl::OkStatus();
}

Alu AluOfNamed(const InstrView& view, const AttrSpec& spec) {
  absl::StatusOr<Alu> op = ParseAlu(view.Str(spec));
  return op.ok() ? *op : Alu::kBypass;  // unreachable on a checked instruction
}

absl::StatusOr<FloatRows> ReadFloatRows(ExecContext& ctx, int i) {
  const OperandInfo& op = ctx.view().operand(i);
  // In place whatever the size: finding a layout costs less than walking
  // the operand into a copy, even for one element.
  if (op.dtype() == proto::FLOAT32) {
    absl::StatusOr<ExecContext::Rows> rows = ctx.ReadRows(i);
    if (!rows.ok()) return rows.status();
    if (rows->data != nullptr &&
        reinterpret_cast<uintptr_t>(rows->data) % alignof(float) == 0 &&
        rows->stride % 4 == 0) {
      return FloatRows{reinterpret_cast<const float*>(rows->data), rows->rows,
                       rows->cols, rows->stride / 4};
    }
  }
  absl::StatusOr<absl::Span<const float>> values = ctx.ReadFloat(i);
  if (!values.ok()) return values.status();
  return FloatRows{values->data(), op.partitions(), op.free_size(),
                   op.free_size(), /*copied=*/true};
}

bool MayOverlap(const OperandInfo& a, const OperandInfo& b) {
  const proto::Tensor& x = *a.tensor;
  const proto::Tensor& y = *b.tensor;
  const bool x_on_chip = a.facts.known ? a.facts.on_chip : IsOnChip(x.space());
  const bool y_on_chip = b.facts.known ? b.facts.on_chip : IsOnChip(y.space());
  if (x_on_chip != y_on_chip) return false;
  if (x_on_chip && (x.space() != y.space() || x.core() != y.core())) {
    return false;
  }
  // Bytes from the address: the whole tensor in HBM, one partition row on
  // chip (partition ranges are not compared: overlap is assumed).
  // (The tensor's alone, as ComputeOperandFacts works it out: a view made
  // for checking has no facts, and the builder's has no message.)
  auto extent = [](const OperandInfo& info) {
    if (info.facts.known) {
      return std::pair{info.facts.extent_lo, info.facts.extent_hi};
    }
    const proto::Tensor& t = *info.tensor;
    int64_t elements = IsOnChip(t.space()) ? RowElements(t) : 1;
    if (!IsOnChip(t.space())) {
      for (int64_t d : t.shape()) elements *= d;
    }
    const int64_t lo = static_cast<int64_t>(t.address());
    return std::pair{lo, lo + elements * DTypeSize(t.dtype())};
  };
  const auto [x_lo, x_hi] = extent(a);
  const auto [y_lo, y_hi] = extent(b);
  return x_lo < y_hi && y_lo < x_hi;
}

namespace {

// The same elements of the same tensor in the same order.
bool SameAccess(const OperandInfo& x, const OperandInfo& y) {
  if (x.facts.known && y.facts.known && x.facts.as_rows && y.facts.as_rows) {
    // Rows in element order: equal rows, columns and starts of one tensor
    // are the same elements in the same order, however the patterns spell
    // them. The tensors compared by declaration, without reading the
    // patterns (cold in a long stream): two bitcast views, each its own
    // viewed tensor, never count as the same (the safe answer).
    const OperandFacts& f = x.facts;
    const OperandFacts& g = y.facts;
    return x.tensor == y.tensor && f.rows == g.rows && f.cols == g.cols &&
           f.flat == g.flat && (f.rows == 1 || f.flat_stride == g.flat_stride);
  }
  const proto::AccessPattern& a = *x.ap;
  const proto::AccessPattern& b = *y.ap;
  return a.tensor_id() == b.tensor_id() && a.view_dtype() == b.view_dtype() &&
         a.offset() == b.offset() &&
         a.dynamic().kind() == proto::DynamicOffset::KIND_UNSPECIFIED &&
         b.dynamic().kind() == proto::DynamicOffset::KIND_UNSPECIFIED &&
         a.pattern_size() == b.pattern_size() &&
         std::equal(a.pattern().begin(), a.pattern().end(),
                    b.pattern().begin());
}

}  // namespace

bool InPlaceSafe(const OperandInfo& dst, const OperandInfo& src) {
  return !MayOverlap(dst, src) || SameAccess(dst, src);
}

FloatOut FloatDestination(
    ExecContext& ctx, int dst,
    std::initializer_list<std::pair<int, FloatRows>> sources,
    std::vector<float>& scratch) {
  const InstrView& view = ctx.view();
  const OperandInfo& d = view.operand(dst);
  bool usable = d.dtype() == proto::FLOAT32 &&
                (d.facts.known ? d.facts.on_chip : IsOnChip(d.space()));
  for (const auto& [i, rows] : sources) {
    if (!usable) break;
    usable = InPlaceSafe(d, view.operand(i));
  }
  FloatOut out;
  if (usable) {
    out.rows = ctx.WriteFloatInPlace(dst);
    out.in_place = out.rows.data != nullptr;
  }
  if (!out.in_place) {
    const int64_t cols = d.free_size();
    scratch.resize(d.elements());
    out.rows = {scratch.data(), d.partitions(), cols, cols};
  }
  return out;
}

absl::Status FinishFloat(ExecContext& ctx, int dst, const FloatOut& out,
                         const std::vector<float>& scratch) {
  if (out.in_place) return absl::OkStatus();
  return ctx.WriteFloat(dst, scratch);
}

namespace {

// Below this many bytes a copy's second thread costs more in its hand-off
// than it saves.
constexpr int64_t kMinCopySplitBytes = int64_t{1} << 18;

// Operand `dst` = the (checked) block `from`, element for element, the
// dtypes and element counts being the same.
absl::Status CopyFromBlock(ExecContext& ctx, int dst, const ConstBlock& from) {
  const int64_t esize = DTypeSize(ctx.view().operand(dst).dtype());
  const MutableBlock to = ctx.WriteBlockInPlace(dst, from.cols);
  if (to.data != nullptr) {
    // A big copy splits its rows over the threads the run lends: one core
    // moves a fraction of what the machine's memory can. By 16 rows, the
    // transposing path's register block.
    ForRowRanges(
        from.rows, from.rows * from.cols * esize, 16,
        [&](int64_t r0, int64_t r1) {
          CopyBlock(BlockRows(to, r0, r1), BlockRows(from, r0, r1), esize);
        },
        kMinCopySplitBytes);
    return absl::OkStatus();
  }
  if (from.col_stride == esize) {
    return ctx.WriteRawRows(
        dst, ExecContext::Rows{
                 from.data, from.rows, from.cols,
                 from.rows == 1 ? from.cols * esize : from.row_stride});
  }
  // Gathered in element order, as ReadRaw would have.
  absl::Span<uint8_t> bytes =
      ScratchBytes(ctx, 0, from.rows * from.cols * esize);
  CopyBlock({bytes.data(), from.rows, from.cols, from.cols * esize, esize},
            from, esize);
  return ctx.WriteRaw(dst, bytes);
}

}  // namespace

absl::Status CopyOperand(ExecContext& ctx, int dst, int src) {
  const InstrView& view = ctx.view();
  if (view.operand(dst).dtype() == view.operand(src).dtype()) {
    // In place from the source where it lies in rows and the destination
    // cannot overwrite it on the way: block to block where both lie so (a
    // transposing DMA among them), else from the source's rows.
    if (!MayOverlap(view.operand(dst), view.operand(src))) {
      absl::StatusOr<ConstBlock> from = ctx.ReadBlock(src);
      if (!from.ok()) return from.status();
      if (from->data != nullptr) return CopyFromBlock(ctx, dst, *from);
      absl::StatusOr<ExecContext::Rows> rows = ctx.ReadRows(src);
      if (!rows.ok()) return rows.status();
      if (rows->data != nullptr) return ctx.WriteRawRows(dst, *rows);
    }
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
  const absl::Span<const int64_t> pattern = view.Ints(kAffinePatternSpec);
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
  bool ok = magnitude(view.Int(kAffineOffsetSpec), &bound) &&
            magnitude(view.Int(kChannelMultiplierSpec), &term) &&
            !__builtin_mul_overflow(term, info.partitions() - 1, &term) &&
            !__builtin_add_overflow(bound, term, &bound);
  int64_t product = 1;
  for (size_t d = 0; d < pattern.size(); d += 2) {
    const int64_t step = pattern[d];
    const int64_t num = pattern[d + 1];
    if (num < 1 || num > info.free_size()) {
      return view.Error("pattern pair ", d / 2, " has num ", num, "; 1 to ",
                        info.free_size(), " ('", view.RoleName(operand),
                        "' free size) allowed");
    }
    if (num > info.free_size() / product) {  // the product would exceed it
      return view.Error("pattern covers more than ", info.free_size(),
                        " elements per partition, the free size of '",
                        view.RoleName(operand), "'");
    }
    product *= num;
    ok = ok && magnitude(step, &term) &&
         !__builtin_mul_overflow(term, num - 1, &term) &&
         !__builtin_add_overflow(bound, term, &bound);
  }
  if (product != info.free_size()) {
    return view.Error("pattern covers ", product,
                      " elements per partition but '", view.RoleName(operand),
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
  const absl::Span<const int64_t> pattern = view.Ints(kAffinePatternSpec);
  const int dims = static_cast<int>(pattern.size() / 2);
  const int64_t offset = view.Int(kAffineOffsetSpec);
  const int64_t multiplier = view.Int(kChannelMultiplierSpec);
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

}  // namespace nkigraph::ops
