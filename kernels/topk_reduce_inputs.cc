// Valid inputs of topk_reduce: the sparse buffer an all_to_all_v leaves,
// one row per (token, expert) in a random order, with the cases the
// contract names mixed in — tokens without rows, tokens with more than K
// rows (only the first K in row order count), padding (-1) and indices out
// of [0, T) that must be ignored.
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "kernels/topk_reduce.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {

HostOutputs MakeTopkReduceInputs(const TopkReduceParams& params,
                                 uint64_t seed) {
  NKI_ASSIGN_OR_RETURN(const HostIo io, TopkReduceSpec().Host(params));
  std::mt19937_64 rng(seed);
  const int64_t tokens = params.num_tokens, k = params.top_k,
                rows = params.rows, hidden = params.hidden;

  // The index of every row: most tokens K rows, every fifth none, every
  // seventh two more than K, as room allows; then a few indices out of
  // range; the rest padding.
  std::vector<int32_t> index;
  index.reserve(rows);
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t count = t % 5 == 1 ? 0 : t % 7 == 3 ? k + 2 : k;
    for (int64_t i = 0; i < count && static_cast<int64_t>(index.size()) < rows;
         ++i) {
      index.push_back(static_cast<int32_t>(t));
    }
  }
  const int32_t out_of_range[] = {
      static_cast<int32_t>(tokens), static_cast<int32_t>(tokens) + 1000,
      0x10000,  // a valid token's low bits, high bits set
      -7, 0x7FFFFFFF};
  for (int32_t v : out_of_range) {
    if (static_cast<int64_t>(index.size()) < rows) index.push_back(v);
  }
  while (static_cast<int64_t>(index.size()) < rows) index.push_back(-1);
  // Fisher-Yates with the generator's raw draws: the same order everywhere
  // (std::shuffle's is the library's choice).
  for (int64_t i = rows - 1; i > 0; --i) {
    std::swap(index[i], index[rng() % static_cast<uint64_t>(i + 1)]);
  }

  HostArray input = io.Zeros("input");
  const int64_t width = hidden + 2;
  for (int64_t r = 0; r < rows; ++r) {
    uint16_t* row = &input.u16[r * width];
    for (int64_t h = 0; h < hidden; ++h) {
      // 24 random bits, uniform in [-1, 1), rounded to bf16.
      row[h] = FloatToBf16(static_cast<float>(rng() >> 40) * 0x1p-23f - 1.0f);
    }
    const uint32_t packed = static_cast<uint32_t>(index[r]);
    row[hidden] = static_cast<uint16_t>(packed & 0xFFFF);
    row[hidden + 1] = static_cast<uint16_t>(packed >> 16);
  }
  std::vector<HostArray> inputs;
  inputs.push_back(std::move(input));
  return inputs;
}

}  // namespace nkigraph::kernels
