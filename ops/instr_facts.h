#ifndef NKIGRAPH_OPS_INSTR_FACTS_H_
#define NKIGRAPH_OPS_INSTR_FACTS_H_

// Facts about one instruction for code outside ops/ (the interpreter, viz,
// diff, the CLI, tests, a cost model): its op's name, the engine it runs
// on, its attributes with the schema's defaults, and the role of each
// operand, all as the op's definition gives them. Attributes and roles are
// looked up by name through the definition and checked: naming one the op
// does not declare is an error, not a silent default.

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ops/op_def.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::ops {

// "nc_matmul"; "opcode_N" for a value this build does not define.
std::string OpcodeName(proto::Opcode opcode);
// The op's short name for pictures ("coll_permute"), else OpcodeName.
std::string ShortOpcodeName(proto::Opcode opcode);

// The engine the instruction runs on: the value of its "engine" attribute
// (or that attribute's default) if the op declares one, else the op's
// engine. nullopt for an unknown opcode.
std::optional<Engine> EngineOf(const proto::Instruction& instr);

// Attribute `name` of `instr`: its value, or the schema's default. An
// error for an unknown opcode, an attribute the op does not declare or
// declares with another type, a value of another type on the instruction,
// and an absent required attribute.
absl::StatusOr<int64_t> IntAttr(const proto::Instruction& instr,
                                absl::string_view name);
absl::StatusOr<double> FloatAttr(const proto::Instruction& instr,
                                 absl::string_view name);
absl::StatusOr<absl::string_view> StrAttr(const proto::Instruction& instr,
                                          absl::string_view name);

// The role of operand `i` of `instr` (a variadic last role covers every
// operand from its slot on); nullptr for an unknown opcode or past the
// roles.
const OperandRole* RoleOf(const proto::Instruction& instr, int i);
// Whether the instruction reads / writes operand `i`: its role's access,
// and a written operand is read too when its role's also_read_if flag is
// set (an accumulation). False past the roles or for an unknown opcode.
bool ReadsOperand(const proto::Instruction& instr, int i);
bool WritesOperand(const proto::Instruction& instr, int i);
// The same for a caller that holds the instruction's definition (the
// dependency analysis and the cost model ask for every operand of every
// instruction).
bool ReadsOperand(const OpDef& def, const proto::Instruction& instr, int i);
bool WritesOperand(const OpDef& def, int i);
// Both, for the first 64 operands at once, as bit masks (bit o: operand
// o): each flag attribute is looked up once.
struct OperandAccess {
  uint64_t reads = 0;
  uint64_t writes = 0;
};
OperandAccess OperandAccessOf(const OpDef& def,
                              const proto::Instruction& instr);
// The operand slot of the role named `role`; an error for an unknown
// opcode or a role the op does not have.
absl::StatusOr<int> RoleSlot(proto::Opcode opcode, absl::string_view role);
// Operand `i` by role: "dst", "src[1]" (the second operand of a variadic
// role), or "operand 7" past the roles or for an unknown opcode.
std::string OperandName(proto::Opcode opcode, int i);

// What pictures write for the instruction (OpDef::label, link_label);
// empty when the op says nothing or the opcode is unknown.
std::string InstrDetail(const proto::Instruction& instr);
std::string LinkLabel(const proto::Instruction& instr);

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_INSTR_FACTS_H_
