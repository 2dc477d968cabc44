#ifndef NKIGRAPH_TOOLS_VERIFY_KERNEL_H_
#define NKIGRAPH_TOOLS_VERIFY_KERNEL_H_

// Verifying a registered kernel against its reference: trace it, run it on
// deterministic random inputs (valid ones from the kernel's input maker),
// compute the reference from the same inputs as the device holds them and
// compare every output by the kernel's measure. What `nkigraph verify`
// prints and the Python module's verify() returns.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "interp/interpreter.h"
#include "kernels/compare.h"
#include "kernels/registry.h"
#include "util/host_array.h"
#include "util/memory_budget.h"

namespace nkigraph::tools {

// How far a verification got; the stage an error came from.
enum class VerifyStage {
  kParams,      // parsing and validating the parameters
  kTrace,       // tracing the kernel
  kCreate,      // validating the graph and sizing the device
  kMakeInputs,  // the kernel's input maker
  kInputs,      // loading and filling the inputs
  kRun,         // running: a device error
  kReference,   // the kernel's reference
  kCompared,    // done: every output compared
};

// One output compared with its reference.
struct OutputCheck {
  std::string name;
  std::vector<int64_t> shape;
  // Why the output could not be compared (no such reference output,
  // mismatched shapes); empty when it was.
  std::string error;
  // The output's own (kernels::ToleranceOf).
  double tolerance = 0.0;
  kernels::OutputComparison comparison;

  bool ok() const { return error.empty() && comparison.ok(); }
};

struct KernelVerification {
  VerifyStage stage = VerifyStage::kParams;
  std::string kernel;
  // The parameters as traced (canonical text, defaults filled in).
  std::vector<std::pair<std::string, std::string>> params;
  uint64_t seed = 1;
  kernels::Comparison comparison = kernels::Comparison::kElementwise;
  // The kernel's; an output may have its own (OutputCheck::tolerance).
  double tolerance = 0.0;
  // The account the check's host and device memory is charged to, when
  // the caller's run options gave none (declared before everything charged
  // to it, so it outlives them).
  std::unique_ptr<MemoryBudget> budget;
  // From kCreate on: the interpreter, holding the graph.
  std::unique_ptr<interp::Interpreter> interp;
  // From kRun on: the inputs as the device held them before the run
  // (2-byte ones as raw bits); then the outputs and the reference's.
  std::vector<HostArray> inputs;
  std::vector<HostArray> outputs;
  std::vector<HostArray> reference;
  // Once compared: one per output, in the graph's order.
  std::vector<OutputCheck> checks;
  // The host arrays' charges (the traced graph, input copies, outputs and
  // the reference's outputs), released with the arrays.
  std::vector<ScopedCharge> held;

  bool passed() const;
};

// Verifies `def` (of `registry`) at `settings` with inputs drawn from
// `seed`. Returns the error of the stage that failed (a device error is
// the kRun stage's, with the interpreter's code); `*out` holds what was
// done until then, its `stage` the one that failed or kCompared. A kernel
// without a reference is a FailedPrecondition error at kReference, before
// anything is traced.
// Everything the check holds is charged to `run_options.budget`, or to
// a budget of `run_options.memory_limit_bytes` of its own; whether it all
// fits is checked once traced, before anything large is allocated (a
// resource error at kCreate listing the parts).
absl::Status VerifyKernel(const kernels::KernelRegistry& registry,
                          const kernels::KernelDef& def,
                          const kernels::Settings& settings, uint64_t seed,
                          const interp::RunOptions& run_options,
                          KernelVerification* out);

// "verify NAME (k=v, ...), seed S, compared by elementwise
// (|err|/(1+|want|))": the first line of `nkigraph verify`'s report.
std::string VerifyHeader(const KernelVerification& v);

// The report's line of one output: "  out [256, 256]: max abs err ...,
// tol ...: PASS" (or FAIL, with the count and the first failure).
std::string FormatCheck(const OutputCheck& check,
                        kernels::Comparison comparison);

}  // namespace nkigraph::tools

#endif  // NKIGRAPH_TOOLS_VERIFY_KERNEL_H_
