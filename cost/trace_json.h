#ifndef NKIGRAPH_COST_TRACE_JSON_H_
#define NKIGRAPH_COST_TRACE_JSON_H_

// A schedule as Chrome Trace Event JSON, which Perfetto UI and
// chrome://tracing open: {"displayTimeUnit": "ns", "traceEvents": [...]}
// with one process per (rank, core) of the simulated rank, one thread per
// engine and DMA engine (named by metadata events), one complete event
// ("ph": "X", ts and dur in microseconds) per instruction — named by its
// opcode, with its id, scope, source line, operand shape and bytes as
// arguments — and flow events from the last participant of a sync to
// each one that waited for it on another core. Events are written one by
// one: the whole text is never held.

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "cost/schedule.h"

namespace nkigraph::cost {

absl::Status WriteChromeTrace(const Schedule& schedule, std::ostream& out);
// Streams the trace into `path` (through a temporary file beside it, so a
// failed write leaves no partial file).
absl::Status WriteChromeTraceFile(const Schedule& schedule,
                                  const std::string& path);

}  // namespace nkigraph::cost

#endif  // NKIGRAPH_COST_TRACE_JSON_H_
