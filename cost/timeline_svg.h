#ifndef NKIGRAPH_COST_TIMELINE_SVG_H_
#define NKIGRAPH_COST_TIMELINE_SVG_H_

// A schedule as an SVG picture for people without a trace viewer: per
// core, a band of scope instances (the shallowest scope level that
// repeats, such as ring steps, layers or blocks; alternate instances on two
// rows, as instances may overlap in time), then one lane per engine and DMA
// queue used, instructions as boxes coloured by engine, and a time axis in
// microseconds. Boxes thinner than half a pixel that touch are drawn as
// one, so big graphs stay small pictures.

#include <ostream>

#include "absl/status/status.h"
#include "cost/report.h"
#include "cost/schedule.h"

namespace nkigraph::cost {

absl::Status WriteTimelineSvg(const Schedule& schedule, const Report& report,
                              std::ostream& out);

}  // namespace nkigraph::cost

#endif  // NKIGRAPH_COST_TIMELINE_SVG_H_
