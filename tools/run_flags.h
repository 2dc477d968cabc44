#ifndef NKIGRAPH_TOOLS_RUN_FLAGS_H_
#define NKIGRAPH_TOOLS_RUN_FLAGS_H_

// How the verbs that execute graphs (run, verify, replay) run them:
// --memory-limit BYTES, --max-steps N, --threads N and
// --quiet, and the progress line on stderr.

#include "absl/status/status.h"
#include "interp/interpreter.h"
#include "tools/commands.h"

namespace nkigraph::tools {

inline const FlagSpec kMemoryLimitFlag{"--memory-limit", "",
                                       /*takes_value=*/true,
                                       /*repeated=*/false};
inline const FlagSpec kMaxStepsFlag{"--max-steps", "", /*takes_value=*/true,
                                    /*repeated=*/false};
inline const FlagSpec kThreadsFlag{"--threads", "", /*takes_value=*/true,
                                   /*repeated=*/false};
inline const FlagSpec kQuietFlag{"--quiet", "-q", /*takes_value=*/false,
                                 /*repeated=*/false};

// Sets, from those of the flags the verb was given, options'
// memory_limit_bytes (--memory-limit), max_steps (--max-steps) and threads
// (--threads) and, unless --quiet or stderr is not a terminal, a progress
// line on stderr that the end of each run clears.
absl::Status ApplyRunFlags(const ParsedArgs& parsed,
                           interp::RunOptions* options);

}  // namespace nkigraph::tools

#endif  // NKIGRAPH_TOOLS_RUN_FLAGS_H_
