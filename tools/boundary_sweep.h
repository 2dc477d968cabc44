#ifndef NKIGRAPH_TOOLS_BOUNDARY_SWEEP_H_
#define NKIGRAPH_TOOLS_BOUNDARY_SWEEP_H_

// Running a kernel's boundary cases (kernels/boundary_cases.h): each case
// verified against the kernel's reference as `nkigraph verify` does, and
// the outcome counted. What `nkigraph verify --sweep` prints and the
// boundary-sweep test asserts.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "interp/interpreter.h"
#include "kernels/boundary_cases.h"
#include "kernels/registry.h"

namespace nkigraph::tools {

// How the cases were combined.
enum class SweepStrength { kPairwise, kThreeWise, kProduct };

// "pairwise", "3-wise" or "product"; parses the same words (and 2, 3).
std::string SweepStrengthName(SweepStrength strength);
absl::StatusOr<SweepStrength> ParseSweepStrength(const std::string& text);

// One case that did not pass: refused by the kernel when traced (a limit
// it names), or failed (a device error, an output off its reference, an
// error past tracing).
struct SweepOutcome {
  kernels::Settings settings;
  bool refused = false;
  std::string why;
};

struct SweepRow {
  std::string kernel;
  std::string strength;  // as the table says it
  int64_t cases = 0;
  int64_t passed = 0;
  int64_t tuples = 0;
  int64_t infeasible = 0;
  bool truncated = false;
  std::vector<SweepOutcome> refused;
  std::vector<SweepOutcome> failed;
};

struct SweepOptions {
  SweepStrength strength = SweepStrength::kPairwise;
  // The full product's most legal cases; 3-wise beyond.
  int64_t product_limit = 20000;
  uint64_t seed = 1;  // of the inputs
  // Parameters kept at their defaults (kernels::CoveringCases).
  std::vector<std::string> held;
};

// Builds `def`'s cases and verifies each.
absl::StatusOr<SweepRow> SweepKernel(const kernels::KernelRegistry& registry,
                                     const kernels::KernelDef& def,
                                     const SweepOptions& options,
                                     const interp::RunOptions& run_options);

// The table: kernel, how combined, cases, passed, refused, failed,
// infeasible tuples.
std::string FormatSweepTable(const std::vector<SweepRow>& rows);

}  // namespace nkigraph::tools

#endif  // NKIGRAPH_TOOLS_BOUNDARY_SWEEP_H_
