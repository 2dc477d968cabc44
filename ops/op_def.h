#ifndef NKIGRAPH_OPS_OP_DEF_H_
#define NKIGRAPH_OPS_OP_DEF_H_

// Everything nkigraph knows about one opcode, defined once in the op's own
// file, ops/defs/<opcode>.cc, where <opcode> is the proto::Opcode value's
// name in lower case ("nc_matmul" for NC_MATMUL). That file specialises
// DefineOp for its opcode; the build generates the list of definitions from
// the file names (ops/CMakeLists.txt), so adding an op adds no line to any
// list. The op's name is the lower-cased enum name, set by the registry.

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ops/attr_spec.h"
#include "ops/sync_rule.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::ops {

class ExecContext;
class InstrView;

enum class Engine {
  kTensor,
  kVector,
  kScalar,
  kGpSimd,
  kDma,
  kSync,
  kCollective
};
constexpr absl::string_view EngineName(Engine engine) {
  switch (engine) {
    case Engine::kTensor:
      return "tensor";
    case Engine::kVector:
      return "vector";
    case Engine::kScalar:
      return "scalar";
    case Engine::kGpSimd:
      return "gpsimd";
    case Engine::kDma:
      return "dma";
    case Engine::kSync:
      return "sync";
    case Engine::kCollective:
      return "collective";
  }
  return "unknown";
}
std::optional<Engine> ParseEngine(absl::string_view name);

enum class Access { kRead, kWrite, kReadWrite };

// Bit set of memory spaces an operand may live in.
using SpaceSet = uint32_t;
constexpr SpaceSet Space(proto::MemorySpace space) { return 1u << space; }
inline constexpr SpaceSet kHbmSpaces =
    Space(proto::HBM) | Space(proto::SHARED_HBM);
inline constexpr SpaceSet kSbuf = Space(proto::SBUF);
inline constexpr SpaceSet kPsum = Space(proto::PSUM);
inline constexpr SpaceSet kOnChip = kSbuf | kPsum;
inline constexpr SpaceSet kSbufOrHbm = kSbuf | kHbmSpaces;
inline constexpr SpaceSet kAnySpace = kOnChip | kHbmSpaces;

// One operand slot. Instructions list operands in the op's role order.
struct OperandRole {
  absl::string_view name;
  Access access;
  SpaceSet spaces;
  bool optional = false;
  // The last role only: it may repeat (dma_compute's sources).
  bool variadic = false;
  // A flag attribute that, when set, makes this written operand read as
  // well: the instruction accumulates into it (nc_matmul's accumulate).
  absl::string_view also_read_if = {};
};

// The slot of the role named `name` in an op's role table, found at compile
// time: naming a role the table lacks does not compile.
template <size_t N>
consteval int RoleOf(const OperandRole (&roles)[N], std::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (std::string_view(roles[i].name.data(), roles[i].name.size()) == name) {
      return static_cast<int>(i);
    }
  }
  throw std::logic_error("the op declares no operand role of that name");
}

// The spec of an "engine" attribute whose default is the op's own engine
// and which may name the engines in `allowed`.
constexpr AttrSpec EngineSpec(Engine default_engine,
                              absl::Span<const absl::string_view> allowed) {
  return StringSpec("engine", EngineName(default_engine),
                    "the engine that runs it")
      .OneOf(allowed);
}

struct OpDef {
  // Set by the registry from the file the definition lives in.
  proto::Opcode opcode = proto::OPCODE_UNSPECIFIED;
  absl::string_view name = {};

  // The op's engine; an "engine" attribute, if the op declares one (with
  // this engine as its default), overrides it per instruction.
  Engine engine = Engine::kVector;
  absl::Span<const OperandRole> roles = {};
  absl::Span<const AttrSpec> attrs = {};
  // How the instruction waits for other programs (kNone: it runs alone),
  // and whom it meets.
  SyncKind sync = SyncKind::kNone;
  SyncRule sync_rule = {};
  // Op-specific checks (shapes, dtypes, limits) on an instruction whose
  // operands and attributes already passed the generic checks. Run at trace
  // time by the builder and again when a graph is loaded.
  absl::Status (*check)(const InstrView& view) = nullptr;
  // Semantics of an instruction that runs alone.
  absl::Status (*execute)(ExecContext& ctx) = nullptr;
  // Semantics of a sync instruction, given its matched participants in
  // group order (SyncGroup::members).
  absl::Status (*execute_group)(absl::Span<ExecContext* const> group) = nullptr;

  // For pictures: a shorter name (empty: the name); what distinguishes an
  // instruction from others of its opcode ("+=", its ALU op, its peer);
  // what the line joining a sync group says (a pipe, a channel). The hooks
  // see an instruction that passed the checks; nullptr: nothing to say.
  absl::string_view short_name = {};
  std::string (*label)(const proto::Instruction& instr) = nullptr;
  std::string (*link_label)(const proto::Instruction& instr) = nullptr;
};

// The role of operand `i` of an instruction of `def`: a variadic last role
// covers every operand from its slot on; nullptr past the roles.
inline const OperandRole* OperandRoleOf(const OpDef& def, int i) {
  const int n = static_cast<int>(def.roles.size());
  if (i < 0 || n == 0) return nullptr;
  if (i < n) return &def.roles[i];
  return def.roles[n - 1].variadic ? &def.roles[n - 1] : nullptr;
}

// Specialised once per opcode, in ops/defs/<opcode>.cc; returns the op's
// definition (opcode and name are filled in by the registry).
template <proto::Opcode kOpcode>
OpDef DefineOp();

// nullptr for OPCODE_UNSPECIFIED or a value this build does not define.
const OpDef* FindOp(proto::Opcode opcode);

// What the registry found wrong when it built the table (an opcode
// defined twice, a definition out of the proto's range, a role or
// attribute table that contradicts itself); OK in a correct build.
absl::Status OpTableStatus();

// The registry's own checks, for tests: builds a table from `definers`
// and returns what it finds wrong.
struct OpDefiner {
  proto::Opcode opcode;
  OpDef (*define)();
};
absl::Status CheckOpDefiners(absl::Span<const OpDefiner> definers);

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_OP_DEF_H_
