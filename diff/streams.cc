#include "diff/streams.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "diff/align.h"
#include "diff/render.h"
#include "ops/attr_spec.h"
#include "ops/instr_facts.h"

namespace nkigraph::diff {
namespace {

bool SameAttrValue(const proto::Attr& x, const proto::Attr& y) {
  if (x.value_case() != y.value_case()) return false;
  switch (x.value_case()) {
    case proto::Attr::kI:
      return x.i() == y.i();
    case proto::Attr::kF:
      // Bitwise, as the keys compare (so NaN equals itself, -0 != 0).
      {
        const double fx = x.f(), fy = y.f();
        return std::memcmp(&fx, &fy, sizeof(double)) == 0;
      }
    case proto::Attr::kS:
      return x.s() == y.s();
    case proto::Attr::kInts:
      return std::equal(x.ints().values().begin(), x.ints().values().end(),
                        y.ints().values().begin(), y.ints().values().end());
    case proto::Attr::VALUE_NOT_SET:
      return true;
  }
  return true;
}

// The fields that differ between two instructions of the same opcode.
std::vector<FieldChange> InstrFields(const GraphModel& ma,
                                     const proto::Instruction& a,
                                     const GraphModel& mb,
                                     const proto::Instruction& b, bool strict) {
  std::vector<FieldChange> fields;
  auto add = [&](std::string field, std::optional<std::string> before,
                 std::optional<std::string> after) {
    if (before != after) {
      fields.push_back({std::move(field), std::move(before), std::move(after)});
    }
  };
  const int operands = std::max(a.operands_size(), b.operands_size());
  for (int i = 0; i < operands; ++i) {
    const std::string role =
        absl::StrCat("operand ", ops::OperandName(a.opcode(), i));
    if (i >= a.operands_size() || i >= b.operands_size()) {
      add(role,
          i < a.operands_size()
              ? std::optional<std::string>(OperandText(ma, a.operands(i)))
              : std::nullopt,
          i < b.operands_size()
              ? std::optional<std::string>(OperandText(mb, b.operands(i)))
              : std::nullopt);
      continue;
    }
    const proto::AccessPattern& x = a.operands(i);
    const proto::AccessPattern& y = b.operands(i);
    const uint32_t key_x =
        x.tensor_id() == 0 ? 0 : ma.tensor_keys[x.tensor_id() - 1];
    const uint32_t key_y =
        y.tensor_id() == 0 ? 0 : mb.tensor_keys[y.tensor_id() - 1];
    if (key_x != key_y) {
      add(role + " tensor", TensorRefText(ma, x.tensor_id()),
          TensorRefText(mb, y.tensor_id()));
    }
    add(role + " offset", absl::StrCat(x.offset()), absl::StrCat(y.offset()));
    add(role + " ap", PatternText(x), PatternText(y));
    add(role + " view", ViewText(x), ViewText(y));
    add(role + " dynamic", DynamicText(ma, x), DynamicText(mb, y));
    const uint32_t dyn_x = x.dynamic().tensor_id();
    const uint32_t dyn_y = y.dynamic().tensor_id();
    if ((dyn_x == 0 ? 0 : ma.tensor_keys[dyn_x - 1]) !=
        (dyn_y == 0 ? 0 : mb.tensor_keys[dyn_y - 1])) {
      add(role + " dynamic tensor", TensorRefText(ma, dyn_x),
          TensorRefText(mb, dyn_y));
    }
  }

  // Attributes by name, in name order.
  std::map<std::string, int> names;
  for (const proto::Attr& attr : a.attrs()) names[attr.name()] |= 1;
  for (const proto::Attr& attr : b.attrs()) names[attr.name()] |= 2;
  for (const auto& [name, sides] : names) {
    const proto::Attr* x = ops::FindAttr(a, name);
    const proto::Attr* y = ops::FindAttr(b, name);
    if (x != nullptr && y != nullptr && SameAttrValue(*x, *y)) continue;
    fields.push_back(
        {absl::StrCat("attr ", name),
         x == nullptr ? std::nullopt
                      : std::optional<std::string>(AttrValueText(*x)),
         y == nullptr ? std::nullopt
                      : std::optional<std::string>(AttrValueText(*y))});
  }

  if (strict) {
    add("source", SourceText(*ma.graph, a), SourceText(*mb.graph, b));
    add("scope", ScopeText(*ma.graph, a), ScopeText(*mb.graph, b));
  }
  return fields;
}

class StreamDiffer {
 public:
  StreamDiffer(const GraphModel& a, const GraphModel& b,
               const StreamDiffOptions& options)
      : a_(a), b_(b), options_(options) {}

