#include "tools/run_support.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <system_error>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/commands.h"
#include "util/diagnostic_json.h"
#include "util/dtype.h"
#include "util/host_array.h"
#include "util/npy.h"
#include "util/status_macros.h"
#include "util/tensor_roles.h"

namespace nkigraph::tools {

int ReportRunError(absl::string_view verb, const absl::Status& status) {
  if (status.code() == interp::kDeviceErrorCode) {
    if (CurrentDiagnosticsFormat() == DiagnosticsFormat::kJson) {
      std::cerr << DiagnosticJsonLines(
                       DiagnosticOr(status, DiagnosticKind::kDevice), verb)
                << std::flush;
      return kExitFailure;
    }
    std::cerr << "nkigraph " << verb << ": device error: " << status.message()
              << std::endl;
    return kExitFailure;
  }
  return ReportError(verb, status);
}

namespace {

void SayBundle(absl::string_view verb, const std::string& path) {
  if (CurrentDiagnosticsFormat() == DiagnosticsFormat::kText) {
    std::cerr << "nkigraph " << verb << ": '" << path
              << "' is a replay bundle; using its graph\n";
  }
}

}  // namespace

absl::StatusOr<GraphSource> ReadGraphArg(absl::string_view verb,
                                         const std::string& path,
                                         bool check_schema) {
  absl::StatusOr<GraphSource> source = ReadGraphSource(path, check_schema);
  if (source.ok() && source->from_bundle) SayBundle(verb, path);
  return source;
}

absl::StatusOr<ArenaGraphSource> LoadGraphArg(absl::string_view verb,
                                              const std::string& path) {
  absl::StatusOr<ArenaGraphSource> source = LoadGraphSource(path);
  if (source.ok() && source->from_bundle) SayBundle(verb, path);
  return source;
}

absl::StatusOr<uint64_t> ParseCount(absl::string_view text,
                                    absl::string_view what) {
  uint64_t value = 0;
  if (text.empty() || text[0] == '-' || text[0] == '+' ||
      !absl::SimpleAtoi(text, &value)) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " expects a non-negative integer, not '", text, "'"));
  }
  return value;
}

// --- Host memory -------------------------------------------------------

namespace {

int64_t HostBytes(const proto::Graph& graph, bool raw_bits16,
                  bool (*wanted)(const proto::Tensor&)) {
  const int64_t ranks = std::max<int64_t>(1, graph.world().num_ranks());
  int64_t total = 0;
  for (const proto::Tensor& t : graph.tensors()) {
    if (!wanted(t)) continue;
    int64_t elements = t.per_rank() ? ranks : 1;
    for (int64_t d : t.shape()) {
      if (d <= 0) {
        elements = 0;
        break;
      }
      elements = elements > INT64_MAX / d ? INT64_MAX : elements * d;
    }
    const int64_t bytes =
        HostArrayBytes(elements, raw_bits16 && DTypeSize(t.dtype()) == 2);
    total = bytes > INT64_MAX - total ? INT64_MAX : total + bytes;
  }
  return total;
}

}  // namespace

int64_t HostInputBytes(const proto::Graph& graph, bool raw_bits16) {
  return HostBytes(graph, raw_bits16, IsHostInput);
}

int64_t HostOutputBytes(const proto::Graph& graph, bool raw_bits16) {
  return HostBytes(graph, raw_bits16, IsHostOutput);
}

int64_t HostOutputWriteBytes(const proto::Graph& graph, bool raw_bits16) {
  int64_t most = 0;
  for (const proto::Tensor& t : graph.tensors()) {
    if (!IsHostOutput(t)) continue;
    // One rank's rows of a per-rank output, or the whole of another.
    const int64_t bytes = HostArrayBytes(
        ShapeElementCount(t.shape()), raw_bits16 && DTypeSize(t.dtype()) == 2);
    most = std::max(most, bytes);
  }
  return most;
}

int64_t FileBytes(const std::string& path) {
  std::error_code error;
  const uintmax_t size = std::filesystem::file_size(path, error);
  return error ? 0 : static_cast<int64_t>(std::min<uintmax_t>(size, INT64_MAX));
}

