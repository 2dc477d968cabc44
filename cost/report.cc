#include "cost/report.h"

#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "ops/device_profile.h"
#include "ops/instr_facts.h"
#include "util/worker_pool.h"

namespace nkigraph::cost {
namespace {

void AddEngines(const Schedule& s, Report* r) {
  const graph::GraphIndex& index = *s.index;
  const int lanes = s.lanes_per_core;
  std::vector<EngineUse> per_lane(static_cast<size_t>(index.num_cores()) *
                                  lanes);
  for (int i = 0; i < index.size(); ++i) {
    const Slot& slot = s.slots[i];
    const size_t first = index.info(i).core * lanes + slot.lane;
    ++per_lane[first].instructions;
    // A DMA holds each of its engines for its whole duration.
    for (int l = 0; l < slot.lanes; ++l) {
      per_lane[first + l].busy_ns += slot.end_ns - slot.start_ns;
    }
  }
  for (int core = 0; core < index.num_cores(); ++core) {
    EngineUse dma{
        .core = core, .engine = "dma", .lanes = lanes - kFirstDmaLane};
    for (int lane = 0; lane < lanes; ++lane) {
      const EngineUse& use = per_lane[core * lanes + lane];
      if (lane >= kFirstDmaLane) {
        dma.instructions += use.instructions;
        dma.busy_ns += use.busy_ns;
        continue;
      }
      if (use.instructions == 0) continue;
      EngineUse out = use;
      out.core = core;
      out.engine = LaneName(lane);
      out.lanes = 1;
      r->engines.push_back(out);
    }
    if (dma.instructions > 0) r->engines.push_back(dma);
  }
  for (EngineUse& use : r->engines) {
    use.utilisation =
        r->latency_ns > 0 ? use.busy_ns / (use.lanes * r->latency_ns) : 0;
  }
}

void AddRoofline(const Schedule& s, Report* r) {
  const graph::GraphIndex& index = *s.index;
  r->bounds.resize(index.num_cores());
  for (int core = 0; core < index.num_cores(); ++core)
    r->bounds[core].core = core;
  for (int i = 0; i < index.size(); ++i) {
    const InstrCost& c = s.costs[i];
    CoreBound& b = r->bounds[index.info(i).core];
    b.flops += c.flops;
    b.compute_ns += c.peak_ns;
    b.dma_hbm_bytes += c.dma_hbm_bytes;
    r->traffic.Add(c.traffic);
    r->flops += c.flops;
  }
  for (CoreBound& b : r->bounds) {
    b.memory_ns = b.dma_hbm_bytes / s.table->roofline_bytes_per_ns();
    const double bound = std::max(b.compute_ns, b.memory_ns);
    if (bound > r->roofline_ns) {
      r->roofline_ns = bound;
      r->roofline_core = b.core;
      r->compute_bound = b.compute_ns >= b.memory_ns;
    }
  }
  r->roofline_ratio = r->roofline_ns > 0 ? r->latency_ns / r->roofline_ns : 0;
}

void AddCritical(const Schedule& s, int top, Report* r) {
  const graph::GraphIndex& index = *s.index;
  const proto::Graph& graph = index.graph();
  using Key = std::tuple<uint32_t, uint32_t, uint32_t>;  // scope, file, line
  struct Acc {
    Key key;
    int64_t instructions = 0;
    double ns = 0;
    // Mostly one opcode per line.
    absl::InlinedVector<std::pair<proto::Opcode, double>, 2> by_opcode;
  };
  std::vector<Acc> lines;
  // Per scope id, its lines' indexes into `lines`: scope ids are dense
  // and mostly met in order, where a hash of the key would jump around.
  std::vector<absl::InlinedVector<int, 2>> lines_of_scope(
      std::max(graph.scopes_size(), 1));
  const std::vector<int> path = CriticalPath(s);
  for (size_t k = 0; k < path.size(); ++k) {
    // The path hops between cores and engines, so its instructions'
    // messages are far apart: ask for one some steps ahead (its first
    // two cache lines, which hold the scalar fields read here).
    constexpr size_t kAhead = 32;
    if (k + kAhead < path.size()) {
      const char* ahead =
          reinterpret_cast<const char*>(&index.instr(path[k + kAhead]));
      __builtin_prefetch(ahead);
      __builtin_prefetch(ahead + 64);
    }
    const int i = path[k];
    const Slot& slot = s.slots[i];
    const double before =
        slot.critical >= 0 ? s.slots[slot.critical].end_ns : 0;
    const double ns = std::max(0.0, slot.end_ns - before);
    const proto::Instruction& instr = index.instr(i);
    const Key key{instr.scope(), instr.file(), instr.line()};
    absl::InlinedVector<int, 2>& of_scope = lines_of_scope[instr.scope()];
    auto known = std::find_if(of_scope.begin(), of_scope.end(),
                              [&](int l) { return lines[l].key == key; });
    if (known == of_scope.end()) {
      of_scope.push_back(static_cast<int>(lines.size()));
      known = of_scope.end() - 1;
      lines.push_back(Acc{.key = key, .by_opcode = {}});
    }
    Acc& acc = lines[*known];
    ++acc.instructions;
    acc.ns += ns;
    auto op = std::find_if(
        acc.by_opcode.begin(), acc.by_opcode.end(),
        [&](const auto& entry) { return entry.first == instr.opcode(); });
    if (op == acc.by_opcode.end()) {
      acc.by_opcode.push_back({instr.opcode(), ns});
    } else {
      op->second += ns;
    }
  }
  // The costliest lines first; among equals, by (scope, file, line).
  auto costlier = [](const Acc& a, const Acc& b) {
    return a.ns != b.ns ? a.ns > b.ns : a.key < b.key;
  };
  const size_t keep =
      top > 0 ? std::min(lines.size(), static_cast<size_t>(top)) : lines.size();
  std::partial_sort(lines.begin(), lines.begin() + keep, lines.end(), costlier);
  for (size_t k = 0; k < keep; ++k) {
    Acc& acc = lines[k];
    const auto& [scope, file, line] = acc.key;
    CriticalLine out;
    out.scope = index.scope_path(scope);
    out.file = file < static_cast<uint32_t>(graph.files_size())
                   ? graph.files(static_cast<int>(file))
                   : "";
    out.line = static_cast<int>(line);
    // The opcode costing the most on the line; among equals the lowest.
    std::sort(acc.by_opcode.begin(), acc.by_opcode.end());
    double best = -1;
    for (const auto& [op, ns] : acc.by_opcode) {
      if (ns > best) {
        best = ns;
        out.opcode = ops::OpcodeName(op);
      }
    }
    out.instructions = acc.instructions;
    out.ns = acc.ns;
    r->critical_ns += out.ns;
    r->critical.push_back(std::move(out));
  }
}

// Scope instances: a core's consecutive instructions under one scope path
// form one instance of it; an instance also ends where the scope frees
// what it allocated (GraphIndex::frees), so back-to-back instances of one
// path (ring steps, layers, blocks) stay apart.
void AddScopes(const Schedule& s, Report* r) {
  const graph::GraphIndex& index = *s.index;
  struct Open {
    int report = 0;         // index into r->scopes
    uint32_t position = 0;  // its first stream position
    int path = 0;           // its path id
  };
  // Per scope, the path ids of its first 1, 2, ... components, interned
  // (by text) when the scope is first met: the paths a scope opens are
  // numbered in the order they are first met, and a shallower one it
  // shares with an open instance is already known then.
  absl::flat_hash_map<std::string, int> by_text;
  std::vector<int> first_path(std::max(index.graph().scopes_size(), 1), -1);
  std::vector<int> paths;  // first_path[scope] + depth -> path id
  auto paths_of = [&](uint32_t scope) -> const int* {
    int& first = first_path[scope];
    if (first < 0) {
      first = static_cast<int>(paths.size());
      const std::vector<std::string>& parts = index.scope_components(scope);
      std::string text;
      for (size_t d = 0; d < parts.size(); ++d) {
        if (d > 0) text += '/';
        text += parts[d];
        const auto [known, fresh] =
            by_text.try_emplace(text, static_cast<int>(r->scope_paths.size()));
        if (fresh) r->scope_paths.push_back(text);
        paths.push_back(known->second);
      }
    }
    return paths.data() + first;
  };
  for (int core = 0; core < index.num_cores(); ++core) {
    std::vector<int> counts;  // instances so far, by path id
    std::vector<Open> open;   // one per depth
    uint32_t last_scope = UINT32_MAX;
    const std::vector<int>& stream = index.stream(core);
    const std::vector<uint32_t>& frees = index.frees(core);
    for (size_t p = 0; p < stream.size(); ++p) {
      const int i = stream[p];
      const uint32_t scope = index.info(i).scope;  // in range: validated
      const size_t depth = index.scope_components(scope).size();
      const int* path = paths_of(scope);
      // Keep the open instances whose path matches (all of them when the
      // scope is the last instruction's and nothing closed).
      size_t keep = 0;
      if (scope == last_scope && open.size() == depth) keep = open.size();
      while (keep < open.size() && keep < depth &&
             open[keep].path == path[keep]) {
        ++keep;
      }
      if (frees[p] != graph::GraphIndex::kNoFree && keep > 0) {
        // Some instance that began by frees[p] (it allocated then) has
        // ended. When one the path change closes anyway began by then,
        // that is the one. Otherwise the instruction re-enters a path it
        // continues (a ring step, a layer, a block after the last): the
        // latest-started instance that began by then ended, the deepest
        // of those that began at the same position (an inner loop's body
        // is re-entered more often than the loop around it).
        const uint32_t b = frees[p];
        bool explained = false;
        for (size_t d = keep; d < open.size(); ++d) {
          explained = explained || open[d].position <= b;
        }
        if (!explained) {
          int close = -1;
          for (int d = 0; d < static_cast<int>(keep); ++d) {
            if (open[d].position > b) break;
            if (close < 0 || open[d].position >= open[close].position) {
              close = d;
            }
          }
          if (close >= 0) keep = static_cast<size_t>(close);
        }
      }
      open.resize(keep);
      last_scope = scope;
      const Slot& slot = s.slots[i];
      for (size_t d = keep; d < depth; ++d) {
        ScopeInstance inst;
        inst.core = core;
        inst.path = path[d];
        if (static_cast<size_t>(inst.path) >= counts.size()) {
          counts.resize(inst.path + 1, 0);
        }
        inst.instance = counts[inst.path]++;
        inst.start_ns = slot.start_ns;
        inst.end_ns = slot.end_ns;
        open.push_back({static_cast<int>(r->scopes.size()),
                        static_cast<uint32_t>(p), inst.path});
        r->scopes.push_back(inst);
      }
      for (const Open& o : open) {
        ScopeInstance& inst = r->scopes[o.report];
        ++inst.instructions;
        inst.start_ns = std::min(inst.start_ns, slot.start_ns);
        inst.end_ns = std::max(inst.end_ns, slot.end_ns);
        inst.busy_ns += slot.end_ns - slot.start_ns;
      }
    }
  }
}

}  // namespace

std::vector<int> CriticalPath(const Schedule& s) {
  std::vector<int> path;
  int last = -1;
  for (int i = 0; i < static_cast<int>(s.slots.size()); ++i) {
    if (last < 0 || s.slots[i].end_ns > s.slots[last].end_ns) last = i;
  }
  for (int i = last; i >= 0; i = s.slots[i].critical) {
    path.push_back(i);
    if (path.size() > s.slots.size()) break;  // never: critical goes back
  }
  std::reverse(path.begin(), path.end());
  return path;
}

Report BuildReport(const Schedule& s, int top) {
  Report r;
  const graph::GraphIndex& index = *s.index;
  r.kernel = index.graph().kernel_name();
  r.target = std::string(s.table->name);
  r.instructions = index.size();
  r.num_cores = index.num_cores();
  r.num_ranks = index.num_ranks();
  r.latency_ns = s.makespan_ns;
  r.dynamic_operands = s.dynamic_operands;
  r.data_dependent_offsets = s.data_dependent_offsets;
  // The scope totals, the largest part, beside the rest: each part fills
  // its own fields of the report.
  auto part = [&](int p) {
    if (p == 0) {
      AddScopes(s, &r);
    } else {
      AddEngines(s, &r);
      AddRoofline(s, &r);
      AddCritical(s, top, &r);
    }
  };
  constexpr int kParallelInstructions = 1 << 14;
  if (index.size() >= kParallelInstructions) {
    WorkerPool pool(std::min(2, WorkerPool::MachineThreads()));
    pool.Run(2, part);
  } else {
    part(0);
    part(1);
  }
  return r;
}

}  // namespace nkigraph::cost
