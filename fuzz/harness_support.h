#ifndef NKIGRAPH_FUZZ_HARNESS_SUPPORT_H_
#define NKIGRAPH_FUZZ_HARNESS_SUPPORT_H_

// What the fuzz targets share: the bounds a fuzzed run keeps to, the
// invariant check, reading bytes through the library's file readers, and
// the check-then-run pipeline every graph goes through.

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "fuzz/harness.h"
#include "google/protobuf/message.h"
#include "interp/interpreter.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::fuzz {

// The interpreter's --memory-limit for fuzzed runs: device memory, shadow
// state, race state and per-instruction operand buffers together. Small,
// so that no single instruction moves more than about a million elements
// (the small goldens fit; bigger graphs are refused, quickly).
inline constexpr int64_t kMemoryLimitBytes = int64_t{2} << 20;
// The interpreter's --max-steps for fuzzed runs: a run stops at its
// 4,097th instruction (summed over ranks and cores) with a step-limit
// error, so a long graph is run as far as that rather than refused.
inline constexpr int64_t kMaxSteps = 4096;
// The pictures' analysis is near linear; bigger graphs only slow the
// fuzzer down.
inline constexpr int64_t kMaxVizInstructions = 20000;

// The interpreter's options for a fuzzed run: the limits above, on one
// thread (the fuzzer runs one input at a time; a pool per run is waste).
interp::RunOptions FuzzRunOptions();

// Aborts, printing `what`, when `condition` is false: a finding.
void Require(bool condition, absl::string_view what);
// Every error the library returns for untrusted input carries a
// structured diagnostic (util/diagnostic.h) and a message.
void RequireDiagnosed(const absl::Status& status, absl::string_view where);

// Writes `bytes` to a scratch file ending in `extension` (".pb",
// ".pbtxt") and reads it back with ReadMessage: the path the CLI takes.
absl::Status ReadMessageBytes(absl::string_view bytes,
                              absl::string_view extension,
                              google::protobuf::Message* message);
// The same with ReadGraph (schema version checked).
absl::StatusOr<proto::Graph> ReadGraphBytes(absl::string_view bytes,
                                            absl::string_view extension);

// FNV-1a of the bytes: the seed of a run's random inputs, so that a
// replayed file repeats its run exactly.
uint64_t Fingerprint(absl::string_view bytes);

// Instructions over all streams.
int64_t InstructionCount(const proto::Graph& graph);

// `nkigraph check` (ValidateGraph and CheckGraph must agree, every problem
// renders) then, within the bounds above, a run on random inputs seeded
// by `seed` and every output read back in both forms.
Outcome CheckAndRun(const proto::Graph& graph, uint64_t seed);

}  // namespace nkigraph::fuzz

#endif  // NKIGRAPH_FUZZ_HARNESS_SUPPORT_H_
