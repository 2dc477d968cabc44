#include "kernels/boundary_cases.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace nkigraph::kernels {
namespace {

// Tries to make a legal case of a tuple before calling it infeasible.
constexpr int kRepairAttempts = 40;
// Factors and values a tuple's key can hold (6 bits each).
constexpr int kMaxFactors = 64;
constexpr int kMaxValues = 64;
// Combinations the full product walks at most (legal or not).
constexpr int64_t kMaxProductCombinations = 4'000'000;

struct Factors {
  std::vector<SweepFactor> list;
  // Per factor, the value tried first when a case must be repaired: the
  // default, else the first.
  std::vector<int> fallback;
};

absl::StatusOr<Factors> MakeFactors(const KernelDef& def,
                                    const std::vector<std::string>& held = {}) {
  Factors f;
  for (SweepFactor& factor : BoundaryFactors(def)) {
    if (std::find(held.begin(), held.end(), factor.name) == held.end()) {
      f.list.push_back(std::move(factor));
    }
  }
  if (f.list.size() > kMaxFactors) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel '", def.name, "' has ", f.list.size(),
        " parameters to sweep; the sweep takes at most ", kMaxFactors));
  }
  for (const SweepFactor& factor : f.list) {
    if (factor.values.size() > kMaxValues) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter '", factor.name, "' of kernel '", def.name, "' has ",
          factor.values.size(), " values to sweep; the sweep takes at most ",
          kMaxValues));
    }
    int fallback = 0;
    for (const ParamSpec& spec : def.params) {
      if (spec.name != factor.name) continue;
      for (size_t v = 0; v < factor.values.size(); ++v) {
        const bool is_default = spec.default_value.empty()
                                    ? !factor.values[v].has_value()
                                    : factor.values[v] == spec.default_value;
        if (is_default) fallback = static_cast<int>(v);
      }
    }
    f.fallback.push_back(fallback);
  }
  return f;
}

Settings SettingsOf(const Factors& f, const std::vector<int>& assignment) {
  Settings settings;
  for (size_t i = 0; i < f.list.size(); ++i) {
    const std::optional<std::string>& value = f.list[i].values[assignment[i]];
    if (value.has_value()) settings.emplace_back(f.list[i].name, *value);
  }
  return settings;
}

bool Legal(const KernelRegistry& registry, const KernelDef& def,
           const Factors& f, const std::vector<int>& assignment) {
  return registry.ParseParams(def, SettingsOf(f, assignment)).ok();
}

// A tuple of (factor, value) pairs in factor order, as one key.
uint64_t KeyOf(const std::vector<std::pair<int, int>>& tuple) {
  uint64_t key = 0;
  for (const auto& [factor, value] : tuple) {
    key = (key << 12) | (static_cast<uint64_t>(factor) << 6) |
          static_cast<uint64_t>(value);
  }
  return (key << 2) | tuple.size();
}

// Every combination of `strength` factors, in lexicographic order.
std::vector<std::vector<int>> FactorCombinations(int n, int strength) {
  std::vector<std::vector<int>> out;
  std::vector<int> pick(strength);
  for (int i = 0; i < strength; ++i) pick[i] = i;
  if (strength > n) return out;
  while (true) {
    out.push_back(pick);
    int i = strength - 1;
    while (i >= 0 && pick[i] == n - strength + i) --i;
    if (i < 0) return out;
    ++pick[i];
    for (int j = i + 1; j < strength; ++j) pick[j] = pick[j - 1] + 1;
  }
}

class Coverer {
 public:
  Coverer(const KernelRegistry& registry, const KernelDef& def, Factors f,
          int strength, uint64_t seed)
      : registry_(registry),
        def_(def),
        f_(std::move(f)),
        strength_(std::min<int>(strength, f_.list.size())),
        rng_(seed) {}

