#include "tools/boundary_sweep.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/verify_kernel.h"

namespace nkigraph::tools {

std::string SweepStrengthName(SweepStrength strength) {
  switch (strength) {
    case SweepStrength::kPairwise:
      return "pairwise";
    case SweepStrength::kThreeWise:
      return "3-wise";
    case SweepStrength::kProduct:
      return "product";
  }
  return "";
}

absl::StatusOr<SweepStrength> ParseSweepStrength(const std::string& text) {
  if (text == "pairwise" || text == "2") return SweepStrength::kPairwise;
  if (text == "3-wise" || text == "3") return SweepStrength::kThreeWise;
  if (text == "product") return SweepStrength::kProduct;
  return absl::InvalidArgumentError(absl::StrCat(
      "sweep strength '", text, "' is not pairwise, 3-wise or product"));
}

absl::StatusOr<SweepRow> SweepKernel(const kernels::KernelRegistry& registry,
                                     const kernels::KernelDef& def,
                                     const SweepOptions& options,
                                     const interp::RunOptions& run_options) {
  const SweepStrength strength = options.strength;
  SweepRow row;
  row.kernel = def.name;
  row.strength = SweepStrengthName(strength);
  absl::StatusOr<kernels::BoundaryCases> cases;
  if (strength == SweepStrength::kProduct) {
    cases = kernels::ProductCases(registry, def, options.product_limit);
    // Too many to walk, or more legal ones than the limit: 3-wise instead,
    // and the table says so.
    if (!cases.ok() || cases->truncated) {
      cases = kernels::CoveringCases(registry, def, 3, 1, options.held);
      row.strength = "3-wise (product too big)";
    }
  } else {
    cases = kernels::CoveringCases(registry, def,
                                   strength == SweepStrength::kPairwise ? 2 : 3,
                                   1, options.held);
  }
  if (!cases.ok()) return cases.status();
  if (!options.held.empty()) {
    row.strength += absl::StrCat(" (", options.held.size(), " held)");
  }
  row.tuples = cases->tuples;
  row.infeasible = cases->infeasible;
  row.truncated = cases->truncated;
  for (const kernels::Settings& settings : cases->cases) {
    ++row.cases;
    KernelVerification v;
    const absl::Status status =
        VerifyKernel(registry, def, settings, options.seed, run_options, &v);
    if (status.ok() && v.passed()) {
      ++row.passed;
      continue;
    }
    SweepOutcome outcome{settings, false, ""};
    // Refused when traced: the kernel said which limit (KERNELS.md: a
    // combination it cannot handle is refused naming the parameter).
    outcome.refused = !status.ok() && (v.stage == VerifyStage::kParams ||
                                       v.stage == VerifyStage::kTrace);
    if (!status.ok()) {
      outcome.why = std::string(status.message());
    } else {
      for (const OutputCheck& check : v.checks) {
        if (check.ok()) continue;
        outcome.why = FormatCheck(check, v.comparison);
        break;
      }
    }
    (outcome.refused ? row.refused : row.failed).push_back(std::move(outcome));
  }
  return row;
}

std::string FormatSweepTable(const std::vector<SweepRow>& rows) {
  size_t name_width = 6;
  size_t how_width = 8;
  for (const SweepRow& row : rows) {
    name_width = std::max(name_width, row.kernel.size());
    how_width = std::max(how_width, row.strength.size());
  }
  std::string out = absl::StrFormat(
      "%-*s  %-*s  %6s  %6s  %7s  %6s  %10s\n", name_width, "kernel", how_width,
      "combined", "cases", "passed", "refused", "failed", "infeasible");
  int64_t cases = 0, passed = 0, refused = 0, failed = 0;
  for (const SweepRow& row : rows) {
    absl::StrAppendFormat(
        &out, "%-*s  %-*s  %6d  %6d  %7d  %6d  %10s\n", name_width, row.kernel,
        how_width, row.strength, row.cases, row.passed, row.refused.size(),
        row.failed.size(),
        row.tuples == 0 ? std::string("-")
                        : absl::StrCat(row.infeasible, "/", row.tuples));
    cases += row.cases;
    passed += row.passed;
    refused += static_cast<int64_t>(row.refused.size());
    failed += static_cast<int64_t>(row.failed.size());
  }
  absl::StrAppendFormat(&out, "%-*s  %-*s  %6d  %6d  %7d  %6d\n", name_width,
                        "total", how_width, "", cases, passed, refused, failed);
  return out;
}

}  // namespace nkigraph::tools
