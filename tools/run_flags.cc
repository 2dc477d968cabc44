#include "tools/run_flags.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "tools/run_support.h"
#include "util/progress_text.h"

namespace nkigraph::tools {

absl::Status ApplyRunFlags(const ParsedArgs& parsed,
                           interp::RunOptions* options) {
  if (parsed.Has(kMemoryLimitFlag.name)) {
    absl::StatusOr<uint64_t> limit =
        ParseCount(parsed.Get(kMemoryLimitFlag.name), kMemoryLimitFlag.name);
    if (!limit.ok()) return limit.status();
    options->memory_limit_bytes =
        static_cast<int64_t>(std::min<uint64_t>(*limit, INT64_MAX));
  }
  if (parsed.Has(kMaxStepsFlag.name)) {
    absl::StatusOr<uint64_t> steps =
        ParseCount(parsed.Get(kMaxStepsFlag.name), kMaxStepsFlag.name);
    if (!steps.ok()) return steps.status();
    options->max_steps =
        static_cast<int64_t>(std::min<uint64_t>(*steps, INT64_MAX));
  }
  if (parsed.Has(kThreadsFlag.name)) {
    absl::StatusOr<uint64_t> threads =
        ParseCount(parsed.Get(kThreadsFlag.name), kThreadsFlag.name);
    if (!threads.ok()) return threads.status();
    if (*threads < 1 || *threads > 1024) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--threads is ", *threads, "; it must be between 1 and 1024"));
    }
    options->threads = static_cast<int>(*threads);
  }
  if (parsed.Has(kQuietFlag.name) || !isatty(STDERR_FILENO)) {
    return absl::OkStatus();
  }
  options->on_progress = [](const interp::RunOptions::Progress& p) {
    // "\r" returns to the line's start, "\x1b[K" clears the rest of it.
    const std::string line =
        p.finished
            ? "\r\x1b[K"
            : absl::StrCat("\r",
                           FormatProgress(p.done, p.total, p.elapsed_seconds),
                           "\x1b[K");
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
  };
  return absl::OkStatus();
}

}  // namespace nkigraph::tools