  BoundaryCases Run() {
    BoundaryCases result;
    const int n = static_cast<int>(f_.list.size());
    if (n == 0 || strength_ == 0) {
      std::vector<int> none(n, 0);
      if (Legal(registry_, def_, f_, none)) {
        result.cases.push_back(SettingsOf(f_, none));
      }
      return result;
    }
    // Every tuple, in a fixed order: the next case starts from the first
    // still uncovered.
    std::vector<std::vector<std::pair<int, int>>> tuples;
    for (const std::vector<int>& combo : FactorCombinations(n, strength_)) {
      std::vector<int> value(strength_, 0);
      while (true) {
        std::vector<std::pair<int, int>> tuple;
        for (int i = 0; i < strength_; ++i) {
          tuple.emplace_back(combo[i], value[i]);
        }
        tuples.push_back(tuple);
        uncovered_.insert(KeyOf(tuple));
        int i = strength_ - 1;
        for (; i >= 0; --i) {
          if (++value[i] < static_cast<int>(f_.list[combo[i]].values.size())) {
            break;
          }
          value[i] = 0;
        }
        if (i < 0) break;
      }
    }
    result.tuples = static_cast<int64_t>(tuples.size());
    for (const auto& tuple : tuples) {
      if (!uncovered_.contains(KeyOf(tuple))) continue;
      std::optional<std::vector<int>> made = CaseHolding(tuple);
      if (!made.has_value()) {
        uncovered_.erase(KeyOf(tuple));
        ++result.infeasible;
        continue;
      }
      Cover(*made);
      result.cases.push_back(SettingsOf(f_, *made));
    }
    return result;
  }

 private:
  // The tuples of `strength_` factors that `assignment` holds (every
  // assigned factor, -1 for unassigned ones) and that include `with`.
  int Gain(const std::vector<int>& assignment, int with) const {
    std::vector<int> assigned;
    for (int i = 0; i < static_cast<int>(assignment.size()); ++i) {
      if (i != with && assignment[i] >= 0) assigned.push_back(i);
    }
    int gain = 0;
    const int others = strength_ - 1;
    if (others > static_cast<int>(assigned.size())) return 0;
    for (const std::vector<int>& combo :
         FactorCombinations(static_cast<int>(assigned.size()), others)) {
      std::vector<std::pair<int, int>> tuple;
      for (const int c : combo) {
        tuple.emplace_back(assigned[c], assignment[assigned[c]]);
      }
      tuple.emplace_back(with, assignment[with]);
      std::sort(tuple.begin(), tuple.end());
      gain += uncovered_.contains(KeyOf(tuple)) ? 1 : 0;
    }
    return gain;
  }

  // A legal case holding `tuple`: its other factors chosen one at a time
  // for the most tuples still uncovered, then, if the kernel refuses that,
  // repaired from the defaults and at random.
  std::optional<std::vector<int>> CaseHolding(
      const std::vector<std::pair<int, int>>& tuple) {
    const int n = static_cast<int>(f_.list.size());
    std::vector<int> assignment(n, -1);
    std::vector<bool> fixed(n, false);
    for (const auto& [factor, value] : tuple) {
      assignment[factor] = value;
      fixed[factor] = true;
    }
    std::vector<int> order;
    for (int i = 0; i < n; ++i) {
      if (!fixed[i]) order.push_back(i);
    }
    std::shuffle(order.begin(), order.end(), rng_);
    for (const int i : order) {
      const int count = static_cast<int>(f_.list[i].values.size());
      int best = -1;
      int best_gain = -1;
      // Ties go to the first value: the smallest integer, the first
      // choice. A large size then appears only in the cases that need it
      // for a tuple, and the sweep stays cheap to run.
      for (int v = 0; v < count; ++v) {
        assignment[i] = v;
        const int gain = Gain(assignment, i);
        if (gain > best_gain) {
          best_gain = gain;
          best = v;
        }
      }
      assignment[i] = best;
    }
    if (Legal(registry_, def_, f_, assignment)) return assignment;
    // The defaults where the greedy choice was refused, one factor at a
    // time, then everything else at random.
    for (const int i : order) {
      const int kept = assignment[i];
      assignment[i] = f_.fallback[i];
      if (Legal(registry_, def_, f_, assignment)) return assignment;
      assignment[i] = kept;
    }
    std::vector<int> trial = assignment;
    for (const int i : order) trial[i] = f_.fallback[i];
    if (Legal(registry_, def_, f_, trial)) return trial;
    for (int attempt = 0; attempt < kRepairAttempts; ++attempt) {
      for (const int i : order) {
        const int count = static_cast<int>(f_.list[i].values.size());
        trial[i] = static_cast<int>(rng_() % count);
      }
      if (Legal(registry_, def_, f_, trial)) return trial;
    }
    return std::nullopt;
  }

