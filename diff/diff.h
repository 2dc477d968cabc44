#ifndef NKIGRAPH_DIFF_DIFF_H_
#define NKIGRAPH_DIFF_DIFF_H_

// Semantic diff of two instruction graphs: what `nkigraph diff` prints and
// what the golden-graph tests check.
//
//   absl::StatusOr<diff::DiffResult> result = diff::Diff(a, b, {});
//   if (!result->same()) std::cout << diff::FormatText(*result, {});
//
// Compared: kernel name, parameters and world; tensors matched by name
// (diff/tensors.h); each core's instruction stream aligned by content
// (diff/model.h, diff/align.h, diff/streams.h). Ids, the order of the
// interned file and scope tables and tensor live ranges never count;
// source locations and scope paths count only with `strict`.

#include <cstdint>

#include "absl/status/statusor.h"
#include "diff/result.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::diff {

struct DiffOptions {
  // Also compare each instruction's source file:line and scope path.
  bool strict = false;
  // Detail at most this many tensor changes and this many instruction
  // changes per stream; the rest are only counted. <= 0: detail all.
  int64_t max_changes = 0;
};

// Fails (InvalidArgument) only on graphs too malformed to compare: a
// tensor table not in id order, an operand naming a missing tensor, two
// streams for one core.
absl::StatusOr<DiffResult> Diff(const proto::Graph& a, const proto::Graph& b,
                                const DiffOptions& options);

}  // namespace nkigraph::diff

#endif  // NKIGRAPH_DIFF_DIFF_H_
