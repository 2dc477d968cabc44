#ifndef NKIGRAPH_FUZZ_HARNESS_H_
#define NKIGRAPH_FUZZ_HARNESS_H_

// The fuzz targets: each takes arbitrary bytes and drives one of the
// readers nkigraph points at files from strangers, the way the CLI does.
// A crash, a hang, a leak, a sanitizer report or a broken invariant
// (Require, which aborts) is a finding; every error the library returns
// is a correct answer.
//
// The same functions run under libFuzzer (fuzz/libfuzzer_entry.cc, built
// with clang by scripts/fuzz.sh) and replay the regression files under
// tests/fuzz_regressions/<target>/ in the ordinary test suite
// (fuzz/replay_test.cc), so a finding stays fixed without clang.

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace nkigraph::fuzz {

// What a target did with its input: how far the input got. Tests assert
// it; libFuzzer ignores it.
enum class Outcome {
  kUnreadable,   // refused by the reader (not a graph, bundle or .npy)
  kInvalid,      // read, then refused by validation or the operation
  kTooBig,       // valid, but over the harness's bounds (harness_limits.h)
  kRefused,      // refused or stopped by the interpreter (memory or step
                 // limit, inputs)
  kDeviceError,  // ran and stopped with a device error
  kDone,         // went all the way (ran, diffed, drew)
};
const char* OutcomeName(Outcome outcome);

// graph: binary graph bytes -> the parallel parse agreeing with protobuf's,
// ReadGraph, validation, `check`, a bounded run on random inputs, every
// output read back.
Outcome FuzzGraphFile(absl::string_view bytes);
// text: the same from the text format (.pbtxt).
Outcome FuzzTextGraphFile(absl::string_view bytes);
// npy: ParseNpy; a parsed array writes back to the same array, and loads
// into a one-copy graph of its shape whose output returns it bit for bit.
Outcome FuzzNpyFile(absl::string_view bytes);
// bundle: a replay bundle, as `nkigraph replay` reads it: its graph, its
// arrays, then the bounded run with its inputs compared with its outputs.
Outcome FuzzBundleFile(absl::string_view bytes);
// diff: [options byte][4-byte little-endian length of A][A][B], two binary
// graphs diffed both ways and with themselves; text and JSON formatted.
Outcome FuzzDiffInput(absl::string_view bytes);
// viz: [2 option bytes][binary graph]: the dataflow or barrier view with
// filters and budgets from the option bytes, then DOT text (no layout).
Outcome FuzzVizInput(absl::string_view bytes);

using TargetFunction = Outcome (*)(absl::string_view bytes);
struct Target {
  const char* name;  // fuzz_<name>, tests/fuzz_regressions/<name>/
  TargetFunction run;
};
absl::Span<const Target> Targets();
const Target* FindTarget(absl::string_view name);

// Once per process, before the first input: silences protobuf's own log
// lines (a fuzzer feeds it millions of malformed strings).
void InitializeHarness();

}  // namespace nkigraph::fuzz

#endif  // NKIGRAPH_FUZZ_HARNESS_H_
