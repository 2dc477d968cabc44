// nkigraph verify NAME [--set k=v]...: traces a registered kernel, runs it
// on the interpreter and compares its outputs with the kernel's reference.
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "interp/device_memory.h"
#include "interp/interpreter.h"
#include "kernels/compare.h"
#include "kernels/registry.h"
#include "tools/commands.h"
#include "tools/run_flags.h"
#include "tools/run_support.h"
#include "util/graph_io.h"
#include "util/memory_budget.h"

namespace nkigraph::tools {
namespace {

constexpr char kUsage[] =
    R"(usage: nkigraph verify NAME [--set PARAM=VALUE]... [--seed S] [--out-dir DIR]
       nkigraph verify --all [--seed S] [--out-dir DIR]
       (either form also takes [--memory-limit BYTES] [--threads N] [--quiet])

Traces the registered kernel NAME, runs it on the interpreter with
deterministic random inputs (index inputs come from the kernel, valid for
it), computes the kernel's plain C++ reference from the same inputs (as the
device holds them, rounded to their dtype) and compares every output by
the kernel's measure, tol being the kernel's tolerance for the dtype:
  elementwise  an element passes when |got - want| <= tol * (1 + |want|)
  scale        an element passes when |got - want| <= tol * max|want|, the
               output's largest magnitude (gradients whose small entries
               are sums of large, cancelling terms)
Prints the kernel's measure, then per output the maximum absolute and
relative error, the maximum of the measure and PASS or FAIL.

