#ifndef NKIGRAPH_COST_REPORT_FORMAT_H_
#define NKIGRAPH_COST_REPORT_FORMAT_H_

// The profile report as text (for people) or as one JSON document (for
// scripts). Times in the text are microseconds; the JSON keeps
// nanoseconds.

#include <ostream>

#include "cost/report.h"

namespace nkigraph::cost {

// `top` bounds the scope instances listed per scope path (0: all); the
// critical path was bounded when the report was built.
void WriteReportText(const Report& report, int top, std::ostream& out);
void WriteReportJson(const Report& report, std::ostream& out);

}  // namespace nkigraph::cost

#endif  // NKIGRAPH_COST_REPORT_FORMAT_H_