absl::Status CheckMemoryPlan(
    const MemoryBudget& budget,
    const std::vector<std::pair<std::string, int64_t>>& parts) {
  int64_t total = 0;
  std::vector<std::string> listed;
  for (const auto& [what, bytes] : parts) {
    total = bytes > INT64_MAX - total ? INT64_MAX : total + bytes;
    if (bytes > 0) listed.push_back(absl::StrCat(what, " ", bytes));
  }
  if (total <= budget.available()) return absl::OkStatus();
  return DiagnosticError(
      absl::StatusCode::kResourceExhausted,
      MakeDiagnostic(
          DiagnosticKind::kResource,
          absl::StrCat("the run needs ", total, " bytes (",
                       absl::StrJoin(listed, ", "), ")",
                       budget.used() > 0
                           ? absl::StrCat(" besides the ", budget.used(),
                                          " already held")
                           : "",
                       "; that is over the limit of ", budget.limit(),
                       " (raise --memory-limit)")));
}

absl::StatusOr<HostArray> ReadNpyCharged(const std::string& path,
                                         MemoryBudget& budget,
                                         std::vector<ScopedCharge>& held) {
  const int64_t bytes = FileBytes(path);
  ScopedCharge array(&budget, bytes,
                     absl::StrCat("host memory for the input '", path, "'"));
  NKI_RETURN_IF_ERROR(array.status());
  const ScopedCharge file(&budget, bytes,
                          absl::StrCat("host memory reading '", path, "'"));
  NKI_RETURN_IF_ERROR(file.status());
  NKI_ASSIGN_OR_RETURN(HostArray read, ReadNpy(path));
  held.push_back(std::move(array));
  return read;
}

// --- Arrays ------------------------------------------------------------

absl::Status ChargeHostArray(const interp::Interpreter& interp,
                             const proto::Tensor& tensor, bool raw_bits16,
                             absl::string_view what,
                             std::vector<ScopedCharge>* held) {
  if (held == nullptr) return absl::OkStatus();
  // A process holding some of the ranks reads their rows alone.
  std::vector<int64_t> shape = interp.HostShape(tensor);
  if (tensor.per_rank() && interp.graph().world().num_ranks() > 1) {
    shape[0] = interp.HeldRanks().size();
  }
  int64_t elements = 1;
  for (int64_t d : shape) {
    elements = d <= 0 ? 0 : elements > INT64_MAX / d ? INT64_MAX : elements * d;
  }
  ScopedCharge charge(
      &interp.budget(),
      HostArrayBytes(elements, raw_bits16 && DTypeSize(tensor.dtype()) == 2),
      absl::StrCat("host memory for ", what, " '", tensor.name(), "'"));
  NKI_RETURN_IF_ERROR(charge.status());
  held->push_back(std::move(charge));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<HostArray>> ReadInputs(
    const interp::Interpreter& interp, interp::Interpreter::HostForm form,
    std::vector<ScopedCharge>* held) {
  std::vector<HostArray> inputs;
  for (const std::string& name : interp.InputNames()) {
    const proto::Tensor* tensor = interp.FindInput(name);
    if (tensor == nullptr) {
      return absl::InternalError(absl::StrCat("input '", name, "' vanished"));
    }
    NKI_RETURN_IF_ERROR(ChargeHostArray(
        interp, *tensor, form == interp::Interpreter::HostForm::kRawBits16,
        "a copy of input", held));
    // 16-bit inputs as their bits by default: a replay then loads exactly
    // the bytes this run had (a bf16 NaN payload included).
    NKI_ASSIGN_OR_RETURN(HostArray input, interp.ReadHostTensor(*tensor, form));
    inputs.push_back(std::move(input));
  }
  return inputs;
}

absl::StatusOr<std::vector<HostArray>> ReadOutputs(
    const interp::Interpreter& interp, interp::Interpreter::HostForm form,
    std::vector<ScopedCharge>* held) {
  std::vector<HostArray> outputs;
  for (const std::string& name : interp.OutputNames()) {
    if (const proto::Tensor* tensor = interp.FindOutput(name)) {
      NKI_RETURN_IF_ERROR(ChargeHostArray(
          interp, *tensor, form == interp::Interpreter::HostForm::kRawBits16,
          "output", held));
    }
    NKI_ASSIGN_OR_RETURN(HostArray output, interp.GetOutput(name, form));
    outputs.push_back(std::move(output));
  }
  return outputs;
}

absl::Status AddToBundle(const std::vector<HostArray>& arrays, bool outputs,
                         proto::Bundle& bundle, MemoryBudget& budget,
                         std::vector<ScopedCharge>& held) {
  for (const HostArray& array : arrays) {
    ScopedCharge charge(
        &budget,
        HostArrayBytes(static_cast<int64_t>(array.values()),
                       array.dtype == proto::UINT16),
        absl::StrCat("the bundle's copy of ", outputs ? "output" : "input",
                     " '", array.name, "'"));
    NKI_RETURN_IF_ERROR(charge.status());
    held.push_back(std::move(charge));
    *(outputs ? bundle.add_outputs() : bundle.add_inputs()) =
        ToNamedArray(array);
  }
  return absl::OkStatus();
}

std::string IndexString(const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> index(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] <= 0) break;
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return ShapeString(index);
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

absl::Status MakeDirectories(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create directory '", dir, "': ", error.message()));
  }
  return absl::OkStatus();
}

