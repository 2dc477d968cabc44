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
#include "interp/interpreter.h"
#include "kernels/compare.h"
#include "kernels/registry.h"
#include "tools/boundary_sweep.h"
#include "tools/commands.h"
#include "tools/processes.h"
#include "tools/run_flags.h"
#include "tools/run_support.h"
#include "tools/verify_kernel.h"
#include "util/graph_io.h"
#include "util/status_macros.h"

namespace nkigraph::tools {
namespace {

constexpr char kUsage[] =
    R"(usage: nkigraph verify NAME [--set PARAM=VALUE]... [--seed S] [--out-dir DIR]
       nkigraph verify --all [--seed S] [--out-dir DIR]
       nkigraph verify (NAME | --all) --sweep pairwise|3-wise|product
       (either form also takes [--memory-limit BYTES] [--max-steps N]
        [--threads N] [--quiet] [--peer-timeout SECONDS])
       mpirun -np P nkigraph verify ...: the ranks spread over P processes
       (see `nkigraph run --help`); the first prints the report

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
  --sweep HOW             verify the kernel's boundary cases instead: each
                          integer parameter at its smallest legal value, at
                          1, at its default and either side of every tile
                          size the kernel cuts it by, with every flag and
                          choice (both dtypes), combined pairwise, 3-wise
                          or as the full product (3-wise when that has more
                          than 20000 legal cases); combinations the kernel
                          refuses are left out. Prints every case that
                          fails or is refused when traced, then a table
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
  --max-steps N           stop a kernel's run after N instructions (default:
                          no limit), naming the instruction where it stopped
  --threads N             run the programs (ranks x cores) on N threads
                          (default: one per core of the machine); the
                          results are the same for every N
  -q, --quiet             no progress line on stderr (there is one only
                          when stderr is a terminal)
  -h, --help              show this help

Exit status: 0 every output within tolerance, 1 a mismatch or a device
error, 2 bad usage, a kernel that cannot be traced, or a memory or step
limit reached.
)";

constexpr char kVerb[] = "verify";

struct VerifyOptions {
  uint64_t seed = 1;
  std::string out_dir;  // empty: write nothing
  interp::RunOptions run;
  // False in the processes but the first of a run spread over several:
  // the first writes the --out-dir.
  bool writes = true;
};

// Writes what the verification produced under the --out-dir: the graph
// (once traced and loaded), the inputs, outputs and reference (as far as
// they exist).
absl::Status WriteVerification(const KernelVerification& v,
                               const std::string& out_dir) {
  if (out_dir.empty() || v.interp == nullptr) return absl::OkStatus();
  NKI_RETURN_IF_ERROR(MakeDirectories(out_dir));
  const std::string name = SafeFileName(v.kernel);
  NKI_RETURN_IF_ERROR(
      WriteGraph(v.interp->graph(), absl::StrCat(out_dir, "/", name, ".pb")));
  const std::string kernel_dir = absl::StrCat(out_dir, "/", name);
  for (const auto& [sub, arrays] : {std::pair{"inputs", &v.inputs},
                                    {"outputs", &v.outputs},
                                    {"reference", &v.reference}}) {
    if (arrays->empty()) continue;
    NKI_RETURN_IF_ERROR(
        WriteArrays(absl::StrCat(kernel_dir, "/", sub), *arrays));
  }
  return absl::OkStatus();
}

// Verifies one kernel; returns the exit code. With `skip_when_unverifiable`
// (--all), kernels without a reference or with required parameters are
// skipped (*skipped set).
int VerifyAndReport(
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
    if (!def.reference) {
      std::cout << name << ": SKIP (no reference)\n";
      *skipped = true;
      return kExitOk;
    }
  }
  KernelVerification v;
  const absl::Status status =
      VerifyKernel(registry, def, settings, options.seed, options.run, &v);
  // Not traced (bad parameters, a trace error, no reference): nothing to
  // report but the error.
  if (v.interp == nullptr && v.stage != VerifyStage::kCreate) {
    return ReportError(kVerb, status);
  }
  std::cout << VerifyHeader(v) << "\n";
  if (absl::Status written = options.writes
                                 ? WriteVerification(v, options.out_dir)
                                 : absl::OkStatus();
      !written.ok()) {
    return ReportError(kVerb, written);
  }
  if (!status.ok()) {
    switch (v.stage) {
      case VerifyStage::kRun:
        if (status.code() == interp::kDeviceErrorCode) {
          std::cout << name << ": FAIL (device error)\n";
          return ReportRunError(kVerb, status);
        }
        return ReportError(kVerb, status);
      case VerifyStage::kMakeInputs:
        return ReportError(
            kVerb, absl::StrCat("kernel '", name,
                                "': making inputs: ", status.message()));
      case VerifyStage::kReference:
        return ReportError(
            kVerb,
            absl::StrCat("kernel '", name, "': reference: ", status.message()));
      default:
        // Keeps the diagnostic (a resource error's kind) for --diagnostics.
        return ReportError(
            kVerb, WithContext(absl::StrCat("kernel '", name, "'"), status));
    }
  }
  bool pass = true;
  for (const OutputCheck& check : v.checks) {
    std::cout << FormatCheck(check, v.comparison) << "\n";
    pass &= check.ok();
  }
  std::cout << name << ": " << (pass ? "PASS" : "FAIL") << "\n";
  return pass ? kExitOk : kExitFailure;
}

