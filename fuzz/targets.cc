// The table of fuzz targets, and what both drivers do once per process.
#include "absl/types/span.h"
#include "fuzz/harness.h"
#include "google/protobuf/stubs/logging.h"

namespace nkigraph::fuzz {

const char* OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kUnreadable:
      return "unreadable";
    case Outcome::kInvalid:
      return "invalid";
    case Outcome::kTooBig:
      return "too big";
    case Outcome::kRefused:
      return "refused";
    case Outcome::kDeviceError:
      return "device error";
    case Outcome::kDone:
      return "done";
  }
  return "?";
}

absl::Span<const Target> Targets() {
  static constexpr Target kTargets[] = {
      {"graph", FuzzGraphFile}, {"text", FuzzTextGraphFile},
      {"npy", FuzzNpyFile},     {"bundle", FuzzBundleFile},
      {"diff", FuzzDiffInput},  {"viz", FuzzVizInput},
  };
  return kTargets;
}

const Target* FindTarget(absl::string_view name) {
  for (const Target& target : Targets()) {
    if (name == target.name) return &target;
  }
  return nullptr;
}

void InitializeHarness() {
  // A null handler drops protobuf's log lines (invalid UTF-8 in a string
  // field, ...); what the library says goes into its statuses.
  google::protobuf::SetLogHandler(nullptr);
}

}  // namespace nkigraph::fuzz
