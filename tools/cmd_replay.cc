// nkigraph replay BUNDLE: re-executes a replay bundle and compares its
// outputs bit for bit with the recorded ones.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "interp/device_memory.h"
#include "interp/interpreter.h"
#include "tools/commands.h"
#include "tools/run_flags.h"
#include "tools/run_support.h"
#include "util/dtype.h"
#include "util/graph_io.h"
#include "util/graph_source.h"
#include "util/memory_budget.h"

namespace nkigraph::tools {
namespace {

constexpr char kUsage[] =
    R"(usage: nkigraph replay BUNDLE [--memory-limit BYTES] [--max-steps N]
                             [--threads N] [--quiet] [--diagnostics json]

Re-executes a replay bundle written by `nkigraph run --save-bundle`: runs
its graph with its inputs and compares every output bit for bit with the
outputs it recorded (a NaN equals a NaN with the same bits).

options:
  --memory-limit BYTES   the most the replay may hold (default 8 GiB):
                         the bundle, device memory with its shadow state,
                         race-detection state, the recorded and replayed
                         outputs
  --max-steps N          stop after N instructions (default: no limit)
  --threads N            run the programs (ranks x cores) on N threads
                         (default: one per core of the machine); the
                         results are the same for every N
  -q, --quiet            no progress line on stderr (there is one only
                         when stderr is a terminal)
%s  -h, --help             show this help

Exit status: 0 identical, 1 an output differs or the run stopped with a
device error, 2 bad usage or an unreadable bundle.
)";

constexpr char kVerb[] = "replay";

std::string Value(const HostArray& array, int64_t i) {
  if (array.dtype == proto::INT32) return absl::StrCat(array.i32[i]);
  if (array.dtype == proto::UINT16) {
    return absl::StrFormat("0x%04x (raw bits)", array.u16[i]);
  }
  uint32_t bits;
  std::memcpy(&bits, &array.f32[i], sizeof(bits));
  return absl::StrFormat("%.9g (0x%08x)", array.f32[i], bits);
}

// The first difference between the recorded and the replayed output, or
// nothing when they are identical bit for bit.
std::optional<std::string> FirstDifference(const HostArray& recorded,
                                           const HostArray& replayed) {
  if (recorded.dtype != replayed.dtype) {
    return absl::StrCat("output '", recorded.name, "' is ",
                        DTypeName(recorded.dtype), " in the bundle but ",
                        DTypeName(replayed.dtype), " in the replay");
  }
  if (recorded.shape != replayed.shape) {
    return absl::StrCat("output '", recorded.name, "' has shape ",
                        ShapeString(recorded.shape), " in the bundle but ",
                        ShapeString(replayed.shape), " in the replay");
  }
  const int64_t n = recorded.num_elements();
  const size_t esize = recorded.value_bytes();
  const size_t bytes = static_cast<size_t>(n) * esize;
  const void* a = recorded.data();
  const void* b = replayed.data();
  if (bytes == 0 || std::memcmp(a, b, bytes) == 0) return std::nullopt;
  const auto* a_bytes = static_cast<const uint8_t*>(a);
  const auto* b_bytes = static_cast<const uint8_t*>(b);
  int64_t i = 0;
  while (std::memcmp(a_bytes + esize * i, b_bytes + esize * i, esize) == 0) {
    ++i;
  }
  return absl::StrCat("output '", recorded.name, "' differs at flat index ", i,
                      " ", IndexString(recorded.shape, i), ": bundle ",
                      Value(recorded, i), ", replay ", Value(replayed, i));
}

}  // namespace

