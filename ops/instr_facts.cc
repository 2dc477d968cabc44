#include "ops/instr_facts.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/attr_spec.h"

namespace nkigraph::ops {
namespace {

// The spec of attribute `name` of type `type`, or the error saying why
// there is none.
absl::StatusOr<const AttrSpec*> SpecFor(const proto::Instruction& instr,
                                        absl::string_view name, AttrType type) {
  const OpDef* def = FindOp(instr.opcode());
  if (def == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("instruction #", instr.id(), " has unknown opcode ",
                     static_cast<int>(instr.opcode())));
  }
  for (const AttrSpec& spec : def->attrs) {
    if (spec.name != name) continue;
    if (spec.type != type) {
      return absl::InvalidArgumentError(
          absl::StrCat(def->name, "'s attribute '", name, "' is ",
                       AttrTypeName(spec.type), ", not ", AttrTypeName(type)));
    }
    const proto::Attr* attr = FindAttr(instr, name);
    if (attr == nullptr && spec.required) {
      return absl::InvalidArgumentError(absl::StrCat(
          def->name, " #", instr.id(), " lacks its required '", name, "'"));
    }
    if (attr != nullptr && !HasAttr(instr, spec)) {
      return absl::InvalidArgumentError(
          absl::StrCat(def->name, " #", instr.id(), "'s attribute '", name,
                       "' is not ", AttrTypeName(type)));
    }
    return &spec;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(def->name, " has no attribute '", name, "'"));
}

}  // namespace

std::string OpcodeName(proto::Opcode opcode) {
  if (const OpDef* def = FindOp(opcode)) return std::string(def->name);
  return absl::StrCat("opcode_", static_cast<int>(opcode));
}

std::string ShortOpcodeName(proto::Opcode opcode) {
  const OpDef* def = FindOp(opcode);
  if (def != nullptr && !def->short_name.empty()) {
    return std::string(def->short_name);
  }
  return OpcodeName(opcode);
}

namespace {

// Per opcode, its op's "engine" attribute, or nullptr when it declares
// none: found once, so asking an instruction's engine compares no names.
const AttrSpec* EngineAttrOf(proto::Opcode opcode) {
  static const std::vector<const AttrSpec*>* const by_code = [] {
    auto* table = new std::vector<const AttrSpec*>(proto::Opcode_ARRAYSIZE);
    for (int code = 0; code < proto::Opcode_ARRAYSIZE; ++code) {
      const OpDef* def = FindOp(static_cast<proto::Opcode>(code));
      if (def == nullptr) continue;
      for (const AttrSpec& spec : def->attrs) {
        if (spec.name == "engine") (*table)[code] = &spec;
      }
    }
    return table;
  }();
  return (*by_code)[opcode];
}

}  // namespace

std::optional<Engine> EngineOf(const proto::Instruction& instr) {
  const OpDef* def = FindOp(instr.opcode());
  if (def == nullptr) return std::nullopt;
  // Without the attribute set, its default, which the registry made the
  // op's engine.
  if (instr.attrs_size() == 0) return def->engine;
  const AttrSpec* spec = EngineAttrOf(instr.opcode());
  if (spec == nullptr) return def->engine;
  if (std::optional<Engine> engine = ParseEngine(StringValue(instr, *spec))) {
    return engine;
  }
  return def->engine;
}

absl::StatusOr<int64_t> IntAttr(const proto::Instruction& instr,
                                absl::string_view name) {
  absl::StatusOr<const AttrSpec*> spec = SpecFor(instr, name, AttrType::kInt);
  if (!spec.ok()) return spec.status();
  return IntValue(instr, **spec);
}

absl::StatusOr<double> FloatAttr(const proto::Instruction& instr,
                                 absl::string_view name) {
  absl::StatusOr<const AttrSpec*> spec = SpecFor(instr, name, AttrType::kFloat);
  if (!spec.ok()) return spec.status();
  return FloatValue(instr, **spec);
}

