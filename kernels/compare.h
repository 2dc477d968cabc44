// Comparing a kernel's outputs with its reference: the one measure that
// `nkigraph verify`, the kernel benchmarks and the tests apply, chosen per
// kernel (KernelDef::comparison) and bounded by the kernel's tolerance.
#ifndef NKIGRAPH_KERNELS_COMPARE_H_
#define NKIGRAPH_KERNELS_COMPARE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "util/host_array.h"

namespace nkigraph::kernels {

// How an output is compared with the reference.
enum class Comparison {
  // Element by element: every element within tol * (1 + |want|), relative
  // for magnitudes above one and absolute below. For outputs whose every
  // element carries its own relative error (matmuls, convolutions, losses).
  kElementwise,
  // Against the output's scale S = max |want| over its finite elements:
  // every element within tol * S. For outputs whose small entries are sums
  // of large, cancelling terms (weight and input gradients): their rounding
  // error is set by the terms, not by the sum, so an element-wise measure
  // fails correct results. An all-zero reference must be matched exactly.
  kScale,
};

// "elementwise" or "scale".
absl::string_view ComparisonName(Comparison comparison);

// The quantity the tolerance bounds, as reports print it:
// "|err|/(1+|want|)" or "|err|/max|want|".
absl::string_view ComparisonMeasure(Comparison comparison);

// The outcome of comparing one output with its reference.
struct OutputComparison {
  Comparison comparison = Comparison::kElementwise;
  double tolerance = 0.0;
  double max_abs_error = 0.0;  // max |got - want|
  double max_rel_error = 0.0;  // max |got - want| / |want| over want != 0
  double scale = 0.0;          // max |want| over finite elements
  // The largest value of the comparison's measure: what `tolerance`
  // bounds. NaN when a NaN meets a number; infinite for a nonzero error
  // against an all-zero reference under kScale.
  double error = 0.0;
  int64_t failures = 0;        // elements outside the tolerance
  int64_t first_failure = -1;  // flat index of the first, -1 if none
  double first_got = 0.0;      // the values there
  double first_want = 0.0;

  bool ok() const { return failures == 0; }
};

// Compares `got` with `want` element by element under `comparison` and
// `tolerance`. NaN matches NaN and an infinity the same infinity; a NaN
// against anything else fails. Values are compared as numbers whatever the
// arrays' dtypes. InvalidArgument if the shapes differ or an array's data
// does not match its shape.
absl::StatusOr<OutputComparison> CompareOutput(const HostArray& got,
                                               const HostArray& want,
                                               Comparison comparison,
                                               double tolerance);

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_COMPARE_H_
