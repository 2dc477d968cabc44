#include "tools/run_support.h"

#include <filesystem>
#include <iostream>
#include <system_error>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/commands.h"
#include "util/npy.h"
#include "util/status_macros.h"

namespace nkigraph::tools {

int ReportRunError(absl::string_view verb, const absl::Status& status) {
  if (status.code() == interp::kDeviceErrorCode) {
    std::cerr << "nkigraph " << verb << ": device error: " << status.message()
              << std::endl;
    return kExitFailure;
  }
  return ReportError(verb, status);
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

// --- Arrays ------------------------------------------------------------

absl::StatusOr<std::vector<HostArray>> ReadInputs(
    const interp::Interpreter& interp, interp::Interpreter::HostForm form) {
  const proto::Graph& graph = interp.graph();
  const int num_ranks = static_cast<int>(graph.world().num_ranks());
  std::vector<HostArray> inputs;
  for (const std::string& name : interp.InputNames()) {
    const proto::Tensor* tensor = interp.FindInput(name);
    if (tensor == nullptr) {
      return absl::InternalError(absl::StrCat("input '", name, "' vanished"));
    }
    const int core = tensor->space() == proto::SHARED_HBM
                         ? 0
                         : static_cast<int>(tensor->core());
    const bool stacked = tensor->per_rank() && num_ranks > 1;
    HostArray input;
    for (int r = 0; r < (stacked ? num_ranks : 1); ++r) {
      // 16-bit inputs as their bits by default: a replay then loads exactly
      // the bytes this run had (a bf16 NaN payload included).
      NKI_ASSIGN_OR_RETURN(HostArray part,
                           interp.ReadTensor(tensor->id(), r, core, form));
      if (r == 0) {
        input = std::move(part);
      } else {
        input.Append(part);
      }
    }
    input.name = name;
    input.shape = interp.HostShape(*tensor);
    inputs.push_back(std::move(input));
  }
  return inputs;
}

absl::StatusOr<std::vector<HostArray>> ReadOutputs(
    const interp::Interpreter& interp, interp::Interpreter::HostForm form) {
  std::vector<HostArray> outputs;
  for (const std::string& name : interp.OutputNames()) {
    NKI_ASSIGN_OR_RETURN(HostArray output, interp.GetOutput(name, form));
    outputs.push_back(std::move(output));
  }
  return outputs;
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

std::string SafeFileName(absl::string_view name) {
  std::string safe;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    safe.push_back(ok ? c : '_');
  }
  return safe.empty() ? std::string("_") : safe;
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
  if (!status_.ok() || interp_ == nullptr || !Matches(*event.tensor)) return;
  absl::StatusOr<HostArray> array =
      interp_->ReadTensor(event.tensor->id(), event.rank, event.core);
  if (!array.ok()) {
    status_ = array.status();
    return;
  }
  const std::string path =
      absl::StrCat(dir_, "/", absl::StrFormat("%06d", sequence_++), "_",
                   SafeFileName(event.tensor->name()), "_i", event.instr->id(),
                   Suffix(event.rank, event.core, /*with_core=*/true), ".npy");
  status_ = WriteNpy(path, *array);
  if (status_.ok()) ++files_written_;
}

absl::Status TensorDumper::DumpFinalState() {
  if (interp_ == nullptr) return absl::OkStatus();
  const proto::Graph& graph = interp_->graph();
  const int num_ranks = static_cast<int>(graph.world().num_ranks());
  for (const proto::Tensor& tensor : graph.tensors()) {
    if (!Matches(tensor)) continue;
    // Shared HBM is one tensor for all cores of a rank; everything else
    // belongs to one core's program.
    const bool shared = tensor.space() == proto::SHARED_HBM;
    const int core = shared ? 0 : static_cast<int>(tensor.core());
    for (int rank = 0; rank < num_ranks; ++rank) {
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
