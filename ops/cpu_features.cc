#include "ops/cpu_features.h"

namespace nkigraph::ops {

bool CpuHasAvx2() {
  static const bool have = __builtin_cpu_supports("avx2");
  return have;
}

bool CpuHasAvx2Fma() {
  static const bool have = CpuHasAvx2() && __builtin_cpu_supports("fma");
  return have;
}

bool CpuHasAvx512F() {
  static const bool have = __builtin_cpu_supports("avx512f");
  return have;
}

bool CpuHasAvx512FBwVl() {
  static const bool have = CpuHasAvx512F() &&
                           __builtin_cpu_supports("avx512bw") &&
                           __builtin_cpu_supports("avx512vl");
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

SimdPath BestSimdPath() {
  if (SimdPathAvailable(SimdPath::kAvx512)) return SimdPath::kAvx512;
  if (SimdPathAvailable(SimdPath::kAvx2)) return SimdPath::kAvx2;
  return SimdPath::kScalar;
}

}  // namespace nkigraph::ops
