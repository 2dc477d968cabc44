#include "ops/cpu_features.h"

namespace nkigraph::ops {
namespace {

// AVX-512 F with BW and VL (byte/word and 256-bit forms).
bool CpuHasAvx512FBwVl() {
  static const bool have = __builtin_cpu_supports("avx512f") &&
                           __builtin_cpu_supports("avx512bw") &&
                           __builtin_cpu_supports("avx512vl");
  return have;
}

}  // namespace

bool CpuHasAvx2() {
  static const bool have = __builtin_cpu_supports("avx2");
  return have;
}

bool CpuHasAvx2Fma() {
  static const bool have = CpuHasAvx2() && __builtin_cpu_supports("fma");
  return have;
}

bool SimdPathAvailable(SimdPath path) {
  switch (path) {
    case SimdPath::kAvx512:
      return CpuHasAvx512FBwVl();
    case SimdPath::kAvx2:
      return CpuHasAvx2Fma();
    case SimdPath::kScalar:
      return true;
  }
  return false;
}

// (Read once: it is every row kernel's default argument.)
SimdPath BestSimdPath() {
  static const SimdPath best = AvailableSimdPaths().back();
  return best;
}

std::vector<SimdPath> AvailableSimdPaths() {
  std::vector<SimdPath> paths;
  for (SimdPath path :
       {SimdPath::kScalar, SimdPath::kAvx2, SimdPath::kAvx512}) {
    if (SimdPathAvailable(path)) paths.push_back(path);
  }
  return paths;
}

absl::string_view SimdPathName(SimdPath path) {
  switch (path) {
    case SimdPath::kAvx512:
      return "avx512";
    case SimdPath::kAvx2:
      return "avx2";
    case SimdPath::kScalar:
      return "scalar";
  }
  return "?";
}

}  // namespace nkigraph::ops
