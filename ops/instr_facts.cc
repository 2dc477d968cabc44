#include "ops/instr_facts.h"

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
  const AttrSpec* spec = EngineAttrOf(instr.opcode());
  // Without the attribute set, its default, which the registry made the
  // op's engine.
  if (spec == nullptr || instr.attrs_size() == 0) return def->engine;
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

bool ReadsOperand(const proto::Instruction& instr, int i) {
  const OperandRole* role = RoleOf(instr, i);
  if (role == nullptr) return false;
  if (role->access != Access::kWrite) return true;
  if (role->also_read_if.empty()) return false;
  return IntAttr(instr, role->also_read_if).value_or(0) != 0;
}

bool WritesOperand(const proto::Instruction& instr, int i) {
  const OperandRole* role = RoleOf(instr, i);
  return role != nullptr && role->access != Access::kRead;
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
