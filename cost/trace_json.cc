#include "cost/trace_json.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "ops/access_pattern.h"
#include "ops/instr_facts.h"

namespace nkigraph::cost {
namespace {

using nlohmann::json;

// Times are whole picoseconds, written as microseconds: short, stable
// text, and an event's end (ts + dur) is exactly the next one's start when
// they touch.
int64_t Picos(double ns) { return std::llround(ns * 1000.0); }
double Micros(int64_t ps) { return static_cast<double>(ps) / 1e6; }

std::string ShapeText(const proto::Instruction& instr) {
  if (instr.operands_size() == 0) return "";
  const proto::AccessPattern& ap = instr.operands(0);
  std::vector<int64_t> counts;
  for (int d = 0; d < ops::NumDims(ap); ++d)
    counts.push_back(ops::Count(ap, d));
  return absl::StrCat("[", absl::StrJoin(counts, ", "), "]");
}

class Writer {
 public:
  explicit Writer(std::ostream& out) : out_(out) {}
  void Begin() { out_ << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"; }
  void Event(const json& event) {
    if (!first_) out_ << ",\n";
    first_ = false;
    out_ << event.dump();
  }
  void End() { out_ << "\n]}\n"; }

 private:
  std::ostream& out_;
  bool first_ = true;
};

}  // namespace

absl::Status WriteChromeTrace(const Schedule& s, std::ostream& out) {
  const graph::GraphIndex& index = *s.index;
  const proto::Graph& graph = index.graph();
  const int cores = index.num_cores();
  Writer w(out);
  w.Begin();
  // Metadata: processes (rank 0's cores) and the lanes they use.
  std::vector<std::set<int>> used(cores);
  for (int i = 0; i < index.size(); ++i) {
    used[index.info(i).core].insert(s.slots[i].lane);
  }
  for (int core = 0; core < cores; ++core) {
    w.Event({{"ph", "M"},
             {"ts", 0},
             {"name", "process_name"},
             {"pid", core},
             {"tid", 0},
             {"args", {{"name", absl::StrCat("rank 0 core ", core)}}}});
    w.Event({{"ph", "M"},
             {"ts", 0},
             {"name", "process_sort_index"},
             {"pid", core},
             {"tid", 0},
             {"args", {{"sort_index", core}}}});
    for (int lane : used[core]) {
      w.Event({{"ph", "M"},
               {"ts", 0},
               {"name", "thread_name"},
               {"pid", core},
               {"tid", lane},
               {"args", {{"name", LaneName(lane)}}}});
      w.Event({{"ph", "M"},
               {"ts", 0},
               {"name", "thread_sort_index"},
               {"pid", core},
               {"tid", lane},
               {"args", {{"sort_index", lane}}}});
    }
  }
  for (int i = 0; i < index.size(); ++i) {
    const proto::Instruction& instr = index.instr(i);
    const Slot& slot = s.slots[i];
    const std::string file =
        instr.file() < static_cast<uint32_t>(graph.files_size())
            ? graph.files(static_cast<int>(instr.file()))
            : "";
    w.Event({{"ph", "X"},
             {"name", ops::OpcodeName(instr.opcode())},
             {"cat", std::string(ops::EngineName(index.info(i).engine))},
             {"pid", index.info(i).core},
             {"tid", slot.lane},
             {"ts", Micros(Picos(slot.start_ns))},
             {"dur", Micros(Picos(slot.end_ns) - Picos(slot.start_ns))},
             {"args",
              {{"id", instr.id()},
               {"scope", index.scope_path(instr.scope())},
               {"source", absl::StrCat(file, ":", instr.line())},
               {"shape", ShapeText(instr)},
               {"bytes", s.costs[i].bytes},
               {"lanes", slot.lanes}}}});
  }
  // Flow arrows: from the last arrival at a sync to each core that waited.
  int flow = 0;
  for (const SyncWait& wait : s.waits) {
    const Slot& from = s.slots[wait.from];
    const Slot& to = s.slots[wait.to];
    ++flow;
    w.Event({{"ph", "s"},
             {"name", "wait"},
             {"cat", "sync"},
             {"id", flow},
             {"pid", index.info(wait.from).core},
             {"tid", from.lane},
             {"ts", Micros(Picos(from.start_ns))}});
    w.Event({{"ph", "f"},
             {"bp", "e"},
             {"name", "wait"},
             {"cat", "sync"},
             {"id", flow},
             {"pid", index.info(wait.to).core},
             {"tid", to.lane},
             {"ts", Micros(Picos(to.start_ns))}});
  }
  w.End();
  if (!out) return absl::DataLossError("writing the trace failed");
  return absl::OkStatus();
}

absl::Status WriteChromeTraceFile(const Schedule& schedule,
                                  const std::string& path) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out)
      return absl::NotFoundError(absl::StrCat("cannot open '", temporary, "'"));
    absl::Status status = WriteChromeTrace(schedule, out);
    out.close();
    if (status.ok() && !out)
      status = absl::DataLossError("writing the trace failed");
    if (!status.ok()) {
      std::remove(temporary.c_str());
      return status;
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    return absl::UnavailableError(absl::StrCat("cannot write '", path, "'"));
  }
  return absl::OkStatus();
}

}  // namespace nkigraph::cost
