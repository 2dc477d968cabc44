#ifndef NKIGRAPH_KERNELS_DEVICE_H_
#define NKIGRAPH_KERNELS_DEVICE_H_

// The hardware the kernels tile for, read from its device profile
// (ops/device_profile.h) rather than restated in each kernel: the default
// target's (trn2), which every kernel's world traces for.

#include <cstdint>

#include "ops/device_profile.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::kernels {

const ops::DeviceProfile& KernelDevice();

// SBUF and PSUM partitions (128): the rows of an on-chip tile, the
// contraction of one matmul.
int64_t Partitions();
// The matmul's stationary free size (128): the PSUM partitions of its
// result.
int64_t StationaryFree();
// fp32 columns of one PSUM bank (512).
int64_t PsumBankColumns();
// The matmul's moving free size within one PSUM bank (512): the widest
// result one matmul group accumulates.
int64_t MovingFree();

// `value` as the device stores it in `dtype` (fp8 clipped to the
// device's e4m3 maximum): what host-side inputs and checkpoints are
// rounded to.
float RoundLikeDevice(proto::DType dtype, float value);

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_DEVICE_H_