options:
  -s, --set PARAM=VALUE   set a kernel parameter (repeatable)
  --all                   verify every registered kernel at its defaults
  --seed S                the inputs' random seed (default 1)
  --out-dir DIR           also write DIR/NAME.pb (the graph) and
                          DIR/NAME/{inputs,outputs,reference}/*.npy
  --memory-limit BYTES    the most a kernel's check may hold (default
                          8 GiB): device memory with its shadow state,
                          race-detection state, and the host arrays (the
                          inputs, their copy for the reference, the
                          outputs, the reference's outputs); checked
                          before the run, and as it grows. The
                          reference's own working memory is not counted
  --threads N             run the programs (ranks x cores) on N threads
                          (default: one per core of the machine); the
                          results are the same for every N
  -q, --quiet             no progress line on stderr (there is one only
                          when stderr is a terminal)
  -h, --help              show this help

Exit status: 0 every output within tolerance, 1 a mismatch or a device
error, 2 bad usage or a kernel that cannot be traced.
)";

constexpr char kVerb[] = "verify";
constexpr double kDefaultTolerance = 1e-4;

struct VerifyOptions {
  uint64_t seed = 1;
  std::string out_dir;  // empty: write nothing
  interp::RunOptions run;
};

// Compares one output with its reference under the kernel's comparison;
// prints a line naming the measure and returns whether it passed.
bool CheckOutput(const HostArray& got, const HostArray& want,
                 kernels::Comparison comparison, double tol) {
  std::cout << "  " << got.name << " " << ShapeString(got.shape) << ": ";
  absl::StatusOr<kernels::OutputComparison> c =
      kernels::CompareOutput(got, want, comparison, tol);
  if (!c.ok()) {
    std::cout << "FAIL: " << c.status().message() << "\n";
    return false;
  }
  std::cout << absl::StrFormat("max abs err %.3g, max rel err %.3g, ",
                               c->max_abs_error, c->max_rel_error);
  if (comparison == kernels::Comparison::kScale) {
    std::cout << absl::StrFormat("scale max|want| %.3g, ", c->scale);
  }
  std::cout << absl::StrFormat(
      "max %s %.3g, tol %.3g: ", kernels::ComparisonMeasure(comparison),
      c->error, tol);
  if (c->ok()) {
    std::cout << "PASS\n";
    return true;
  }
  std::cout << absl::StrFormat(
      "FAIL (%d of %d elements outside tolerance; first at %s: got %.9g, "
      "want %.9g)\n",
      c->failures, got.num_elements(), IndexString(got.shape, c->first_failure),
      c->first_got, c->first_want);
  return false;
}

// Verifies one kernel; returns the exit code. With `skip_when_unverifiable`
// (--all), kernels without a reference or with required parameters are
// skipped (*skipped set).
int VerifyKernel(
    const kernels::KernelDef& def,
    const std::vector<std::pair<std::string, std::string>>& settings,
    const VerifyOptions& options, bool skip_when_unverifiable, bool* skipped) {
  const kernels::KernelRegistry& registry = kernels::KernelRegistry::Global();
  const std::string& name = def.name;
  if (skip_when_unverifiable) {
    std::vector<std::string> required;
    for (const kernels::ParamSpec& spec : def.params) {
      const bool given =
          std::any_of(settings.begin(), settings.end(),
                      [&](const auto& kv) { return kv.first == spec.name; });
      if (spec.required && !given) required.push_back(spec.name);
    }
    if (!required.empty()) {
      std::cout << name << ": SKIP (no defaults for required parameters "
                << absl::StrJoin(required, ", ") << ")\n";
      *skipped = true;
      return kExitOk;
    }
  }
  if (!def.reference) {
    if (skip_when_unverifiable) {
      std::cout << name << ": SKIP (no reference)\n";
      *skipped = true;
      return kExitOk;
    }
    return ReportError(kVerb, absl::StrCat("kernel '", name,
                                           "' has no reference to compare "
                                           "with"));
  }
  absl::StatusOr<kernels::ParamValues> values =
      registry.ParseParams(def, settings);
  if (!values.ok()) return ReportError(kVerb, values.status());
  absl::StatusOr<proto::Graph> graph = registry.Trace(name, settings);
  if (!graph.ok()) return ReportError(kVerb, graph.status());
  // One account per kernel for everything its check holds.
  MemoryBudget budget(options.run.memory_limit_bytes);
  interp::RunOptions run_options = options.run;
  run_options.budget = &budget;
  std::vector<ScopedCharge> held;
  const int64_t input_bytes = HostInputBytes(*graph, /*raw_bits16=*/false);
  const int64_t input_copy_bytes = HostInputBytes(*graph, /*raw_bits16=*/true);
  const int64_t output_bytes = HostOutputBytes(*graph, /*raw_bits16=*/false);
  {
    // Before anything large is allocated: does the whole check fit?
    absl::StatusOr<int64_t> device = interp::DeviceMemory::BytesNeeded(*graph);
    if (device.ok()) {
      if (absl::Status fits = CheckMemoryPlan(
              budget,
              {{"the graph", static_cast<int64_t>(graph->ByteSizeLong())},
               {"device memory and its shadow state", *device},
               {"inputs made on the host", def.make_inputs ? input_bytes : 0},
               {"the reference's copy of the inputs", input_copy_bytes},
               {"outputs on the host", output_bytes},
               {"the reference's outputs", output_bytes}});
          !fits.ok()) {
        return ReportError(
            kVerb, WithContext(absl::StrCat("kernel '", name, "'"), fits));
      }
    }
  }
  ScopedCharge graph_charge(&budget,
                            static_cast<int64_t>(graph->ByteSizeLong()),
                            "host memory for the traced graph");
  if (!graph_charge.status().ok()) {
    return ReportError(kVerb, graph_charge.status());
  }
  std::vector<std::string> pairs;
  for (const auto& [key, value] : values->AsPairs()) {
    pairs.push_back(absl::StrCat(key, "=", value));
  }
  std::cout << "verify " << name << " (" << absl::StrJoin(pairs, ", ")
            << "), seed " << options.seed << ", compared by "
            << kernels::ComparisonName(def.comparison) << " ("
            << kernels::ComparisonMeasure(def.comparison) << ")\n";
  const std::string kernel_dir =
      options.out_dir.empty()
          ? ""
          : absl::StrCat(options.out_dir, "/", SafeFileName(name));
  if (!options.out_dir.empty()) {
    if (absl::Status status = MakeDirectories(options.out_dir); !status.ok()) {
      return ReportError(kVerb, status);
    }
    if (absl::Status status = WriteGraph(
            *graph,
            absl::StrCat(options.out_dir, "/", SafeFileName(name), ".pb"));
        !status.ok()) {
      return ReportError(kVerb, status);
    }
  }
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> created =
      interp::Interpreter::Create(*std::move(graph), run_options);
  if (!created.ok()) {
    return ReportError(kVerb, WithContext(absl::StrCat("kernel '", name, "'"),
                                          created.status()));
  }
  interp::Interpreter& interp = **created;
  if (def.make_inputs) {
    const ScopedCharge charge(&budget, input_bytes,
                              "host memory for the inputs the kernel makes");
    if (!charge.status().ok()) return ReportError(kVerb, charge.status());
    absl::StatusOr<std::vector<HostArray>> made =
        def.make_inputs(*values, options.seed);
    if (!made.ok()) {
      return ReportError(
          kVerb, absl::StrCat("kernel '", name,
                              "': making inputs: ", made.status().message()));
    }
    for (const HostArray& input : *made) {
      if (absl::Status status = interp.SetInput(input); !status.ok()) {
        return ReportError(
            kVerb, absl::StrCat("kernel '", name, "': ", status.message()));
      }
    }
  }
  if (absl::Status status = interp.FillRandomInputs(options.seed);
      !status.ok()) {
    return ReportError(
        kVerb, WithContext(absl::StrCat("kernel '", name, "'"), status));
  }
  // The reference sees the inputs exactly as the device holds them.
  absl::StatusOr<std::vector<HostArray>> inputs = ReadInputs(interp, &held);
  if (!inputs.ok()) return ReportError(kVerb, inputs.status());
  if (!kernel_dir.empty()) {
    if (absl::Status status =
            WriteArrays(absl::StrCat(kernel_dir, "/inputs"), *inputs);
        !status.ok()) {
      return ReportError(kVerb, status);
    }
  }

  if (absl::Status status = interp.Run(); !status.ok()) {
    std::cout << name << ": FAIL (device error)\n";
    return ReportRunError(kVerb, status);
  }
  absl::StatusOr<std::vector<HostArray>> outputs =
      ReadOutputs(interp, interp::Interpreter::HostForm::kValues, &held);
  if (!outputs.ok()) return ReportError(kVerb, outputs.status());
  // The reference's outputs, as big as the interpreter's.
  ScopedCharge reference_charge(&budget, output_bytes,
                                "host memory for the reference's outputs");
  if (!reference_charge.status().ok()) {
    return ReportError(kVerb, reference_charge.status());
  }
  absl::StatusOr<std::vector<HostArray>> reference =
      def.reference(*values, *inputs);
  if (!reference.ok()) {
    return ReportError(kVerb, absl::StrCat("kernel '", name, "': reference: ",
                                           reference.status().message()));
  }
  if (!kernel_dir.empty()) {
    for (const auto& [sub, arrays] :
         {std::pair{"outputs", &*outputs}, {"reference", &*reference}}) {
      if (absl::Status status =
              WriteArrays(absl::StrCat(kernel_dir, "/", sub), *arrays);
          !status.ok()) {
        return ReportError(kVerb, status);
      }
    }
  }

  const double tol = def.tolerance ? def.tolerance(*values) : kDefaultTolerance;
  bool pass = true;
  for (const HostArray& output : *outputs) {
    auto want =
        std::find_if(reference->begin(), reference->end(),
                     [&](const HostArray& r) { return r.name == output.name; });
    if (want == reference->end()) {
      std::cout << "  " << output.name << ": FAIL: the reference has no "
                << "such output\n";
      pass = false;
      continue;
    }
    pass &= CheckOutput(output, *want, def.comparison, tol);
  }
  std::cout << name << ": " << (pass ? "PASS" : "FAIL") << "\n";
  return pass ? kExitOk : kExitFailure;
}

}  // namespace

