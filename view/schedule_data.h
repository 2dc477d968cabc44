#ifndef NKIGRAPH_VIEW_SCHEDULE_DATA_H_
#define NKIGRAPH_VIEW_SCHEDULE_DATA_H_

// The cost model's schedule as the page's timeline reads it: lane names,
// per instruction [start ns, duration ns, lane] (lane counted over all
// cores: core * lanes_per_core + lane), the critical path, the target and
// the estimated latency.

#include <string>

#include "cost/schedule.h"
#include "nlohmann/json.hpp"

namespace nkigraph::view {

nlohmann::json ScheduleData(const cost::Schedule& schedule,
                            const std::string& target);

}  // namespace nkigraph::view

#endif  // NKIGRAPH_VIEW_SCHEDULE_DATA_H_
