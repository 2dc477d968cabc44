#ifndef NKIGRAPH_INTERP_INTERPRETER_IMPL_H_
#define NKIGRAPH_INTERP_INTERPRETER_IMPL_H_

// The device state behind an Interpreter, shared by the files that
// implement it (interpreter.cc builds it, host_io.cc moves tensors between
// the host and it, scheduler.cc runs the programs). Not a public header.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "interp/device_memory.h"
#include "interp/interpreter.h"
#include "interp/program_state.h"
#include "interp/race_detector.h"
#include "interp/race_scope.h"
#include "interp/segment_footprint.h"
#include "interp/transport.h"
#include "ops/decoded_stream.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::interp {

struct Interpreter::Impl {
  Impl(DeviceMemory m, int ranks, int cores, MemoryBudget* budget,
       std::vector<RaceScope> scopes)
      : memory(std::move(m)),
        race(ranks, cores, budget),
        race_scopes(std::move(scopes)) {}
  DeviceMemory memory;
  RaceDetector race;
  std::vector<RaceScope> race_scopes;  // by tensor index
  // Every stream decoded once (every rank runs the same streams), by core;
  // the programs bind their instructions' views from it.
  std::vector<ops::DecodedStream> decoded;
  std::vector<std::unique_ptr<ProgramState>> programs;  // [rank][core]
  std::vector<bool> input_set;                          // by tensor index
  std::unique_ptr<SegmentFootprints> footprints;        // built by Run
  graph::ResolvedOffsets* resolved_sink = nullptr;
  int num_ranks = 1;
  int num_cores = 1;
  // The other processes of a run spread over several (null: none), and
  // the ranks this one holds: the only ones with device memory here.
  Transport* transport = nullptr;
  RankBlock block;

  ProgramState& program(int rank, int core) {
    return *programs[rank * num_cores + core];
  }
};

}  // namespace nkigraph::interp

#endif  // NKIGRAPH_INTERP_INTERPRETER_IMPL_H_
