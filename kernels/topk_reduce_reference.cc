// The oracle of topk_reduce, straight from the contract: walk the rows in
// order, decode each row's int32 token index from its last two bf16
// columns' bits, and add the row into its token's bf16 accumulator while
// the token has taken fewer than K rows.
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/topk_reduce.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {

HostOutputs TopkReduceReference(const TopkReduceParams& params,
                                const HostArrays& inputs) {
  NKI_ASSIGN_OR_RETURN(const HostIo io, TopkReduceSpec().Host(params, inputs));
  const std::vector<uint16_t>& bits = io.In("input").u16;
  const int64_t tokens = params.num_tokens, hidden = params.hidden;
  const int64_t width = hidden + 2;
  HostArray out = io.Zeros("output");
  std::vector<int64_t> taken(tokens, 0);
  for (int64_t r = 0; r < params.rows; ++r) {
    const uint16_t* row = &bits[r * width];
    const int32_t token =
        static_cast<int32_t>(static_cast<uint32_t>(row[hidden]) |
                             (static_cast<uint32_t>(row[hidden + 1]) << 16));
    if (token < 0 || token >= tokens || taken[token] == params.top_k) continue;
    ++taken[token];
    float* acc = &out.f32[token * hidden];
    for (int64_t h = 0; h < hidden; ++h) {
      // The accumulator is bf16: round after every add.
      acc[h] = Bf16ToFloat(FloatToBf16(acc[h] + Bf16ToFloat(row[h])));
    }
  }
  std::vector<HostArray> outputs;
  outputs.push_back(std::move(out));
  return outputs;
}

}  // namespace nkigraph::kernels
