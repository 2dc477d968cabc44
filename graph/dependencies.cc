#include "graph/dependencies.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "graph/regions.h"
#include "util/worker_pool.h"

namespace nkigraph::graph {

absl::string_view DepKindName(DepKind kind) {
  switch (kind) {
    case DepKind::kRaw:
      return "raw";
    case DepKind::kWar:
      return "war";
    case DepKind::kWaw:
      return "waw";
  }
  return "raw";
}

namespace {

// Drops the ordering-only edges (write after read / write) another path
// already implies (u -> w when u -> ... -> v -> w), so the picture shows
// each ordering once. `deps` is sorted by
// (to, from) and only goes forward in a core's program order; the search
// for a path is bounded (an edge whose redundancy it cannot prove within
// the bound stays). `deps` are one core's, whose instructions are the
// indexes [base, base + count).
std::vector<Dependency> DropImplied(int base, int count,
                                    std::vector<Dependency> deps) {
  constexpr int kMaxVisits = 256;
  // Both indexed by instruction index - base.
  std::vector<std::vector<int>> succ(count);
  std::vector<int> seen(count, -1);  // stamp of the last search
  std::vector<int> queue;
  std::vector<Dependency> kept;
  kept.reserve(deps.size());
  int stamp = 0;
  size_t start = 0;
  while (start < deps.size()) {
    const int to = deps[start].to;
    size_t stop = start;
    while (stop < deps.size() && deps[stop].to == to) ++stop;
    // Data edges (read after write) always stay: they are the dataflow
    // the picture is for, even when an ordering path already exists.
    // Then the others, nearest first: the nearest cannot be implied by a
    // farther one.
    std::vector<Dependency> preds(deps.begin() + start, deps.begin() + stop);
    std::sort(preds.begin(), preds.end(),
              [](const Dependency& a, const Dependency& b) {
                const bool a_raw = a.kind == DepKind::kRaw;
                const bool b_raw = b.kind == DepKind::kRaw;
                if (a_raw != b_raw) return a_raw;
                return a.from > b.from;
              });
    std::vector<int> kept_from;
    int latest_kept = -1;
    for (const Dependency& dep : preds) {
      bool implied = false;
      if (dep.kind != DepKind::kRaw && !kept_from.empty()) {
        // Does dep.from reach a kept predecessor (all are later)?
        const int limit = latest_kept;
        ++stamp;
        queue.assign(1, dep.from);
        seen[dep.from - base] = stamp;
        int visits = 0;
        for (size_t q = 0; q < queue.size() && !implied; ++q) {
          for (int next : succ[queue[q] - base]) {
            if (next > limit || seen[next - base] == stamp) continue;
            if (std::find(kept_from.begin(), kept_from.end(), next) !=
                kept_from.end()) {
              implied = true;
              break;
            }
            seen[next - base] = stamp;
            queue.push_back(next);
            if (++visits > kMaxVisits) break;
          }
          if (visits > kMaxVisits) break;
        }
      }
      if (implied) continue;
      kept_from.push_back(dep.from);
      latest_kept = std::max(latest_kept, dep.from);
      kept.push_back(dep);
    }
    for (int from : kept_from) succ[from - base].push_back(to);
    start = stop;
  }
  std::sort(kept.begin(), kept.end(),
            [](const Dependency& a, const Dependency& b) {
              return a.to != b.to ? a.to < b.to : a.from < b.from;
            });
  return kept;
}

// One core's stream: its edges sorted by (to, from). Every address space
// a touch names is one program's (graph/regions.cc's space keys carry the
// core), so a core's edges depend on its own stream alone.
std::vector<Dependency> CoreDependencies(const GraphIndex& index, int core,
                                         const DependencyOptions& options) {
  std::vector<Dependency> deps;
  RegionTracker tracker;
  std::vector<Touch> touches;
  std::vector<RegionTracker::Hit> hits;
  std::vector<Dependency> mine;
  const std::vector<int>& stream = index.stream(core);
  const int n = static_cast<int>(stream.size());
  constexpr int kFar = GraphIndex::kPrefetchAhead, kNear = kFar / 2;
  for (int p = 0; p < n; ++p) {
    const int i = stream[p];
    index.Prefetch(p + kFar < n ? stream[p + kFar] : -1,
                   p + kNear < n ? stream[p + kNear] : -1);
    touches.clear();
    AppendTouches(index, i, &touches, options.resolved);
    const int engine = static_cast<int>(index.info(i).engine);
    mine.clear();
    for (const Touch& touch : touches) {
      hits.clear();
      tracker.Access(touch, i, engine, &hits);
      for (const RegionTracker::Hit& hit : hits) {
        mine.push_back({hit.from, i, hit.kind, hit.tensor, touch.tensor});
      }
    }
    // One edge per earlier instruction: the strongest kind, and among
    // equals the first seen (operand order). Mostly a handful of hits:
    // a stable insertion sort then, without stable_sort's buffer.
    auto before = [](const Dependency& a, const Dependency& b) {
      if (a.from != b.from) return a.from < b.from;
      return static_cast<int>(a.kind) < static_cast<int>(b.kind);
    };
    if (mine.size() > 32) {
      std::stable_sort(mine.begin(), mine.end(), before);
    } else {
      for (size_t k = 1; k < mine.size(); ++k) {
        const Dependency dep = mine[k];
        size_t j = k;
        for (; j > 0 && before(dep, mine[j - 1]); --j) mine[j] = mine[j - 1];
        mine[j] = dep;
      }
    }
    for (size_t k = 0; k < mine.size(); ++k) {
      if (k > 0 && mine[k].from == mine[k - 1].from) continue;
      // Prefer an edge whose two sides name the same tensor.
      Dependency best = mine[k];
      for (size_t j = k + 1; j < mine.size() && mine[j].from == best.from &&
                             mine[j].kind == best.kind;
           ++j) {
        if (best.reuse() && !mine[j].reuse()) best = mine[j];
      }
      deps.push_back(best);
    }
  }
  if (!options.drop_implied || stream.empty()) return deps;
  return DropImplied(stream.front(), static_cast<int>(stream.size()),
                     std::move(deps));
}

// Below this many instructions the cores are analysed on the calling
// thread.
constexpr int kParallelInstructions = 1 << 14;

}  // namespace

std::vector<Dependency> AnalyzeDependencies(const GraphIndex& index,
                                            DependencyOptions options) {
  const int cores = index.num_cores();
  std::vector<std::vector<Dependency>> per_core(cores);
  auto analyze = [&](int core) {
    per_core[core] = CoreDependencies(index, core, options);
  };
  if (cores > 1 && index.size() >= kParallelInstructions) {
    WorkerPool pool(std::min(cores, WorkerPool::MachineThreads()));
    pool.Run(cores, analyze);
  } else {
    for (int core = 0; core < cores; ++core) analyze(core);
  }
  // Streams are numbered in core order: the cores' runs, one after the
  // other, stay sorted by (to, from).
  if (cores == 1) return std::move(per_core[0]);
  size_t total = 0;
  for (const std::vector<Dependency>& deps : per_core) total += deps.size();
  std::vector<Dependency> deps;
  deps.reserve(total);
  for (const std::vector<Dependency>& core : per_core) {
    deps.insert(deps.end(), core.begin(), core.end());
  }
  return deps;
}

}  // namespace nkigraph::graph
