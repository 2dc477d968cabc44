#include "view/schedule_data.h"

#include <cmath>
#include <string>
#include <vector>

#include "cost/report.h"

namespace nkigraph::view {

using nlohmann::json;

namespace {

// Nanoseconds to three decimals: enough for the picture, and keeps the
// numbers short in the page.
double Rounded(double ns) { return std::round(ns * 1000) / 1000; }

}  // namespace

json ScheduleData(const cost::Schedule& schedule, const std::string& target) {
  json data;
  data["target"] = target;
  data["makespan"] = Rounded(schedule.makespan_ns);
  data["lanes_per_core"] = schedule.lanes_per_core;
  std::vector<std::string> lanes;
  for (int lane = 0; lane < schedule.lanes_per_core; ++lane) {
    lanes.push_back(cost::LaneName(lane));
  }
  data["lane_names"] = std::move(lanes);
  json slots = json::array();
  for (size_t i = 0; i < schedule.slots.size(); ++i) {
    const cost::Slot& slot = schedule.slots[i];
    const int core = static_cast<int>(schedule.index->info(i).core);
    slots.push_back({Rounded(slot.start_ns),
                     Rounded(slot.end_ns - slot.start_ns),
                     core * schedule.lanes_per_core + slot.lane});
  }
  data["slots"] = std::move(slots);
  data["critical"] = cost::CriticalPath(schedule);
  return data;
}

}  // namespace nkigraph::view