  // Either stream may be null (the core exists on one side only).
  StreamDiff Run(uint32_t core, const proto::Stream* sa,
                 const std::vector<uint32_t>* keys_a, const proto::Stream* sb,
                 const std::vector<uint32_t>* keys_b) {
    StreamDiff diff;
    diff.core = core;
    diff.in_a = sa != nullptr;
    diff.in_b = sb != nullptr;
    sa_ = sa;
    sb_ = sb;
    diff.length_a = sa == nullptr ? 0 : sa->instructions_size();
    diff.length_b = sb == nullptr ? 0 : sb->instructions_size();
    static const std::vector<uint32_t> kEmpty;
    const Alignment alignment = Align(keys_a == nullptr ? kEmpty : *keys_a,
                                      keys_b == nullptr ? kEmpty : *keys_b);
    for (const Hunk& hunk : Hunks(alignment)) PairUp(hunk, diff);
    return diff;
  }

 private:
  const proto::Instruction& InstrA(int64_t i) const {
    return sa_->instructions(static_cast<int>(i));
  }
  const proto::Instruction& InstrB(int64_t j) const {
    return sb_->instructions(static_cast<int>(j));
  }

  // Reports a hunk: same-opcode instructions paired as changed.
  void PairUp(const Hunk& hunk, StreamDiff& diff) {
    std::vector<uint32_t> ops_a, ops_b;
    for (int64_t i = hunk.a_begin; i < hunk.a_end; ++i) {
      ops_a.push_back(static_cast<uint32_t>(InstrA(i).opcode()));
    }
    for (int64_t j = hunk.b_begin; j < hunk.b_end; ++j) {
      ops_b.push_back(static_cast<uint32_t>(InstrB(j).opcode()));
    }
    const Alignment pairing = Align(ops_a, ops_b);
    size_t i = 0, j = 0;
    while (i < ops_a.size() || j < ops_b.size()) {
      if (i < ops_a.size() && pairing.removed[i]) {
        Emit(ChangeKind::kRemoved, hunk.a_begin + static_cast<int64_t>(i++), -1,
             diff);
      } else if (j < ops_b.size() && pairing.added[j]) {
        Emit(ChangeKind::kAdded, -1, hunk.b_begin + static_cast<int64_t>(j++),
             diff);
      } else {
        Emit(ChangeKind::kChanged, hunk.a_begin + static_cast<int64_t>(i++),
             hunk.b_begin + static_cast<int64_t>(j++), diff);
      }
    }
  }

  void Emit(ChangeKind kind, int64_t i, int64_t j, StreamDiff& diff) {
    diff.counts.Add(kind);
    if (options_.max_changes > 0 &&
        static_cast<int64_t>(diff.changes.size()) >= options_.max_changes) {
      ++diff.omitted;
      return;
    }
    InstrChange change;
    change.kind = kind;
    change.index_a = i;
    change.index_b = j;
    if (i >= 0) {
      const proto::Instruction& x = InstrA(i);
      change.id_a = x.id();
      change.opcode = ops::OpcodeName(x.opcode());
      change.text_a = InstrText(a_, x);
      change.source_a = SourceText(*a_.graph, x);
    }
    if (j >= 0) {
      const proto::Instruction& y = InstrB(j);
      change.id_b = y.id();
      change.opcode = ops::OpcodeName(y.opcode());
      change.text_b = InstrText(b_, y);
      change.source_b = SourceText(*b_.graph, y);
    }
    if (kind == ChangeKind::kChanged) {
      change.fields =
          InstrFields(a_, InstrA(i), b_, InstrB(j), options_.strict);
      if (change.fields.empty()) {
        // Differences the field view does not name (repeated attribute
        // names, say): show the whole instructions.
        change.fields.push_back({"instruction", change.text_a, change.text_b});
      }
    }
    diff.changes.push_back(std::move(change));
  }

  const GraphModel& a_;
  const GraphModel& b_;
  const StreamDiffOptions& options_;
  const proto::Stream* sa_ = nullptr;
  const proto::Stream* sb_ = nullptr;
};

}  // namespace

void DiffStreams(const GraphModel& a, const GraphModel& b,
                 const StreamDiffOptions& options, DiffResult* result) {
  // Streams by core; BuildModel has refused duplicate cores.
  std::map<uint32_t, std::pair<int, int>> by_core;
  for (int s = 0; s < a.graph->streams_size(); ++s) {
    by_core.try_emplace(a.graph->streams(s).core(), -1, -1)
        .first->second.first = s;
  }
  for (int s = 0; s < b.graph->streams_size(); ++s) {
    by_core.try_emplace(b.graph->streams(s).core(), -1, -1)
        .first->second.second = s;
  }
  StreamDiffer differ(a, b, options);
  for (const auto& [core, indexes] : by_core) {
    const auto [sa, sb] = indexes;
    StreamDiff diff = differ.Run(core, sa < 0 ? nullptr : &a.graph->streams(sa),
                                 sa < 0 ? nullptr : &a.stream_keys[sa],
                                 sb < 0 ? nullptr : &b.graph->streams(sb),
                                 sb < 0 ? nullptr : &b.stream_keys[sb]);
    result->instruction_counts += diff.counts;
    result->streams.push_back(std::move(diff));
  }
}

}  // namespace nkigraph::diff
