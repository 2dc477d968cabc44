#ifndef NKIGRAPH_COST_REPORT_H_
#define NKIGRAPH_COST_REPORT_H_

// What `nkigraph profile` reports about a schedule: the estimated latency,
// per engine busy time and utilisation, traffic per memory and direction,
// FLOPs, the roofline bound and the estimate's ratio to it, the critical
// path summarised by scope and kernel source line, and totals per scope
// instance.
//
// The roofline bound: per core, the larger of (a) the core's matmul FLOPs
// (2 x multiply-accumulates) at the tensor engine's peak for their dtype
// and (b) the bytes its DMA instructions move to or from HBM at the
// smaller of the core's HBM part and its DMA aggregate; the slowest core's
// bound counts.

#include <cstdint>
#include <string>
#include <vector>

#include "cost/instr_cost.h"
#include "cost/schedule.h"

namespace nkigraph::cost {

struct EngineUse {
  int core = 0;
  std::string engine;  // "tensor", ..., "dma" (all queues together)
  int lanes = 1;       // 1, or the DMA engines
  int64_t instructions = 0;
  double busy_ns = 0;      // summed over its lanes
  double utilisation = 0;  // busy / (lanes x latency)
};

struct CoreBound {
  int core = 0;
  double flops = 0;
  double compute_ns = 0;
  int64_t dma_hbm_bytes = 0;
  double memory_ns = 0;
};

struct CriticalLine {
  std::string scope;
  std::string file;
  int line = 0;
  std::string opcode;  // the opcode with the most time at this line
  int64_t instructions = 0;
  double ns = 0;  // of the estimate's latency
};

struct ScopeInstance {
  int core = 0;
  int path = 0;      // index into Report::scope_paths
  int instance = 0;  // k-th instance of this path on this core
  int64_t instructions = 0;
  double start_ns = 0;
  double end_ns = 0;
  double busy_ns = 0;  // summed durations of its instructions
};

struct Report {
  std::string kernel;
  std::string target;
  int64_t instructions = 0;
  int num_cores = 1;
  int64_t num_ranks = 1;
  double latency_ns = 0;
  // Operands with a dynamic offset, and those of them the estimate took as
  // touching their whole tensor (their offset depends on input data).
  int64_t dynamic_operands = 0;
  int64_t data_dependent_offsets = 0;
  std::vector<EngineUse> engines;
  Traffic traffic;
  double flops = 0;
  std::vector<CoreBound> bounds;
  double roofline_ns = 0;
  int roofline_core = 0;
  bool compute_bound = false;
  double roofline_ratio = 0;  // latency / roofline (0 when the bound is 0)
  std::vector<CriticalLine> critical;    // the top N, most time first
  double critical_ns = 0;                // their total (= latency when all)
  std::vector<ScopeInstance> scopes;     // in (core, stream) order
  std::vector<std::string> scope_paths;  // what ScopeInstance::path names
};

// `top` bounds the critical-path lines (0: all).
Report BuildReport(const Schedule& schedule, int top);

// The critical path, latest instruction last.
std::vector<int> CriticalPath(const Schedule& schedule);

}  // namespace nkigraph::cost

#endif  // NKIGRAPH_COST_REPORT_H_
