#ifndef NKIGRAPH_KERNELS_BOUNDARY_CASES_H_
#define NKIGRAPH_KERNELS_BOUNDARY_CASES_H_

// The boundary cases of a registered kernel: every parameter at the values
// where kernels go wrong first (an integer at its smallest legal value, at
// 1, at its default and either side of every tile size the kernel cuts it
// by, ParamSpec::edges; every flag and choice, both dtypes among them),
// combined so that every t values of t different parameters meet in some
// case (a t-wise covering array, built greedily) or in every combination
// (the full product). Combinations the kernel refuses (its limits, its
// validate) are not cases: a tuple no legal case can hold is counted as
// infeasible rather than covered.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/registry.h"

namespace nkigraph::kernels {

// One parameter's values to try; nullopt leaves an optional parameter
// unset.
struct SweepFactor {
  std::string name;
  std::vector<std::optional<std::string>> values;
};

// The factors of `def`: every parameter with more than one value to try,
// and every required one (a float parameter keeps its default and is no
// factor).
std::vector<SweepFactor> BoundaryFactors(const KernelDef& def);

struct BoundaryCases {
  std::vector<Settings> cases;
  // t-tuples of values there were to cover, and those that no legal case
  // holds (0 for the full product).
  int64_t tuples = 0;
  int64_t infeasible = 0;
  // The full product had more legal combinations than the limit: `cases`
  // holds the first `limit` of them.
  bool truncated = false;
};

// A t-wise covering (strength 1 to 3) of `def`'s factors by legal cases,
// deterministic for a given seed. Parameters named in `held` are no
// factors: they keep their defaults.
absl::StatusOr<BoundaryCases> CoveringCases(
    const KernelRegistry& registry, const KernelDef& def, int strength,
    uint64_t seed = 1, const std::vector<std::string>& held = {});

// Every legal combination of the factors, at most `limit`.
absl::StatusOr<BoundaryCases> ProductCases(const KernelRegistry& registry,
                                           const KernelDef& def, int64_t limit);

// "m=1, k=128, dtype=float32": a case as `verify --set` takes it.
std::string DescribeCase(const Settings& settings);

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_BOUNDARY_CASES_H_
