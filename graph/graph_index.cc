#include "graph/graph_index.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "graph/validate.h"
#include "ops/access_pattern.h"
#include "ops/instr_facts.h"
#include "util/status_macros.h"
#include "util/worker_pool.h"

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

  // Instructions: numbered streams in core order, so each stream is a run
  // of indexes; their facts are asked of the op definitions in tasks over
  // the machine's threads for a big graph (each fills its own slots).
  size_t total = 0;
  for (const proto::Stream& stream : graph.streams()) {
    total += stream.instructions_size();
  }
  index->instrs_.resize(total);
  struct Task {
    int core, begin, end;  // positions in the core's stream
    int first;             // the index of position `begin`
    uint32_t max_id;
  };
  constexpr int kPerTask = 1 << 14;
  std::vector<Task> tasks;
  int first = 0;
  for (int c = 0; c < index->num_cores_; ++c) {
    const int n = graph.streams(c).instructions_size();
    std::vector<int>& stream = index->streams_[c];
    stream.resize(n);
    for (int pos = 0; pos < n; ++pos) stream[pos] = first + pos;
    for (int begin = 0; begin < n; begin += kPerTask) {
      tasks.push_back(
          {c, begin, std::min(n, begin + kPerTask), first + begin, 0});
    }
    first += n;
  }
  auto fill = [&](int t) {
    Task& task = tasks[t];
    const proto::Stream& stream = graph.streams(task.core);
    constexpr int kFar = kPrefetchInstructionsAhead;
    for (int pos = task.begin; pos < task.end; ++pos) {
      // (Only the messages: the index reads no operand.)
      if (pos + kFar < task.end) {
        PrefetchInstructions(&stream.instructions(pos + kFar), nullptr);
      }
      const proto::Instruction& instr = stream.instructions(pos);
      const ops::OpDef* def = ops::FindOp(instr.opcode());
      InstrInfo& info = index->instrs_[task.first + (pos - task.begin)];
      info.instr = &instr;
      info.def = def;
      info.engine = *ops::EngineOf(instr);  // the opcode is known
      info.core = static_cast<uint32_t>(task.core);
      info.position = static_cast<uint32_t>(pos);
      info.scope = instr.scope();
      const ops::OperandAccess access = ops::OperandAccessOf(*def, instr);
      info.read_mask = access.reads;
      info.write_mask = access.writes;
      task.max_id = std::max(task.max_id, instr.id());
    }
  };
  if (total >= 2 * kPerTask) {
    WorkerPool pool(WorkerPool::MachineThreads());
    pool.Run(static_cast<int>(tasks.size()), fill);
  } else {
    for (int t = 0; t < static_cast<int>(tasks.size()); ++t) fill(t);
  }
  // Ids, unique by validation: builders number them densely from 1, so
  // mostly a table indexed by id; a hash map for sparse ones.
  uint32_t max_id = 0;
  for (const Task& task : tasks) max_id = std::max(max_id, task.max_id);
  if (max_id <= 4 * total + 64) {
    index->by_dense_id_.assign(size_t{max_id} + 1, -1);
    for (size_t i = 0; i < total; ++i) {
      index->by_dense_id_[index->instrs_[i].instr->id()] = static_cast<int>(i);
    }
  } else {
    index->by_id_.reserve(total);
    for (size_t i = 0; i < total; ++i) {
      index->by_id_.emplace(index->instrs_[i].instr->id(), static_cast<int>(i));
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
  if (!by_dense_id_.empty()) {
    return id < by_dense_id_.size() ? by_dense_id_[id] : -1;
  }
  auto it = by_id_.find(id);
  return it == by_id_.end() ? -1 : it->second;
}

const std::string& GraphIndex::scope_path(uint32_t scope) const {
  static const std::string* const kRoot = new std::string();
  if (scope >= static_cast<uint32_t>(graph_->scopes_size())) return *kRoot;
  return graph_->scopes(static_cast<int>(scope));
}

}  // namespace nkigraph::graph
