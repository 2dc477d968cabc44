#include "cost/report.h"

#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "ops/device_profile.h"
#include "ops/instr_facts.h"

namespace nkigraph::cost {
namespace {

void AddEngines(const Schedule& s, Report* r) {
  const graph::GraphIndex& index = *s.index;
  const int lanes = s.lanes_per_core;
  std::vector<EngineUse> per_lane(static_cast<size_t>(index.num_cores()) *
                                  lanes);
  for (int i = 0; i < index.size(); ++i) {
    const Slot& slot = s.slots[i];
    EngineUse& use = per_lane[index.info(i).core * lanes + slot.lane];
    ++use.instructions;
    use.busy_ns += slot.end_ns - slot.start_ns;
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
    std::vector<std::pair<proto::Opcode, double>> by_opcode;
  };
  std::vector<Acc> lines;
  absl::flat_hash_map<Key, int> line_of;
  for (int i : CriticalPath(s)) {
    const Slot& slot = s.slots[i];
    const double before =
        slot.critical >= 0 ? s.slots[slot.critical].end_ns : 0;
    const double ns = std::max(0.0, slot.end_ns - before);
    const proto::Instruction& instr = index.instr(i);
    const Key key{instr.scope(), instr.file(), instr.line()};
    const auto [it, fresh] =
        line_of.try_emplace(key, static_cast<int>(lines.size()));
    if (fresh) lines.push_back(Acc{.key = key, .by_opcode = {}});
    Acc& acc = lines[it->second];
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
    int report = 0;                          // index into r->scopes
    uint32_t position = 0;                   // its first stream position
    const std::string* component = nullptr;  // its last path component
  };
  // Path ids by (scope, depth): the path of a scope's first depth + 1
  // components, interned once.
  absl::flat_hash_map<std::pair<uint32_t, int>, int> path_ids;
  absl::flat_hash_map<std::string, int> by_text;
  auto path_id = [&](uint32_t scope, int depth) {
    const auto [it, inserted] = path_ids.try_emplace({scope, depth}, 0);
    if (!inserted) return it->second;
    const std::vector<std::string>& parts = index.scope_components(scope);
    std::string text = parts[0];
    for (int d = 1; d <= depth; ++d) absl::StrAppend(&text, "/", parts[d]);
    const auto [known, fresh] =
        by_text.try_emplace(text, static_cast<int>(r->scope_paths.size()));
    if (fresh) r->scope_paths.push_back(std::move(text));
    it->second = known->second;
    return it->second;
  };
  for (int core = 0; core < index.num_cores(); ++core) {
    std::vector<int> counts;  // instances so far, by path id
    std::vector<Open> open;   // one per depth
    uint32_t last_scope = UINT32_MAX;
    const std::vector<int>& stream = index.stream(core);
    const std::vector<uint32_t>& frees = index.frees(core);
    for (size_t p = 0; p < stream.size(); ++p) {
      const int i = stream[p];
      if (frees[p] != graph::GraphIndex::kNoFree && !open.empty()) {
        // The instance that allocated at frees[p] ended: the latest-
        // started open instance that began by then, the shallowest of
        // those that began at the same position.
        const uint32_t b = frees[p];
        int close = -1;
        for (int d = 0; d < static_cast<int>(open.size()); ++d) {
          if (open[d].position > b) break;
          if (close < 0 || open[d].position > open[close].position) close = d;
        }
        if (close >= 0) open.resize(close);
      }
      const uint32_t scope = index.instr(i).scope();
      const std::vector<std::string>& parts = index.scope_components(scope);
      // Keep the open instances whose component matches (all of them when
      // the scope is the last instruction's and nothing closed).
      size_t keep = 0;
      if (scope == last_scope && open.size() == parts.size()) {
        keep = open.size();
      }
      while (keep < open.size() && keep < parts.size() &&
             (open[keep].component == &parts[keep] ||
              *open[keep].component == parts[keep])) {
        ++keep;
      }
      open.resize(keep);
      last_scope = scope;
      const Slot& slot = s.slots[i];
      for (size_t d = keep; d < parts.size(); ++d) {
        ScopeInstance inst;
        inst.core = core;
        inst.path = path_id(scope, static_cast<int>(d));
        if (static_cast<size_t>(inst.path) >= counts.size()) {
          counts.resize(inst.path + 1, 0);
        }
        inst.instance = counts[inst.path]++;
        inst.start_ns = slot.start_ns;
        inst.end_ns = slot.end_ns;
        open.push_back({static_cast<int>(r->scopes.size()),
                        static_cast<uint32_t>(p), &parts[d]});
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
  AddEngines(s, &r);
  AddRoofline(s, &r);
  AddCritical(s, top, &r);
  AddScopes(s, &r);
  return r;
}

}  // namespace nkigraph::cost