int RunReplay(const std::vector<std::string>& args) {
  int exit_code = kExitOk;
  std::optional<ParsedArgs> parsed = StartVerb(
      args, kVerb, {kMemoryLimitFlag, kMaxStepsFlag, kThreadsFlag, kQuietFlag},
      kUsage, &exit_code);
  if (!parsed) return exit_code;
  absl::StatusOr<std::string> path_or =
      OnePositional(*parsed, kVerb, "bundle", "nkigraph replay BUNDLE");
  if (!path_or.ok()) return ReportError(kVerb, path_or.status());
  const std::string& path = *path_or;
  interp::RunOptions options;
  if (absl::Status status = ApplyRunFlags(*parsed, &options); !status.ok()) {
    return ReportError(kVerb, status);
  }
  MemoryBudget budget(options.memory_limit_bytes);
  options.budget = &budget;
  std::vector<ScopedCharge> held;

  // The bundle as read (its file's size, twice while it is parsed).
  ScopedCharge bundle_charge(&budget, FileBytes(path),
                             absl::StrCat("host memory for '", path, "'"));
  if (!bundle_charge.status().ok()) {
    return ReportError(kVerb, bundle_charge.status());
  }
  proto::Bundle bundle;
  {
    const ScopedCharge parsing(
        &budget, FileBytes(path),
        absl::StrCat("host memory reading '", path, "'"));
    if (!parsing.status().ok()) return ReportError(kVerb, parsing.status());
    if (absl::Status status = ReadMessage(path, &bundle); !status.ok()) {
      if (IsGraphFile(path)) {
        return ReportError(kVerb, absl::StrCat("'", path,
                                               "' is a graph, not a replay "
                                               "bundle (run it with nkigraph "
                                               "run)"));
      }
      return ReportError(kVerb, status);
    }
  }
  if (!bundle.has_graph() && IsGraphFile(path)) {
    return ReportError(kVerb, absl::StrCat("'", path,
                                           "' is a graph, not a replay bundle "
                                           "(run it with nkigraph run)"));
  }
  if (absl::Status status = CheckSchemaVersion(bundle.graph()); !status.ok()) {
    return ReportError(kVerb, absl::StrCat("'", path, "': ", status.message()));
  }
  {
    // Before anything large is allocated: does the whole replay fit?
    int64_t recorded_bytes = 0;
    for (const proto::NamedArray& named : bundle.outputs()) {
      recorded_bytes += static_cast<int64_t>(named.data().size());
    }
    absl::StatusOr<int64_t> device =
        interp::DeviceMemory::BytesNeeded(bundle.graph());
    if (device.ok()) {
      if (absl::Status fits = CheckMemoryPlan(
              budget, {{"device memory and its shadow state", *device},
                       {"recorded outputs", recorded_bytes},
                       {"replayed outputs", recorded_bytes}});
          !fits.ok()) {
        return ReportError(kVerb,
                           WithContext(absl::StrCat("'", path, "'"), fits));
      }
    }
  }
  std::vector<HostArray> recorded;
  for (const proto::NamedArray& named : bundle.outputs()) {
    ScopedCharge charge(
        &budget, static_cast<int64_t>(named.data().size()),
        absl::StrCat("host memory for recorded output '", named.name(), "'"));
    if (!charge.status().ok()) return ReportError(kVerb, charge.status());
    held.push_back(std::move(charge));
    absl::StatusOr<HostArray> output = FromNamedArray(named);
    if (!output.ok()) {
      return ReportError(kVerb, absl::StrCat("'", path, "': output ",
                                             output.status().message()));
    }
    recorded.push_back(*std::move(output));
  }
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> created =
      interp::Interpreter::Create(std::move(*bundle.mutable_graph()), options);
  if (!created.ok()) {
    return ReportError(
        kVerb, WithContext(absl::StrCat("'", path, "'"), created.status()));
  }
  interp::Interpreter& interp = **created;
  for (const proto::NamedArray& named : bundle.inputs()) {
    const ScopedCharge charge(
        &budget, static_cast<int64_t>(named.data().size()),
        absl::StrCat("host memory for input '", named.name(), "'"));
    if (!charge.status().ok()) return ReportError(kVerb, charge.status());
    absl::StatusOr<HostArray> input = FromNamedArray(named);
    if (!input.ok()) {
      return ReportError(kVerb, absl::StrCat("'", path, "': input ",
                                             input.status().message()));
    }
    if (absl::Status status = interp.SetInput(*input); !status.ok()) {
      return ReportError(kVerb,
                         absl::StrCat("'", path, "': ", status.message()));
    }
  }
  if (std::vector<std::string> missing = interp.MissingInputs();
      !missing.empty()) {
    return ReportError(kVerb,
                       absl::StrCat("'", path, "' lacks input",
                                    missing.size() > 1 ? "s '" : " '",
                                    absl::StrJoin(missing, "', '"), "'"));
  }
  for (const HostArray& output : recorded) {
    if (interp.FindOutput(output.name) == nullptr) {
      return ReportError(
          kVerb, absl::StrCat("'", path, "' records output '", output.name,
                              "', which its graph lacks"));
    }
  }

  if (absl::Status status = interp.Run(); !status.ok()) {
    return ReportRunError(kVerb, status);
  }
  if (recorded.empty() && !interp.OutputNames().empty()) {
    std::cout << "replay " << path
              << ": the bundle records no outputs (its run stopped with a "
                 "device error), but this run finished\n";
    return kExitFailure;
  }
  for (const std::string& name : interp.OutputNames()) {
    auto it = std::find_if(
        recorded.begin(), recorded.end(),
        [&](const HostArray& output) { return output.name == name; });
    if (it == recorded.end()) {
      std::cout << "replay " << path << ": output '" << name
                << "' is not recorded in the bundle\n";
      return kExitFailure;
    }
    // In the form the bundle recorded (raw bits for `run --raw-bits`).
    const ScopedCharge charge(
        &budget, HostArrayBytes(it->num_elements(), it->dtype == proto::UINT16),
        absl::StrCat("host memory for replayed output '", name, "'"));
    if (!charge.status().ok()) return ReportError(kVerb, charge.status());
    absl::StatusOr<HostArray> replayed =
        interp.GetOutput(name, it->dtype == proto::UINT16
                                   ? interp::Interpreter::HostForm::kRawBits16
                                   : interp::Interpreter::HostForm::kValues);
    if (!replayed.ok()) return ReportError(kVerb, replayed.status());
    if (std::optional<std::string> difference =
            FirstDifference(*it, *replayed)) {
      std::cout << "replay " << path << ": " << *difference << "\n";
      return kExitFailure;
    }
  }
  std::cout << "replay " << path << ": " << recorded.size()
            << " output(s) identical bit for bit ("
            << interp.instructions_executed() << " instructions)\n";
  return kExitOk;
}

}  // namespace nkigraph::tools
