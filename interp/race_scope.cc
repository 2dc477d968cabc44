#include "interp/race_scope.h"

#include <algorithm>
#include <bit>

#include "ops/op_def.h"
#include "util/dtype.h"

namespace nkigraph::interp {
namespace {

// Whether operand `i` of an instruction with `def` may be written. An
// unknown op or role counts as writing, which only makes tracking wider.
bool MayWrite(const ops::OpDef* def, int i) {
  const ops::OperandRole* role =
      def != nullptr ? ops::OperandRoleOf(*def, i) : nullptr;
  return role == nullptr || role->access != ops::Access::kRead;
}

int64_t TensorBytes(const proto::Tensor& t) {
  int64_t bytes = DTypeSize(t.dtype());
  for (int64_t d : t.shape()) bytes *= d;
  return bytes;
}

}  // namespace

std::vector<RaceScope> ComputeRaceScopes(const proto::Graph& graph) {
  const int n = graph.tensors_size();
  std::vector<RaceScope> scopes(n, RaceScope::kNone);
  std::vector<uint64_t> cores(n, 0);  // bit c: named by core c's stream
  std::vector<bool> written(n, false);
  auto name = [&](uint32_t id, int core, bool write) {
    if (id < 1 || id > static_cast<uint32_t>(n)) return;
    cores[id - 1] |= uint64_t{1} << (core & 63);
    if (write) written[id - 1] = true;
  };
  for (int c = 0; c < graph.streams_size(); ++c) {
    for (const proto::Instruction& instr : graph.streams(c).instructions()) {
      const ops::OpDef* def = ops::FindOp(instr.opcode());
      for (int i = 0; i < instr.operands_size(); ++i) {
        const proto::AccessPattern& ap = instr.operands(i);
        if (ap.tensor_id() != 0) name(ap.tensor_id(), c, MayWrite(def, i));
        if (ap.dynamic().kind() != proto::DynamicOffset::KIND_UNSPECIFIED) {
          name(ap.dynamic().tensor_id(), c, /*write=*/false);
        }
      }
    }
  }

  // Sweep the shared tensors by address, joining those whose byte ranges
  // overlap into one verdict.
  std::vector<int> shared;
  for (int i = 0; i < n; ++i) {
    if (graph.tensors(i).space() == proto::SHARED_HBM) shared.push_back(i);
  }
  std::sort(shared.begin(), shared.end(), [&](int a, int b) {
    return graph.tensors(a).address() < graph.tensors(b).address();
  });
  for (size_t first = 0; first < shared.size();) {
    const proto::Tensor& head = graph.tensors(shared[first]);
    int64_t group_end =
        static_cast<int64_t>(head.address()) + TensorBytes(head);
    uint64_t group_cores = cores[shared[first]];
    bool group_written = written[shared[first]];
    size_t last = first + 1;
    for (; last < shared.size(); ++last) {
      const proto::Tensor& t = graph.tensors(shared[last]);
      if (static_cast<int64_t>(t.address()) >= group_end) break;
      group_end = std::max(group_end,
                           static_cast<int64_t>(t.address()) + TensorBytes(t));
      group_cores |= cores[shared[last]];
      group_written = group_written || written[shared[last]];
    }
    const RaceScope verdict = std::popcount(group_cores) < 2
                                  ? RaceScope::kOneCore
                              : !group_written ? RaceScope::kReadOnly
                                               : RaceScope::kTracked;
    for (size_t k = first; k < last; ++k) scopes[shared[k]] = verdict;
    first = last;
  }
  return scopes;
}

}  // namespace nkigraph::interp
