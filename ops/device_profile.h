#ifndef NKIGRAPH_OPS_DEVICE_PROFILE_H_
#define NKIGRAPH_OPS_DEVICE_PROFILE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::ops {

// Sizes and limits of one NeuronCore generation, as the checks and the
// interpreter's memory model use them.
struct DeviceProfile {
  proto::Target target;
  absl::string_view name;
  int64_t num_partitions;          // 128
  int64_t sbuf_partition_bytes;    // 192 / 224 / 256 KiB
  int64_t psum_partition_bytes;    // 16 KiB
  int64_t psum_bank_bytes;         // 2 KiB (512 fp32)
  int64_t matmul_stationary_fmax;  // 128
  int64_t matmul_moving_fmax;      // 512 (4096 fp32 on trn3)
  float fp8_e4m3_max;              // Fp8E4m3Max(target): 240 / 448
  int64_t bn_stats_fmax;           // 512: free size of one bn_stats
};

// TARGET_UNSPECIFIED reads as trn2, the default.
const DeviceProfile& ProfileFor(proto::Target target);

// The entry of a per-target table for `target`: trn1's, trn3's, or trn2's
// (the default target) for anything else. Every table beside the device
// profile (the cost model's too) picks its entry through this.
template <typename T>
const T& ForTarget(proto::Target target, const T& trn1, const T& trn2,
                   const T& trn3) {
  switch (target) {
    case proto::TARGET_TRN1:
      return trn1;
    case proto::TARGET_TRN3:
      return trn3;
    default:
      return trn2;
  }
}
absl::StatusOr<proto::Target> ParseTarget(absl::string_view name);

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_DEVICE_PROFILE_H_