absl::StatusOr<absl::string_view> StrAttr(const proto::Instruction& instr,
                                          absl::string_view name) {
  absl::StatusOr<const AttrSpec*> spec =
      SpecFor(instr, name, AttrType::kString);
  if (!spec.ok()) return spec.status();
  return StringValue(instr, **spec);
}

bool ReadsOperand(const OpDef& def, const proto::Instruction& instr, int i) {
  const OperandRole* role = OperandRoleOf(def, i);
  if (role == nullptr) return false;
  if (role->access != Access::kWrite) return true;
  if (role->also_read_if.empty()) return false;
  for (const AttrSpec& spec : def.attrs) {
    if (spec.name == role->also_read_if && spec.type == AttrType::kInt) {
      return IntValue(instr, spec) != 0;
    }
  }
  return false;
}

OperandAccess OperandAccessOf(const OpDef& def,
                              const proto::Instruction& instr) {
  OperandAccess access;
  absl::string_view flag;  // the last flag looked up, and its value
  bool flag_set = false;
  const int n = std::min(instr.operands_size(), 64);
  for (int o = 0; o < n; ++o) {
    const OperandRole* role = OperandRoleOf(def, o);
    if (role == nullptr) break;  // past the roles: so are the rest
    const uint64_t bit = uint64_t{1} << o;
    if (role->access != Access::kRead) access.writes |= bit;
    bool reads = role->access != Access::kWrite;
    if (!reads && !role->also_read_if.empty()) {
      if (role->also_read_if != flag) {
        flag = role->also_read_if;
        flag_set = ReadsOperand(def, instr, o);
      }
      reads = flag_set;
    }
    if (reads) access.reads |= bit;
  }
  return access;
}

bool WritesOperand(const OpDef& def, int i) {
  const OperandRole* role = OperandRoleOf(def, i);
  return role != nullptr && role->access != Access::kRead;
}

bool ReadsOperand(const proto::Instruction& instr, int i) {
  const OpDef* def = FindOp(instr.opcode());
  return def != nullptr && ReadsOperand(*def, instr, i);
}

bool WritesOperand(const proto::Instruction& instr, int i) {
  const OpDef* def = FindOp(instr.opcode());
  return def != nullptr && WritesOperand(*def, i);
}

const OperandRole* RoleOf(const proto::Instruction& instr, int i) {
  const OpDef* def = FindOp(instr.opcode());
  return def != nullptr ? OperandRoleOf(*def, i) : nullptr;
}

absl::StatusOr<int> RoleSlot(proto::Opcode opcode, absl::string_view role) {
  const OpDef* def = FindOp(opcode);
  if (def == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown opcode ", static_cast<int>(opcode)));
  }
  for (size_t r = 0; r < def->roles.size(); ++r) {
    if (def->roles[r].name == role) return static_cast<int>(r);
  }
  return absl::InvalidArgumentError(
      absl::StrCat(def->name, " has no operand role '", role, "'"));
}

std::string OperandName(proto::Opcode opcode, int i) {
  const OpDef* def = FindOp(opcode);
  const OperandRole* role = def != nullptr ? OperandRoleOf(*def, i) : nullptr;
  if (role == nullptr) return absl::StrCat("operand ", i);
  if (!role->variadic) return std::string(role->name);
  const int first = static_cast<int>(def->roles.size()) - 1;
  return absl::StrCat(role->name, "[", i - first, "]");
}

std::string InstrDetail(const proto::Instruction& instr) {
  const OpDef* def = FindOp(instr.opcode());
  return def != nullptr && def->label != nullptr ? def->label(instr) : "";
}

std::string LinkLabel(const proto::Instruction& instr) {
  const OpDef* def = FindOp(instr.opcode());
  return def != nullptr && def->link_label != nullptr ? def->link_label(instr)
                                                      : "";
}

}  // namespace nkigraph::ops