int RunVerify(const std::vector<std::string>& args) {
  absl::StatusOr<ParsedArgs> parsed =
      ParseArgs(args, {{"--set", "-s", /*takes_value=*/true,
                        /*repeated=*/true},
                       {"--all", "", /*takes_value=*/false, false},
                       {"--seed", "", true, false},
                       {"--out-dir", "", true, false},
                       kMemoryLimitFlag,
                       kThreadsFlag,
                       kQuietFlag});
  if (!parsed.ok()) return ReportError(kVerb, parsed.status());
  if (parsed->help) {
    std::cout << kUsage;
    return kExitOk;
  }
  VerifyOptions options;
  options.out_dir = parsed->Get("--out-dir");
  if (parsed->Has("--out-dir") && options.out_dir.empty()) {
    return ReportError(kVerb, "--out-dir needs a directory");
  }
  if (parsed->Has("--seed")) {
    absl::StatusOr<uint64_t> seed = ParseCount(parsed->Get("--seed"), "--seed");
    if (!seed.ok()) return ReportError(kVerb, seed.status());
    options.seed = *seed;
  }
  if (absl::Status status = ApplyRunFlags(*parsed, &options.run);
      !status.ok()) {
    return ReportError(kVerb, status);
  }
  const kernels::KernelRegistry& registry = kernels::KernelRegistry::Global();

  if (parsed->Has("--all")) {
    if (!parsed->positionals.empty() || parsed->Has("--set")) {
      return ReportError(kVerb,
                         "--all verifies every kernel at its defaults; it "
                         "takes no kernel name and no --set");
    }
    int passed = 0, failed = 0, skipped = 0, worst = kExitOk;
    for (const kernels::KernelDef& def : registry.kernels()) {
      bool skip = false;
      const int code = VerifyKernel(def, def.example, options,
                                    /*skip_when_unverifiable=*/true, &skip);
      if (skip) {
        ++skipped;
      } else if (code == kExitOk) {
        ++passed;
      } else {
        ++failed;
      }
      worst = std::max(worst, code);
    }
    std::cout << "verified " << registry.kernels().size()
              << " kernel(s): " << passed << " passed, " << failed
              << " failed, " << skipped << " skipped\n";
    return worst;
  }

  absl::StatusOr<std::string> name_or = OnePositional(
      *parsed, kVerb, "kernel name",
      "nkigraph verify NAME [--set PARAM=VALUE]... or nkigraph verify --all");
  if (!name_or.ok()) return ReportError(kVerb, name_or.status());
  const std::string& name = *name_or;
  const kernels::KernelDef* def = registry.Find(name);
  if (def == nullptr) {
    std::vector<std::string> names;
    for (const kernels::KernelDef& k : registry.kernels()) {
      names.push_back(k.name);
    }
    return ReportError(kVerb,
                       absl::StrCat("unknown kernel '", name, "' (registered: ",
                                    absl::StrJoin(names, ", "), ")"));
  }
  std::vector<std::pair<std::string, std::string>> settings;
  for (const std::string& setting : parsed->All("--set")) {
    absl::StatusOr<std::pair<std::string, std::string>> kv =
        SplitKeyValue(setting, "--set");
    if (!kv.ok()) return ReportError(kVerb, kv.status());
    settings.push_back(*std::move(kv));
  }
  bool skipped = false;
  return VerifyKernel(*def, settings, options,
                      /*skip_when_unverifiable=*/false, &skipped);
}

}  // namespace nkigraph::tools
