#ifndef NKIGRAPH_OPS_OP_DEF_H_
#define NKIGRAPH_OPS_OP_DEF_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ops/device_profile.h"
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
absl::string_view EngineName(Engine engine);

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

struct OperandRole {
  absl::string_view name;
  Access access;
  SpaceSet spaces;
  bool optional = false;
  // The last role only: it may repeat (dma_compute's sources).
  bool variadic = false;
};

// How an instruction waits on other programs. Sync instructions are
// matched by the interpreter's scheduler; their data movement is the op's
// execute_group.
enum class SyncKind {
  kNone,
  kCoreBarrier,  // all cores of a rank
  kSendRecv,     // two cores of a rank, paired by pipe_id
  kCollective,   // the same core of every rank of a replica group
};

// Everything nkigraph knows about one opcode, in one place.
struct OpDef {
  proto::Opcode opcode;
  absl::string_view name;
  Engine engine;
  std::vector<OperandRole> roles;
  SyncKind sync = SyncKind::kNone;
  // Op-specific checks (shapes, dtypes, limits) on an instruction whose
  // operands already passed the generic checks. Run at trace time by the
  // builder and again when a graph is loaded.
  absl::Status (*check)(const InstrView& view) = nullptr;
  // Semantics of a kNone instruction.
  absl::Status (*execute)(ExecContext& ctx) = nullptr;
  // Semantics of a sync instruction, given its matched participants in
  // group order (sendrecv: the two cores; collectives: ranks in
  // replica-group order).
  absl::Status (*execute_group)(absl::Span<ExecContext* const> group) = nullptr;
};

// nullptr for OPCODE_UNSPECIFIED or a value this build does not know.
const OpDef* FindOp(proto::Opcode opcode);
const OpDef* FindOpByName(absl::string_view name);
// Every op, in opcode order.
absl::Span<const OpDef* const> AllOps();

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_OP_DEF_H_
