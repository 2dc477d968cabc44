#ifndef NKIGRAPH_OPS_OP_LIST_H_
#define NKIGRAPH_OPS_OP_LIST_H_

// The definition of every op, one per file in ops/defs/. The list is
// generated at build time from those files' names (ops/CMakeLists.txt,
// ops/op_list.cc.in); nobody writes it.

#include "absl/types/span.h"
#include "ops/op_def.h"

namespace nkigraph::ops {

absl::Span<const OpDefiner> GeneratedOpDefiners();

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_OP_LIST_H_