int VerifyIn(const ParsedArgs& parsed_args, const Processes& processes);

// --sweep: the boundary cases of one kernel or of every kernel with a
// reference.
int SweepAndReport(const ParsedArgs& parsed, const VerifyOptions& options) {
  absl::StatusOr<SweepStrength> strength =
      ParseSweepStrength(parsed.Get("--sweep"));
  if (!strength.ok()) return ReportError(kVerb, strength.status());
  if (parsed.Has("--set") || parsed.Has("--out-dir")) {
    return ReportError(kVerb,
                       "--sweep chooses the parameters and writes no "
                       "--out-dir; it takes no --set or --out-dir");
  }
  const kernels::KernelRegistry& registry = kernels::KernelRegistry::Global();
  std::vector<const kernels::KernelDef*> defs;
  if (parsed.Has("--all")) {
    if (!parsed.positionals.empty()) {
      return ReportError(kVerb, "--all takes no kernel name");
    }
    for (const kernels::KernelDef& def : registry.kernels()) {
      if (def.reference) defs.push_back(&def);
    }
  } else {
    absl::StatusOr<std::string> name = OnePositional(
        parsed, kVerb, "kernel name", "nkigraph verify NAME --sweep HOW");
    if (!name.ok()) return ReportError(kVerb, name.status());
    const kernels::KernelDef* def = registry.Find(*name);
    if (def == nullptr) {
      return ReportError(kVerb, absl::StrCat("unknown kernel '", *name, "'"));
    }
    defs.push_back(def);
  }
  std::vector<SweepRow> rows;
  for (const kernels::KernelDef* def : defs) {
    SweepOptions sweep;
    sweep.strength = *strength;
    sweep.seed = options.seed;
    absl::StatusOr<SweepRow> row =
        SweepKernel(registry, *def, sweep, options.run);
    if (!row.ok()) return ReportError(kVerb, row.status());
    for (const auto& [outcomes, verdict] :
         {std::pair{&row->failed, "FAIL"}, {&row->refused, "REFUSED"}}) {
      for (const SweepOutcome& o : *outcomes) {
        std::cout << def->name << " (" << kernels::DescribeCase(o.settings)
                  << "): " << verdict << ": " << o.why << "\n";
      }
    }
    rows.push_back(*std::move(row));
    std::cout.flush();
  }
  std::cout << FormatSweepTable(rows);
  const bool failed = std::any_of(rows.begin(), rows.end(), [](const auto& r) {
    return !r.failed.empty();
  });
  return failed ? kExitFailure : kExitOk;
}

}  // namespace

int RunVerify(const std::vector<std::string>& args) {
  absl::StatusOr<ParsedArgs> parsed =
      ParseArgs(args, {{"--set", "-s", /*takes_value=*/true,
                        /*repeated=*/true},
                       {"--all", "", /*takes_value=*/false, false},
                       {"--seed", "", true, false},
                       {"--out-dir", "", true, false},
                       {"--sweep", "", true, false},
                       kMemoryLimitFlag,
                       kMaxStepsFlag,
                       kThreadsFlag,
                       kPeerTimeoutFlag,
                       kQuietFlag});
  if (!parsed.ok()) return ReportError(kVerb, parsed.status());
  if (parsed->help) {
    std::cout << kUsage;
    return kExitOk;
  }
  absl::StatusOr<double> timeout = PeerTimeout(*parsed);
  if (!timeout.ok()) return ReportError(kVerb, timeout.status());
  absl::StatusOr<std::unique_ptr<Processes>> joined = Processes::Join(*timeout);
  if (!joined.ok()) return ReportError(kVerb, joined.status());
  Processes& processes = **joined;
  // The first process prints the report; the others compute their ranks.
  if (!processes.first()) std::cout.setstate(std::ios::badbit);
  const int code = VerifyIn(*parsed, processes);
  if (!processes.several()) return code;
  // Every process ends with the first's verdict; a process that cannot
  // learn it (a peer stopped) ends them all.
  absl::StatusOr<int> worst = processes.WorstExitCode(code);
  if (!worst.ok()) {
    ReportError(kVerb, worst.status());
    processes.Abort(kExitError);
  }
  return *worst;
}

namespace {

int VerifyIn(const ParsedArgs& parsed_args, const Processes& processes) {
  const ParsedArgs* parsed = &parsed_args;
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
  options.run.transport = processes.transport();
  options.writes = processes.first();
  const kernels::KernelRegistry& registry = kernels::KernelRegistry::Global();

  if (parsed->Has("--sweep")) return SweepAndReport(*parsed, options);
  if (parsed->Has("--all")) {
    if (!parsed->positionals.empty() || parsed->Has("--set")) {
      return ReportError(kVerb,
                         "--all verifies every kernel at its defaults; it "
                         "takes no kernel name and no --set");
    }
    int passed = 0, failed = 0, skipped = 0, worst = kExitOk;
    for (const kernels::KernelDef& def : registry.kernels()) {
      bool skip = false;
      const int code = VerifyAndReport(def, def.example, options,
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
  return VerifyAndReport(*def, settings, options,
                         /*skip_when_unverifiable=*/false, &skipped);
}

}  // namespace

}  // namespace nkigraph::tools
