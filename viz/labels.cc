#include "viz/labels.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ops/access_pattern.h"
#include "ops/instr_facts.h"
#include "ops/instr_view.h"
#include "util/dtype.h"

namespace nkigraph::viz {
namespace {

bool IsDynamic(const proto::AccessPattern& ap) {
  return ap.dynamic().kind() != proto::DynamicOffset::KIND_UNSPECIFIED;
}

// "[128x512]": partitions x free elements of an access pattern.
std::string Extent(const proto::AccessPattern& ap) {
  const int64_t elements = ops::ApElements(ap);
  const int64_t first = ops::NumDims(ap) > 0 ? ops::Count(ap, 0) : 1;
  if (ops::NumDims(ap) <= 1) return absl::StrCat(elements);
  return absl::StrCat(first, "x", elements / first);
}

std::string OperandName(const graph::GraphIndex& index,
                        const proto::AccessPattern& ap) {
  std::string name = ShortName(index.tensor(ap.tensor_id()).name());
  if (ap.view_dtype() != proto::DTYPE_UNSPECIFIED) {
    absl::StrAppend(&name, " as ", DTypeName(ap.view_dtype()));
  }
  if (IsDynamic(ap)) name += "[dyn]";
  return name;
}

// Names, at most `max` of them, then "+N".
std::string NameList(const std::vector<std::string>& names, size_t max) {
  std::vector<std::string> unique;
  for (const std::string& name : names) {
    if (std::find(unique.begin(), unique.end(), name) == unique.end()) {
      unique.push_back(name);
    }
  }
  if (unique.size() <= max) return absl::StrJoin(unique, ", ");
  const size_t rest = unique.size() - max;
  unique.resize(max);
  return absl::StrCat(absl::StrJoin(unique, ", "), " +", rest);
}

}  // namespace

std::string EscapeLabel(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string ShortName(absl::string_view name, size_t max) {
  if (name.empty()) return "?";
  if (name.size() <= max) return std::string(name);
  return absl::StrCat(name.substr(0, max - 1), "~");
}

std::string InstrLabel(const graph::GraphIndex& index, int i) {
  const graph::InstrInfo& info = index.info(i);
  const proto::Instruction& instr = *info.instr;
  std::string head = ops::ShortOpcodeName(instr.opcode());
  if (std::string detail = ops::InstrDetail(instr); !detail.empty()) {
    absl::StrAppend(&head, " ", detail);
  }
  std::vector<std::string> writes, reads;
  const proto::AccessPattern* shown = nullptr;
  for (int o = 0; o < instr.operands_size(); ++o) {
    const proto::AccessPattern& ap = instr.operands(o);
    if (ap.tensor_id() == 0) continue;
    // Reads and writes as the dependency analysis sees them (an
    // accumulating dst is read too).
    if (ops::WritesOperand(instr, o)) {
      writes.push_back(OperandName(index, ap));
      if (shown == nullptr) shown = &ap;
    }
    if (ops::ReadsOperand(instr, o)) reads.push_back(OperandName(index, ap));
  }
  if (shown == nullptr && instr.operands_size() > 0 &&
      instr.operands(0).tensor_id() != 0) {
    shown = &instr.operands(0);
  }
  std::string flow;
  if (!writes.empty() && !reads.empty()) {
    flow = absl::StrCat(NameList(writes, 2), " <- ", NameList(reads, 3));
  } else if (!writes.empty()) {
    flow = absl::StrCat(NameList(writes, 2), " <-");
  } else {
    flow = NameList(reads, 3);
  }
  std::string last = absl::StrCat("#", instr.id());
  if (shown != nullptr) absl::StrAppend(&last, "  ", Extent(*shown));
  return EscapeLabel(absl::StrCat(head, "\n", flow, "\n", last));
}

std::string InstrTooltip(const graph::GraphIndex& index, int i) {
  const graph::InstrInfo& info = index.info(i);
  const proto::Instruction& instr = *info.instr;
  const proto::Graph& graph = index.graph();
  std::string text = absl::StrCat(
      ops::OpcodeName(instr.opcode()), " #", instr.id(), " on core ", info.core,
      " (", ops::EngineName(info.engine), " engine), position ", info.position);
  if (instr.file() < static_cast<uint32_t>(graph.files_size())) {
    absl::StrAppend(&text, "\n", graph.files(static_cast<int>(instr.file())),
                    ":", instr.line());
  }
  const std::string& scope = index.scope_path(instr.scope());
  if (!scope.empty()) absl::StrAppend(&text, "\nscope ", scope);
  for (int o = 0; o < instr.operands_size(); ++o) {
    const proto::AccessPattern& ap = instr.operands(o);
    if (ap.tensor_id() == 0) continue;
    const ops::OperandRole& role = *ops::OperandRoleOf(*info.def, o);
    const proto::Tensor& tensor = index.tensor(ap.tensor_id());
    absl::StrAppend(&text, "\n", role.name, ": ", tensor.name(), " (",
                    ops::SpaceName(tensor.space()), " ",
                    DTypeName(tensor.dtype()), ") [", Extent(ap), "]");
    if (IsDynamic(ap)) {
      absl::StrAppend(&text, " indexed by ",
                      ap.dynamic().tensor_id() != 0
                          ? index.tensor(ap.dynamic().tensor_id()).name()
                          : std::string("?"));
    }
  }
  return EscapeLabel(text);
}

namespace {

// "tensor 32 | dma 64", the busiest engines first (at most three).
std::string EngineCounts(const Group& group) {
  std::vector<std::pair<int64_t, int>> counts;
  for (int e = 0; e < graph::kNumEngines; ++e) {
    if (group.per_engine[e] > 0) counts.push_back({-group.per_engine[e], e});
  }
  std::sort(counts.begin(), counts.end());
  std::vector<std::string> parts;
  for (size_t k = 0; k < counts.size() && k < 3; ++k) {
    parts.push_back(absl::StrCat(
        ops::EngineName(static_cast<ops::Engine>(counts[k].second)), " ",
        -counts[k].first));
  }
  if (counts.size() > 3) parts.push_back("...");
  return absl::StrJoin(parts, " | ");
}

// The nearest enclosing scope or lane name.
std::string OwnerName(const GroupTree& tree, int g) {
  for (int p = tree.group(g).parent; p >= 0; p = tree.group(p).parent) {
    const Group& parent = tree.group(p);
    if (parent.kind == GroupKind::kScope || parent.kind == GroupKind::kLane) {
      return parent.name;
    }
  }
  return "";
}

std::string IdRange(const graph::GraphIndex& index, const Group& group) {
  if (group.first < 0) return "";
  return absl::StrCat("#", index.instr(group.first).id(), "-#",
                      index.instr(group.last).id());
}

}  // namespace

std::string GroupLabel(const graph::GraphIndex& index, const GroupTree& tree,
                       int g) {
  const Group& group = tree.group(g);
  std::string title;
  switch (group.kind) {
    case GroupKind::kLane:
    case GroupKind::kScope:
      title = ShortName(group.name, 24);
      break;
    case GroupKind::kChunk:
      title = absl::StrCat(ShortName(OwnerName(tree, g), 16), " ",
                           IdRange(index, group));
      break;
    case GroupKind::kRun:
      title = IdRange(index, group);
      break;
  }
  std::string counts = absl::StrCat(group.instrs, " instrs");
  if (group.syncs > 0) absl::StrAppend(&counts, ", ", group.syncs, " sync");
  return EscapeLabel(
      absl::StrCat(title, "\n", counts, "\n", EngineCounts(group)));
}

std::string GroupTooltip(const graph::GraphIndex& index, const GroupTree& tree,
                         int g) {
  const Group& group = tree.group(g);
  std::string text;
  if (!group.path.empty()) absl::StrAppend(&text, "scope ", group.path, "\n");
  absl::StrAppend(&text, group.instrs, " instructions ", IdRange(index, group),
                  " (collapsed)");
  for (int e = 0; e < graph::kNumEngines; ++e) {
    if (group.per_engine[e] == 0) continue;
    absl::StrAppend(&text, "\n", ops::EngineName(static_cast<ops::Engine>(e)),
                    ": ", group.per_engine[e]);
  }
  return EscapeLabel(text);
}

}  // namespace nkigraph::viz