absl::Status WriteArrays(const std::string& dir,
                         const std::vector<HostArray>& arrays) {
  NKI_RETURN_IF_ERROR(MakeDirectories(dir));
  for (const HostArray& array : arrays) {
    NKI_RETURN_IF_ERROR(WriteNpy(
        absl::StrCat(dir, "/", SafeFileName(array.name), ".npy"), array));
  }
  return absl::OkStatus();
}

// --- TensorDumper ------------------------------------------------------

absl::StatusOr<std::unique_ptr<TensorDumper>> TensorDumper::Create(
    const std::string& dir, const std::string& filter) {
  std::regex regex;
  try {
    regex = std::regex(filter, std::regex::ECMAScript);
  } catch (const std::regex_error& error) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--dump-filter '", filter, "' is not a valid regex: ", error.what()));
  }
  NKI_RETURN_IF_ERROR(MakeDirectories(dir));
  return std::unique_ptr<TensorDumper>(new TensorDumper(dir, std::move(regex)));
}

void TensorDumper::Attach(interp::RunOptions& options) {
  options.on_write = [this](const interp::RunOptions::WriteEvent& event) {
    OnWrite(event);
  };
  // The interpreter numbers the events the filter passes: across processes
  // it counts the writes of the programs other processes hold.
  options.write_filter = [this](const proto::Tensor& tensor) {
    return Matches(tensor);
  };
}

bool TensorDumper::Matches(const proto::Tensor& tensor) {
  const size_t index = tensor.id() - 1;
  if (index >= matches_.size()) matches_.resize(index + 1, 0);
  if (matches_[index] == 0) {
    matches_[index] = std::regex_search(tensor.name(), filter_) ? 1 : 2;
  }
  return matches_[index] == 1;
}

std::string TensorDumper::Suffix(int rank, int core, bool with_core) const {
  std::string suffix;
  if (interp_->graph().world().num_ranks() > 1) {
    absl::StrAppend(&suffix, "_r", rank);
  }
  if (with_core && interp_->graph().world().num_cores() > 1) {
    absl::StrAppend(&suffix, "_c", core);
  }
  return suffix;
}

void TensorDumper::OnWrite(const interp::RunOptions::WriteEvent& event) {
  if (!status_.ok() || interp_ == nullptr) return;
  absl::StatusOr<HostArray> array =
      interp_->ReadTensor(event.tensor->id(), event.rank, event.core);
  if (!array.ok()) {
    status_ = array.status();
    return;
  }
  const std::string path =
      absl::StrCat(dir_, "/", absl::StrFormat("%06d", event.sequence), "_",
                   SafeFileName(event.tensor->name()), "_i", event.instr->id(),
                   Suffix(event.rank, event.core, /*with_core=*/true), ".npy");
  status_ = WriteNpy(path, *array);
  if (status_.ok()) ++files_written_;
}

absl::Status TensorDumper::DumpFinalState() {
  if (interp_ == nullptr) return absl::OkStatus();
  const proto::Graph& graph = interp_->graph();
  // The ranks this process holds (every rank in a single process).
  const interp::RankBlock held = interp_->HeldRanks();
  for (const proto::Tensor& tensor : graph.tensors()) {
    if (!Matches(tensor)) continue;
    // Shared HBM is one tensor for all cores of a rank; everything else
    // belongs to one core's program.
    const bool shared = tensor.space() == proto::SHARED_HBM;
    const int core = shared ? 0 : static_cast<int>(tensor.core());
    for (int rank = held.first; rank < held.end; ++rank) {
      NKI_ASSIGN_OR_RETURN(HostArray array,
                           interp_->ReadTensor(tensor.id(), rank, core));
      const std::string path = absl::StrCat(
          dir_, "/final_", SafeFileName(tensor.name()), "_t", tensor.id(),
          Suffix(rank, core, /*with_core=*/!shared), ".npy");
      NKI_RETURN_IF_ERROR(WriteNpy(path, array));
      ++files_written_;
    }
  }
  return absl::OkStatus();
}

}  // namespace nkigraph::tools
