#include "diff/diff.h"

#include "diff/header.h"
#include "diff/model.h"
#include "diff/streams.h"
#include "diff/tensors.h"
#include "util/status_macros.h"

namespace nkigraph::diff {

absl::StatusOr<DiffResult> Diff(const proto::Graph& a, const proto::Graph& b,
                                const DiffOptions& options) {
  // One key table for both graphs: equal content, equal keys.
  KeyTable keys;
  NKI_ASSIGN_OR_RETURN(GraphModel model_a,
                       BuildModel(a, "A", options.strict, keys));
  NKI_ASSIGN_OR_RETURN(GraphModel model_b,
                       BuildModel(b, "B", options.strict, keys));
  DiffResult result;
  DiffHeader(a, b, &result);
  DiffTensors(a, b, options.max_changes, &result);
  DiffStreams(model_a, model_b, {options.strict, options.max_changes}, &result);
  return result;
}

}  // namespace nkigraph::diff
