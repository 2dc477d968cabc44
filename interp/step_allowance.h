#ifndef NKIGRAPH_INTERP_STEP_ALLOWANCE_H_
#define NKIGRAPH_INTERP_STEP_ALLOWANCE_H_

// The step limit (RunOptions::max_steps) handed out to each round's
// programs. The limit is shared by all programs, but a count read while
// other threads run would make where the run stops depend on their timing.
// Instead each round hands out allowances in one-thread order: a program's
// segment (up to its next synchronising instruction) has a length known
// before it runs, so the first program in that order whose segment passes
// the limit gets what is left and stops there, with the error a one-thread
// run gives, and the programs after it get nothing.

#include <cstdint>
#include <memory>
#include <vector>

#include "interp/program_state.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::interp {

class StepAllowances {
 public:
  // `max_steps` <= 0: no limit, every allowance unbounded.
  StepAllowances(const proto::Graph& graph, int64_t max_steps,
                 int num_programs);

  // At a round's start, `executed` instructions run so far: the
  // allowances of the programs that `moves` (run a segment this round),
  // over every process's programs so that they are the same in all.
  void HandOut(const std::vector<std::unique_ptr<ProgramState>>& programs,
               const std::vector<bool>& moves, int64_t executed);
  // Program `index`'s allowance this round ([rank * cores + core]).
  int64_t operator[](int index) const { return allowance_[index]; }

 private:
  const int64_t max_steps_;
  std::vector<std::vector<int>> next_sync_;  // [core][pc]
  std::vector<int64_t> allowance_;
};

}  // namespace nkigraph::interp

#endif  // NKIGRAPH_INTERP_STEP_ALLOWANCE_H_
