#include "tools/verify_kernel.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "builder/tracer.h"
#include "interp/device_memory.h"
#include "tools/processes.h"
#include "tools/run_support.h"
#include "util/graph_io.h"
#include "util/status_macros.h"

namespace nkigraph::tools {
namespace {

OutputCheck CheckOutput(const HostArray& got,
                        const std::vector<HostArray>& reference,
                        kernels::Comparison comparison, double tolerance) {
  OutputCheck check;
  check.name = got.name;
  check.shape = got.shape;
  check.tolerance = tolerance;
  auto want =
      std::find_if(reference.begin(), reference.end(),
                   [&](const HostArray& r) { return r.name == got.name; });
  if (want == reference.end()) {
    check.error = "the reference has no such output";
    return check;
  }
  absl::StatusOr<kernels::OutputComparison> compared =
      kernels::CompareOutput(got, *want, comparison, tolerance);
  if (!compared.ok()) {
    check.error = std::string(compared.status().message());
    return check;
  }
  check.comparison = *std::move(compared);
  return check;
}

}  // namespace

bool KernelVerification::passed() const {
  return stage == VerifyStage::kCompared &&
         std::all_of(checks.begin(), checks.end(),
                     [](const OutputCheck& check) { return check.ok(); });
}

absl::Status VerifyKernel(const kernels::KernelRegistry& registry,
                          const kernels::KernelDef& def,
                          const kernels::Settings& settings, uint64_t seed,
                          const interp::RunOptions& run_options,
                          KernelVerification* out) {
  KernelVerification& v = *out;
  v = KernelVerification{};
  v.kernel = def.name;
  v.seed = seed;
  v.comparison = def.comparison;
  if (!def.reference) {
    v.stage = VerifyStage::kReference;
    return absl::FailedPreconditionError(absl::StrCat(
        "kernel '", def.name, "' has no reference to compare with"));
  }
  v.stage = VerifyStage::kParams;
  NKI_ASSIGN_OR_RETURN(const kernels::ParamValues values,
                       registry.ParseParams(def, settings));
  v.params = values.AsPairs();
  v.tolerance = kernels::KernelTolerance(def, values);

  v.stage = VerifyStage::kTrace;
  // Traced to bytes and parsed onto an arena, which the interpreter runs
  // where it lies.
  int64_t graph_bytes = 0;
  ArenaGraph graph;
  {
    NKI_ASSIGN_OR_RETURN(const builder::SerializedGraph traced,
                         registry.TraceSerialized(def.name, settings));
    graph_bytes = static_cast<int64_t>(traced.bytes.size());
    NKI_ASSIGN_OR_RETURN(
        graph, ParseGraph(traced.bytes, def.name, run_options.threads));
  }

  v.stage = VerifyStage::kCreate;
  // One account per kernel for everything its check holds.
  interp::RunOptions options = run_options;
  if (options.budget == nullptr) {
    v.budget = std::make_unique<MemoryBudget>(options.memory_limit_bytes);
    options.budget = v.budget.get();
  }
  MemoryBudget& budget = *options.budget;
  const int64_t input_bytes = HostInputBytes(*graph, /*raw_bits16=*/false);
  const int64_t input_copy_bytes = HostInputBytes(*graph, /*raw_bits16=*/true);
  const int64_t output_bytes = HostOutputBytes(*graph, /*raw_bits16=*/false);
  // Before anything large is allocated: does the whole check fit?
  // A process of a run spread over several holds its ranks' device memory.
  const int ranks = std::max<int>(1, graph->world().num_ranks());
  const int held_ranks =
      options.transport != nullptr
          ? interp::BlockOf(options.transport->process(),
                            options.transport->num_processes(), ranks)
                .size()
          : ranks;
  if (absl::StatusOr<int64_t> device =
          interp::DeviceMemory::BytesNeeded(*graph, held_ranks);
      device.ok()) {
    NKI_RETURN_IF_ERROR(CheckMemoryPlan(
        budget, {{"the graph", graph_bytes},
                 {"device memory and its shadow state", *device},
                 {"inputs made on the host", def.make_inputs ? input_bytes : 0},
                 {"the reference's copy of the inputs", input_copy_bytes},
                 {"outputs on the host", output_bytes},
                 {"the reference's outputs", output_bytes}}));
  }
  ScopedCharge graph_charge(&budget, graph_bytes,
                            "host memory for the traced graph");
  NKI_RETURN_IF_ERROR(graph_charge.status());
  v.held.push_back(std::move(graph_charge));
  NKI_ASSIGN_OR_RETURN(v.interp,
                       interp::Interpreter::Create(std::move(graph), options));
  interp::Interpreter& interp = *v.interp;
  if (def.make_inputs) {
    v.stage = VerifyStage::kMakeInputs;
    const ScopedCharge charge(&budget, input_bytes,
                              "host memory for the inputs the kernel makes");
    NKI_RETURN_IF_ERROR(charge.status());
    NKI_ASSIGN_OR_RETURN(const std::vector<HostArray> made,
                         def.make_inputs(values, seed));
    v.stage = VerifyStage::kInputs;
    for (const HostArray& input : made) {
      NKI_RETURN_IF_ERROR(interp.SetInput(input));
    }
  }
  v.stage = VerifyStage::kInputs;
  NKI_RETURN_IF_ERROR(interp.FillRandomInputs(seed));
  // The reference sees the inputs exactly as the device holds them.
  NKI_ASSIGN_OR_RETURN(
      v.inputs,
      ReadInputs(interp, interp::Interpreter::HostForm::kRawBits16, &v.held));
  // Across processes the first computes the reference from every rank's.
  NKI_ASSIGN_OR_RETURN(
      v.inputs, GatherToFirst(options.transport, interp, std::move(v.inputs)));

  v.stage = VerifyStage::kRun;
  NKI_RETURN_IF_ERROR(interp.Run());
  NKI_ASSIGN_OR_RETURN(
      v.outputs,
      ReadOutputs(interp, interp::Interpreter::HostForm::kValues, &v.held));
  NKI_ASSIGN_OR_RETURN(v.outputs, GatherToFirst(options.transport, interp,
                                                std::move(v.outputs)));
  if (options.transport != nullptr && options.transport->process() != 0) {
    // The first process compares; this one's part is done.
    v.stage = VerifyStage::kCompared;
    return absl::OkStatus();
  }

  v.stage = VerifyStage::kReference;
  // The reference's outputs, as big as the interpreter's.
  ScopedCharge reference_charge(&budget, output_bytes,
                                "host memory for the reference's outputs");
  NKI_RETURN_IF_ERROR(reference_charge.status());
  v.held.push_back(std::move(reference_charge));
  NKI_ASSIGN_OR_RETURN(v.reference, def.reference(values, v.inputs));

  for (const HostArray& output : v.outputs) {
    v.checks.push_back(
        CheckOutput(output, v.reference, def.comparison,
                    kernels::ToleranceOf(def, values, output.name)));
  }
  v.stage = VerifyStage::kCompared;
  return absl::OkStatus();
}

std::string VerifyHeader(const KernelVerification& v) {
  std::vector<std::string> pairs;
  for (const auto& [key, value] : v.params) {
    pairs.push_back(absl::StrCat(key, "=", value));
  }
  return absl::StrCat("verify ", v.kernel, " (", absl::StrJoin(pairs, ", "),
                      "), seed ", v.seed, ", compared by ",
                      kernels::ComparisonName(v.comparison), " (",
                      kernels::ComparisonMeasure(v.comparison), ")");
}

std::string FormatCheck(const OutputCheck& check,
                        kernels::Comparison comparison) {
  std::string line =
      absl::StrCat("  ", check.name, " ", ShapeString(check.shape), ": ");
  if (!check.error.empty()) return absl::StrCat(line, "FAIL: ", check.error);
  const kernels::OutputComparison& c = check.comparison;
  absl::StrAppend(&line, absl::StrFormat("max abs err %.3g, max rel err %.3g, ",
                                         c.max_abs_error, c.max_rel_error));
  if (comparison == kernels::Comparison::kScale) {
    absl::StrAppend(&line, absl::StrFormat("scale max|want| %.3g, ", c.scale));
  }
  absl::StrAppend(&line, absl::StrFormat("max %s %.3g, tol %.3g: ",
                                         kernels::ComparisonMeasure(comparison),
                                         c.error, check.tolerance));
  if (c.ok()) return absl::StrCat(line, "PASS");
  int64_t elements = 1;
  for (int64_t d : check.shape) elements *= d;
  absl::StrAppend(
      &line,
      absl::StrFormat("FAIL (%d of %d elements outside tolerance; first at "
                      "%s: got %.9g, want %.9g)",
                      c.failures, elements,
                      IndexString(check.shape, c.first_failure), c.first_got,
                      c.first_want));
  return line;
}

}  // namespace nkigraph::tools
