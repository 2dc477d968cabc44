#include "graph/graph_index.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "graph/validate.h"
#include "ops/access_pattern.h"
#include "ops/instr_facts.h"
#include "util/status_macros.h"

namespace nkigraph::graph {

absl::StatusOr<std::unique_ptr<GraphIndex>> GraphIndex::Build(
    const proto::Graph& graph) {
  NKI_RETURN_IF_ERROR(CheckGraph(graph));
  std::unique_ptr<GraphIndex> index(new GraphIndex());
  index->graph_ = &graph;
  // Validation makes stream c the one of core c, and every tensor id,
  // shape, opcode, operand and scope index sound.
  index->num_cores_ = static_cast<int>(graph.world().num_cores());
  index->num_ranks_ = graph.world().num_ranks();
  index->streams_.resize(index->num_cores_);

  index->row_elements_.reserve(graph.tensors_size());
  for (const proto::Tensor& tensor : graph.tensors()) {
    index->row_elements_.push_back(ops::RowElements(tensor));
  }

  // Scopes.
  index->scope_components_.reserve(std::max(graph.scopes_size(), 1));
  for (const std::string& scope : graph.scopes()) {
    std::vector<std::string> parts;
    if (!scope.empty()) parts = absl::StrSplit(scope, '/');
    index->scope_components_.push_back(std::move(parts));
  }
  if (index->scope_components_.empty()) index->scope_components_.emplace_back();

  // Instructions.
  size_t total = 0;
  for (const proto::Stream& stream : graph.streams()) {
    total += stream.instructions_size();
  }
  index->instrs_.reserve(total);
  index->by_id_.reserve(total);
  for (const proto::Stream& stream : graph.streams()) {
    for (const proto::Instruction& instr : stream.instructions()) {
      const ops::OpDef* def = ops::FindOp(instr.opcode());
      const int i = static_cast<int>(index->instrs_.size());
      index->by_id_.emplace(instr.id(), i);
      InstrInfo info;
      info.instr = &instr;
      info.def = def;
      info.engine = *ops::EngineOf(instr);  // the opcode is known
      info.core = stream.core();
      info.position = static_cast<uint32_t>(index->streams_[info.core].size());
      const ops::OperandAccess access = ops::OperandAccessOf(*def, instr);
      info.read_mask = access.reads;
      info.write_mask = access.writes;
      index->instrs_.push_back(info);
      index->streams_[info.core].push_back(i);
    }
  }

  // Lifetimes of on-chip tensors: where scopes end.
  index->frees_.resize(index->num_cores_);
  for (int c = 0; c < index->num_cores_; ++c) {
    index->frees_[c].assign(index->streams_[c].size() + 1, kNoFree);
  }
  for (const proto::Tensor& tensor : graph.tensors()) {
    if (!ops::IsOnChip(tensor.space()) ||
        tensor.core() >= static_cast<uint32_t>(index->num_cores_) ||
        tensor.live_begin() >= tensor.live_end()) {
      continue;
    }
    std::vector<uint32_t>& frees = index->frees_[tensor.core()];
    if (tensor.live_end() >= frees.size()) continue;
    uint32_t& slot = frees[tensor.live_end()];
    slot = std::min(slot, tensor.live_begin());
  }
  return index;
}

int GraphIndex::Find(uint32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? -1 : it->second;
}

const std::string& GraphIndex::scope_path(uint32_t scope) const {
  static const std::string* const kRoot = new std::string();
  if (scope >= static_cast<uint32_t>(graph_->scopes_size())) return *kRoot;
  return graph_->scopes(static_cast<int>(scope));
}

}  // namespace nkigraph::graph
