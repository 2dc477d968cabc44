#ifndef NKIGRAPH_TESTS_DECODE_TEST_UTIL_H_
#define NKIGRAPH_TESTS_DECODE_TEST_UTIL_H_

// What the decode-family suites (mlp_tkg, transformer_tkg) share: runs
// against a reference, the comparison, and facts about a graph's operands.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kernels/compare.h"
#include "proto/nkigraph.pb.h"
#include "tests/test_util.h"
#include "util/host_array.h"

namespace nkigraph::testing {

using Outputs = std::map<std::string, HostArray>;

// Every output of `graph` run on `inputs`; a failed run fails the test.
inline Outputs RunOk(const proto::Graph& graph,
                     const std::vector<HostArray>& inputs) {
  absl::StatusOr<Outputs> outputs = RunGraph(graph, inputs);
  EXPECT_TRUE(outputs.ok()) << outputs.status();
  return outputs.ok() ? *std::move(outputs) : Outputs();
}

// got ≈ want within tol of want's scale (its largest magnitude), as the
// family's kernels declare (Comparison::kScale).
inline void ExpectCloseToScale(const HostArray& got, const HostArray& want,
                               double tol) {
  absl::StatusOr<kernels::OutputComparison> c =
      kernels::CompareOutput(got, want, kernels::Comparison::kScale, tol);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->failures, 0)
      << want.name << ": " << c->failures << " of " << want.num_elements()
      << " elements off by more than " << tol << " x scale " << c->scale
      << " (max error " << c->max_abs_error << "); first at "
      << c->first_failure << ": got " << c->first_got << ", want "
      << c->first_want;
}

// Every array of `want` against the output of its name in `got`.
inline void ExpectAllCloseToScale(const Outputs& got,
                                  const std::vector<HostArray>& want,
                                  double tol) {
  for (const HostArray& w : want) {
    auto it = got.find(w.name);
    ASSERT_NE(it, got.end()) << "missing output " << w.name;
    ExpectCloseToScale(it->second, w, tol);
  }
}

// The flat element offsets (into its tensor's row-major layout) an operand
// without a dynamic offset touches.
inline std::vector<int64_t> TouchedElements(const proto::AccessPattern& ap) {
  std::vector<int64_t> elements = {ap.offset()};
  for (int i = 0; i + 1 < ap.pattern_size(); i += 2) {
    const int64_t stride = ap.pattern(i), count = ap.pattern(i + 1);
    std::vector<int64_t> next;
    next.reserve(elements.size() * count);
    for (int64_t e : elements) {
      for (int64_t c = 0; c < count; ++c) next.push_back(e + c * stride);
    }
    elements = std::move(next);
  }
  return elements;
}

inline bool IsHbmSpace(proto::MemorySpace space) {
  return space == proto::HBM || space == proto::SHARED_HBM;
}

// The scope path of an instruction ("transformer_tkg/layer0/mlp_tkg/...").
inline const std::string& ScopeOf(const proto::Graph& graph,
                                  const proto::Instruction& instr) {
  return graph.scopes(static_cast<int>(instr.scope()));
}

inline int64_t CountOpcode(const proto::Stream& stream, proto::Opcode opcode) {
  int64_t n = 0;
  for (const proto::Instruction& instr : stream.instructions()) {
    n += instr.opcode() == opcode;
  }
  return n;
}

inline int64_t InstructionCount(const proto::Graph& graph) {
  int64_t n = 0;
  for (const proto::Stream& s : graph.streams()) n += s.instructions_size();
  return n;
}

}  // namespace nkigraph::testing

#endif  // NKIGRAPH_TESTS_DECODE_TEST_UTIL_H_
