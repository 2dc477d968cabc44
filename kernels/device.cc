#include "kernels/device.h"

#include <algorithm>

#include "builder/tracer.h"
#include "util/dtype.h"

namespace nkigraph::kernels {

const ops::DeviceProfile& KernelDevice() {
  static const ops::DeviceProfile& profile =
      ops::ProfileFor(builder::WorldConfig{}.target);
  return profile;
}

int64_t Partitions() { return KernelDevice().num_partitions; }

int64_t StationaryFree() { return KernelDevice().matmul_stationary_fmax; }

int64_t PsumBankColumns() {
  return KernelDevice().psum_bank_bytes / static_cast<int64_t>(sizeof(float));
}

int64_t MovingFree() {
  return std::min(KernelDevice().matmul_moving_fmax, PsumBankColumns());
}

float RoundLikeDevice(proto::DType dtype, float value) {
  return RoundTo(dtype, value, KernelDevice().fp8_e4m3_max);
}

}  // namespace nkigraph::kernels
