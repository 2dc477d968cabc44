// The bundle target: a replay bundle as `nkigraph replay` reads it.
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fuzz/harness.h"
#include "fuzz/harness_support.h"
#include "graph/validate.h"
#include "interp/interpreter.h"
#include "util/graph_io.h"
#include "util/named_array.h"

namespace nkigraph::fuzz {
namespace {

// FromNamedArray, with what it must keep: its count matches its shape,
// and the array converts back to the same bytes.
absl::StatusOr<HostArray> ReadArray(const proto::NamedArray& named) {
  absl::StatusOr<HostArray> array = FromNamedArray(named);
  if (!array.ok()) return array;
  Require(static_cast<int64_t>(array->values()) == array->num_elements(),
          "FromNamedArray's values do not match its shape");
  const proto::NamedArray back = ToNamedArray(*array);
  Require(back.data() == named.data() && back.dtype() == named.dtype(),
          "a bundle array changed on the way back");
  return array;
}

}  // namespace

Outcome FuzzBundleFile(absl::string_view bytes) {
  proto::Bundle bundle;
  if (absl::Status read = ReadMessageBytes(bytes, ".pb", &bundle); !read.ok()) {
    RequireDiagnosed(read, "ReadMessage");
    return Outcome::kUnreadable;
  }
  if (!CheckSchemaVersion(bundle.graph()).ok()) return Outcome::kUnreadable;
  std::vector<HostArray> inputs, recorded;
  for (const proto::NamedArray& named : bundle.inputs()) {
    absl::StatusOr<HostArray> input = ReadArray(named);
    if (!input.ok()) return Outcome::kInvalid;
    inputs.push_back(*std::move(input));
  }
  for (const proto::NamedArray& named : bundle.outputs()) {
    absl::StatusOr<HostArray> output = ReadArray(named);
    if (!output.ok()) return Outcome::kInvalid;
    recorded.push_back(*std::move(output));
  }
  const proto::Graph& graph = bundle.graph();
  if (!graph::CheckGraph(graph).ok()) return Outcome::kInvalid;
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> created =
      interp::Interpreter::Create(graph, FuzzRunOptions());
  if (!created.ok()) return Outcome::kRefused;
  interp::Interpreter& interp = **created;
  for (const HostArray& input : inputs) {
    if (absl::Status set = interp.SetInput(input); !set.ok()) {
      RequireDiagnosed(set, "SetInput");
      return Outcome::kRefused;
    }
  }
  if (!interp.MissingInputs().empty()) return Outcome::kRefused;
  if (absl::Status ran = interp.Run(); !ran.ok()) {
    RequireDiagnosed(ran, "Run");
    return Outcome::kDeviceError;
  }
  for (const HostArray& output : recorded) {
    if (interp.FindOutput(output.name) == nullptr) return Outcome::kInvalid;
    absl::StatusOr<HostArray> replayed = interp.GetOutput(
        output.name, output.dtype == proto::UINT16
                         ? interp::Interpreter::HostForm::kRawBits16
                         : interp::Interpreter::HostForm::kValues);
    Require(replayed.ok(),
            absl::StrCat("output '", output.name, "' unreadable after a run"));
  }
  return Outcome::kDone;
}

}  // namespace nkigraph::fuzz
