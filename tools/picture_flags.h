#ifndef NKIGRAPH_TOOLS_PICTURE_FLAGS_H_
#define NKIGRAPH_TOOLS_PICTURE_FLAGS_H_

// The flags that choose what a graph's pictures show, read alike by `dot`
// and `view`: --scope PATH, --instance N, --core N, --rank N and
// --max-nodes N.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tools/commands.h"
#include "viz/selection.h"

namespace nkigraph::tools {

// Their specs, for ParseArgs.
std::vector<FlagSpec> PictureFlags();

// The integer value of `flag`; "FLAG takes an integer, not 'TEXT'" when
// it is none.
absl::StatusOr<int64_t> IntFlag(const ParsedArgs& args,
                                const std::string& flag);

// Reads the picture flags given into `filters` and `*max_nodes` (the
// others keep their values). An empty --scope, and --instance without
// --scope, are errors; the filters' ranges are Select's to check.
absl::Status ReadPictureFlags(const ParsedArgs& args, viz::Filters* filters,
                              int64_t* max_nodes);

}  // namespace nkigraph::tools

#endif  // NKIGRAPH_TOOLS_PICTURE_FLAGS_H_
