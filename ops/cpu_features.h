#ifndef NKIGRAPH_OPS_CPU_FEATURES_H_
#define NKIGRAPH_OPS_CPU_FEATURES_H_

// The instruction sets this processor has, as the vector paths of the row
// kernels, the exp, block copies and the matmul kernel choose among them
// (each path is compiled for its set with a target attribute and taken
// only where the processor runs it). Read once, on first use.

#include <vector>

#include "absl/strings/string_view.h"

namespace nkigraph::ops {

bool CpuHasAvx2();
// AVX2 and FMA.
bool CpuHasAvx2Fma();

// The vector code paths of the exp, block copies and the matmul kernel,
// best last. kAvx2 takes AVX2 and FMA, kAvx512 AVX-512 F, BW and VL: one
// requirement for every kernel (the processors with AVX2 but no FMA, or
// AVX-512 F without BW and VL, are the few that are not worth a path).
enum class SimdPath { kScalar, kAvx2, kAvx512 };

// Whether this processor runs `path` (kScalar always).
bool SimdPathAvailable(SimdPath path);

// The best path this processor runs.
SimdPath BestSimdPath();

// The paths this processor runs, best last (what tests and benchmarks
// compare).
std::vector<SimdPath> AvailableSimdPaths();

// "scalar", "avx2" or "avx512".
absl::string_view SimdPathName(SimdPath path);

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_CPU_FEATURES_H_