  void Cover(const std::vector<int>& assignment) {
    const int n = static_cast<int>(assignment.size());
    for (const std::vector<int>& combo : FactorCombinations(n, strength_)) {
      std::vector<std::pair<int, int>> tuple;
      for (const int i : combo) tuple.emplace_back(i, assignment[i]);
      uncovered_.erase(KeyOf(tuple));
    }
  }

  const KernelRegistry& registry_;
  const KernelDef& def_;
  const Factors f_;
  const int strength_;
  std::mt19937_64 rng_;
  absl::flat_hash_set<uint64_t> uncovered_;
};

}  // namespace

std::vector<SweepFactor> BoundaryFactors(const KernelDef& def) {
  std::vector<SweepFactor> factors;
  for (const ParamSpec& spec : def.params) {
    SweepFactor factor{spec.name, {}};
    switch (spec.type) {
      case ParamType::kInt: {
        std::set<int64_t> ints(spec.edges.begin(), spec.edges.end());
        int64_t parsed = 0;
        const bool has_default = !spec.default_value.empty() &&
                                 absl::SimpleAtoi(spec.default_value, &parsed);
        if (has_default) ints.insert(parsed);
        if (spec.int_range.has_value()) {
          const auto [lo, hi] = *spec.int_range;
          // An optional integer without edges stays unset: its whole
          // range would be no boundary of the kernel's.
          if (!spec.default_value.empty() || spec.required) {
            ints.insert(lo);
            if (lo <= 1 && 1 <= hi) ints.insert(1);
          }
        }
        if (spec.default_value.empty() && !spec.required) {
          factor.values.push_back(std::nullopt);
        }
        for (const int64_t v : ints) factor.values.push_back(absl::StrCat(v));
        break;
      }
      case ParamType::kBool:
        factor.values = {"0", "1"};
        break;
      case ParamType::kString:
        for (const std::string& choice : spec.choices) {
          factor.values.push_back(choice);
        }
        if (factor.values.empty()) factor.values.push_back(spec.default_value);
        break;
      case ParamType::kFloat:
        break;
    }
    // A required parameter is set even when it has one value to try.
    if (factor.values.size() > 1 || (spec.required && !factor.values.empty())) {
      factors.push_back(std::move(factor));
    }
  }
  return factors;
}

absl::StatusOr<BoundaryCases> CoveringCases(
    const KernelRegistry& registry, const KernelDef& def, int strength,
    uint64_t seed, const std::vector<std::string>& held) {
  if (strength < 1 || strength > 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("strength ", strength, " is not 1, 2 or 3"));
  }
  absl::StatusOr<Factors> f = MakeFactors(def, held);
  if (!f.ok()) return f.status();
  return Coverer(registry, def, *std::move(f), strength, seed).Run();
}

absl::StatusOr<BoundaryCases> ProductCases(const KernelRegistry& registry,
                                           const KernelDef& def,
                                           int64_t limit) {
  absl::StatusOr<Factors> made = MakeFactors(def);
  if (!made.ok()) return made.status();
  const Factors& f = *made;
  const int n = static_cast<int>(f.list.size());
  int64_t combinations = 1;
  for (const SweepFactor& factor : f.list) {
    combinations *= static_cast<int64_t>(factor.values.size());
    if (combinations > kMaxProductCombinations) {
      return absl::FailedPreconditionError(
          absl::StrCat("the full product of kernel '", def.name, "''s ", n,
                       " swept parameters has over ", kMaxProductCombinations,
                       " combinations; sweep it 3-wise"));
    }
  }
  BoundaryCases result;
  std::vector<int> assignment(n, 0);
  while (true) {
    if (Legal(registry, def, f, assignment)) {
      if (static_cast<int64_t>(result.cases.size()) == limit) {
        result.truncated = true;
        return result;
      }
      result.cases.push_back(SettingsOf(f, assignment));
    }
    int i = n - 1;
    for (; i >= 0; --i) {
      if (++assignment[i] < static_cast<int>(f.list[i].values.size())) break;
      assignment[i] = 0;
    }
    if (i < 0) return result;
  }
}

std::string DescribeCase(const Settings& settings) {
  return absl::StrJoin(settings, ", ", absl::PairFormatter("="));
}

}  // namespace nkigraph::kernels
