#ifndef NKIGRAPH_GRAPH_GRAPH_INDEX_H_
#define NKIGRAPH_GRAPH_GRAPH_INDEX_H_

// A validated, flattened view of a graph: every instruction gets a dense
// index (streams in core order, each in program order), its op definition
// and effective engine. The graph is validated (graph/validate.h) before it
// is indexed, so readers of the index (the dependency analysis, viz/) can
// index tensors, scopes and streams without guards.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "ops/instr_facts.h"
#include "ops/op_def.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::graph {

inline constexpr int kNumEngines = 7;  // ops::Engine values
// Every engine, in ops::Engine order (legends and counts list them so).
inline constexpr ops::Engine kAllEngines[kNumEngines] = {
    ops::Engine::kTensor,    ops::Engine::kVector, ops::Engine::kScalar,
    ops::Engine::kGpSimd,    ops::Engine::kDma,    ops::Engine::kSync,
    ops::Engine::kCollective};

// A pass over instructions in order reads messages scattered over the
// graph's arena, one dependent load after another. Calling this for each
// instruction of the pass, with the one kPrefetchInstructionsAhead steps on
// as `far` and the one half as far as `near`, asks for the far one's
// message and for the near one's operands (its message has arrived by
// then), so their misses overlap. nullptr: none.
inline constexpr int kPrefetchInstructionsAhead = 16;
inline void PrefetchInstructions(const proto::Instruction* far,
                                 const proto::Instruction* near) {
  if (far != nullptr) {
    const char* message = reinterpret_cast<const char*>(far);
    __builtin_prefetch(message);
    __builtin_prefetch(message + 64);
  }
  if (near != nullptr) {
    for (const proto::AccessPattern& ap : near->operands()) {
      __builtin_prefetch(&ap);
    }
  }
}

struct InstrInfo {
  const proto::Instruction* instr = nullptr;
  const ops::OpDef* def = nullptr;
  ops::Engine engine = ops::Engine::kVector;  // after the "engine" attr
  uint32_t core = 0;
  uint32_t position = 0;  // in the core's stream
  // instr->scope(), kept here: passes over every instruction in order
  // (scope totals) then read the index, not each message.
  uint32_t scope = 0;
  // Which of the first 64 operands the instruction reads and writes
  // (ops::ReadsOperand / WritesOperand, asked once at indexing; the
  // dependency analysis and the cost model ask for every operand).
  uint64_t read_mask = 0;
  uint64_t write_mask = 0;

  bool Reads(int o) const {
    return o < 64 ? (read_mask >> o) & 1 : ops::ReadsOperand(*def, *instr, o);
  }
  bool Writes(int o) const {
    return o < 64 ? (write_mask >> o) & 1 : ops::WritesOperand(*def, o);
  }
};

class GraphIndex {
 public:
  // See PrefetchInstructions: `far` and `near` are indexes, -1 for none.
  static constexpr int kPrefetchAhead = kPrefetchInstructionsAhead;
  void Prefetch(int far, int near) const {
    PrefetchInstructions(far >= 0 ? instrs_[far].instr : nullptr,
                         near >= 0 ? instrs_[near].instr : nullptr);
  }

  // Validates (CheckGraph) and indexes `graph`, which must outlive the
  // index.
  static absl::StatusOr<std::unique_ptr<GraphIndex>> Build(
      const proto::Graph& graph);

  const proto::Graph& graph() const { return *graph_; }
  int size() const { return static_cast<int>(instrs_.size()); }
  const InstrInfo& info(int i) const { return instrs_[i]; }
  const proto::Instruction& instr(int i) const { return *instrs_[i].instr; }
  int num_cores() const { return num_cores_; }
  int64_t num_ranks() const { return num_ranks_; }
  // Instruction indexes of one core's stream, in program order.
  const std::vector<int>& stream(int core) const { return streams_[core]; }
  // Scope ends seen through on-chip lifetimes: for each position p of a
  // core's stream (0 to its length), the smallest live_begin of the
  // core's on-chip tensors freed just before p (live_end == p), or
  // kNoFree. A scope frees what it allocated when it ends, so this marks
  // where one instance of a scope ends even when the next instance has
  // the same path.
  static constexpr uint32_t kNoFree = UINT32_MAX;
  const std::vector<uint32_t>& frees(int core) const { return frees_[core]; }
  // Index of the instruction with this id, or -1.
  int Find(uint32_t id) const;

  // `id` must be a tensor id some operand uses (valid by validation).
  const proto::Tensor& tensor(uint32_t id) const {
    return graph_->tensors(static_cast<int>(id) - 1);
  }
  // Elements per dim-0 row of a tensor (product of shape[1:]).
  int64_t row_elements(uint32_t id) const { return row_elements_[id - 1]; }

  const std::string& scope_path(uint32_t scope) const;
  // The scope path split at '/'; empty for the root scope.
  const std::vector<std::string>& scope_components(uint32_t scope) const {
    return scope_components_[scope];
  }

 private:
  GraphIndex() = default;

  const proto::Graph* graph_ = nullptr;
  int num_cores_ = 1;
  int64_t num_ranks_ = 1;
  std::vector<InstrInfo> instrs_;
  std::vector<std::vector<int>> streams_;
  std::vector<std::vector<uint32_t>> frees_;
  // Index by instruction id: a table when ids are dense (the builders'),
  // else the map.
  std::vector<int> by_dense_id_;
  absl::flat_hash_map<uint32_t, int> by_id_;
  std::vector<int64_t> row_elements_;
  std::vector<std::vector<std::string>> scope_components_;
};

}  // namespace nkigraph::graph

#endif  // NKIGRAPH_GRAPH_GRAPH_INDEX_H_
