#include "graph/graph_index.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "ops/access_pattern.h"

namespace nkigraph::viz {
namespace {

std::string Where(const proto::Instruction& instr) {
  return absl::StrCat("instruction ", instr.id(), " (", OpName(instr.opcode()),
                      ")");
}

absl::Status CheckTensorId(const proto::Graph& graph,
                           const proto::Instruction& instr, uint32_t id,
                           absl::string_view what) {
  if (id > static_cast<uint32_t>(graph.tensors_size())) {
    return absl::InvalidArgumentError(
        absl::StrCat(Where(instr), ": ", what, " names tensor ", id,
                     " but the graph has ", graph.tensors_size(), " tensors"));
  }
  return absl::OkStatus();
}

}  // namespace

ops::Engine EngineOf(const proto::Instruction& instr, const ops::OpDef& def) {
  for (const proto::Attr& attr : instr.attrs()) {
    if (attr.name() != "engine" || attr.value_case() != proto::Attr::kS) {
      continue;
    }
    for (ops::Engine engine : kAllEngines) {
      if (ops::EngineName(engine) == absl::string_view(attr.s())) {
        return engine;
      }
    }
  }
  return def.engine;
}

std::string OpName(proto::Opcode opcode) {
  if (const ops::OpDef* def = ops::FindOp(opcode)) {
    return std::string(def->name);
  }
  return absl::StrCat("opcode_", static_cast<int>(opcode));
}

absl::StatusOr<std::unique_ptr<GraphIndex>> GraphIndex::Build(
    const proto::Graph& graph) {
  std::unique_ptr<GraphIndex> index(new GraphIndex());
  index->graph_ = &graph;

  const proto::World& world = graph.world();
  int64_t cores = std::max<int64_t>(world.num_cores(), 1);
  for (const proto::Stream& stream : graph.streams()) {
    cores = std::max<int64_t>(cores, int64_t{stream.core()} + 1);
  }
  if (cores > kMaxCores) {
    return absl::InvalidArgumentError(absl::StrCat("the graph has ", cores,
                                                   " cores per rank; at most ",
                                                   kMaxCores, " can be drawn"));
  }
  index->num_cores_ = static_cast<int>(cores);
  index->num_ranks_ = std::max<int64_t>(world.num_ranks(), 1);
  if (index->num_ranks_ > kMaxRanks) {
    return absl::InvalidArgumentError(
        absl::StrCat("the graph has ", index->num_ranks_, " ranks; at most ",
                     kMaxRanks, " can be drawn"));
  }
  index->streams_.resize(index->num_cores_);

  // Tensors.
  index->row_elements_.reserve(graph.tensors_size());
  for (int t = 0; t < graph.tensors_size(); ++t) {
    const proto::Tensor& tensor = graph.tensors(t);
    if (tensor.id() != static_cast<uint32_t>(t) + 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor ", t, " has id ", tensor.id(),
                       "; tensor ids must be ", t + 1, " (1-based, in order)"));
    }
    absl::StatusOr<int64_t> elements = ops::ShapeElements(tensor.shape());
    if (!elements.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor ", tensor.id(), " '", tensor.name(),
                       "': ", elements.status().message()));
    }
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
  // Streams in core order (a graph lists them so; sort defensively).
  std::vector<const proto::Stream*> streams;
  for (const proto::Stream& stream : graph.streams())
    streams.push_back(&stream);
  std::stable_sort(streams.begin(), streams.end(),
                   [](const proto::Stream* a, const proto::Stream* b) {
                     return a->core() < b->core();
                   });
  for (const proto::Stream* stream : streams) {
    for (const proto::Instruction& instr : stream->instructions()) {
      const ops::OpDef* def = ops::FindOp(instr.opcode());
      if (def == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("instruction ", instr.id(), " has unknown opcode ",
                         static_cast<int>(instr.opcode())));
      }
      if (def->roles.empty() && instr.operands_size() > 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(Where(instr), " has operands but takes none"));
      }
      if (instr.operands_size() > static_cast<int>(def->roles.size()) &&
          !def->roles.back().variadic) {
        return absl::InvalidArgumentError(absl::StrCat(
            Where(instr), " has ", instr.operands_size(), " operands; ",
            def->name, " takes ", def->roles.size()));
      }
      for (const proto::AccessPattern& ap : instr.operands()) {
        if (absl::Status s =
                CheckTensorId(graph, instr, ap.tensor_id(), "an operand");
            !s.ok()) {
          return s;
        }
        if (ap.tensor_id() == 0) continue;
        if (absl::StatusOr<ops::FlatExtent> extent = ops::StaticExtent(ap);
            !extent.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat(Where(instr), ": ", extent.status().message()));
        }
        if (ap.dynamic().kind() != proto::DynamicOffset::KIND_UNSPECIFIED) {
          if (absl::Status s = CheckTensorId(
                  graph, instr, ap.dynamic().tensor_id(), "a dynamic offset");
              !s.ok()) {
            return s;
          }
        }
      }
      if (instr.scope() >= index->scope_components_.size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            Where(instr), " has scope ", instr.scope(), " but the graph has ",
            graph.scopes_size(), " scopes"));
      }
      const int i = static_cast<int>(index->instrs_.size());
      if (!index->by_id_.try_emplace(instr.id(), i).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("instruction id ", instr.id(),
                         " appears twice; ids must be unique"));
      }
      InstrInfo info;
      info.instr = &instr;
      info.def = def;
      info.engine = EngineOf(instr, *def);
      info.core = stream->core();
      info.position = static_cast<uint32_t>(index->streams_[info.core].size());
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

}  // namespace nkigraph::viz
