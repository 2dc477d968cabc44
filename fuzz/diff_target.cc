// The diff target: two graphs as `nkigraph diff` reads and compares them.
#include <cstring>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "diff/diff.h"
#include "diff/format.h"
#include "fuzz/harness.h"
#include "fuzz/harness_support.h"
#include "nlohmann/json.hpp"
#include "util/graph_io.h"

namespace nkigraph::fuzz {
namespace {

// As `nkigraph diff` loads a binary graph: parse, then the schema check.
bool LoadGraph(absl::string_view bytes, proto::Graph* graph) {
  return graph->ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) &&
         CheckSchemaVersion(*graph).ok();
}

void RequireFormats(const diff::DiffResult& result, bool strict) {
  const diff::FormatOptions options{.strict = strict};
  const std::string summary = diff::SummaryLine(result);
  Require(absl::StartsWith(summary, "summary: "), "a bad summary line");
  const std::string text = diff::FormatText(result, options);
  Require(absl::StrContains(text, summary), "the text lacks its summary");
  const std::string json = diff::FormatJson(result, options);
  const nlohmann::json parsed =
      nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  Require(!parsed.is_discarded(),
          absl::StrCat("diff JSON does not parse: ", json.substr(0, 200)));
  Require(parsed.is_object() && parsed.contains("summary"),
          "diff JSON lacks its summary");
}

}  // namespace

Outcome FuzzDiffInput(absl::string_view bytes) {
  if (bytes.size() < 5) return Outcome::kUnreadable;
  const uint8_t options_byte = static_cast<uint8_t>(bytes[0]);
  uint32_t length_a;
  std::memcpy(&length_a, bytes.data() + 1, sizeof(length_a));
  bytes.remove_prefix(5);
  length_a = static_cast<uint32_t>(length_a % (bytes.size() + 1));
  proto::Graph a, b;
  if (!LoadGraph(bytes.substr(0, length_a), &a) ||
      !LoadGraph(bytes.substr(length_a), &b)) {
    return Outcome::kUnreadable;
  }
  const diff::DiffOptions options{.strict = (options_byte & 1) != 0,
                                  .max_changes = (options_byte >> 1) & 7};
  absl::StatusOr<diff::DiffResult> ab = diff::Diff(a, b, options);
  absl::StatusOr<diff::DiffResult> ba = diff::Diff(b, a, options);
  Require(ab.ok() == ba.ok(), "diff refuses A, B but not B, A");
  absl::StatusOr<diff::DiffResult> aa = diff::Diff(a, a, options);
  if (aa.ok()) Require(aa->same(), "a graph differs from itself");
  if (!ab.ok()) {
    Require(ab.status().code() == absl::StatusCode::kInvalidArgument,
            absl::StrCat("diff failed otherwise than on a malformed graph: ",
                         ab.status().ToString()));
    return Outcome::kInvalid;
  }
  Require(ab->same() == ba->same(), "A equals B but B differs from A");
  RequireFormats(*ab, options.strict);
  RequireFormats(*ba, options.strict);
  return Outcome::kDone;
}

}  // namespace nkigraph::fuzz
