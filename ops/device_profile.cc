#include "ops/device_profile.h"

#include "absl/strings/str_cat.h"
#include "util/dtype.h"

namespace nkigraph::ops {
namespace {

constexpr int64_t kKiB = 1024;

constexpr DeviceProfile kTrn1{.target = proto::TARGET_TRN1,
                              .name = "trn1",
                              .num_partitions = 128,
                              .sbuf_partition_bytes = 192 * kKiB,
                              .psum_partition_bytes = 16 * kKiB,
                              .psum_bank_bytes = 2 * kKiB,
                              .matmul_stationary_fmax = 128,
                              .matmul_moving_fmax = 512,
                              .fp8_e4m3_max = Fp8E4m3Max(proto::TARGET_TRN1),
                              .bn_stats_fmax = 512};
constexpr DeviceProfile kTrn2{.target = proto::TARGET_TRN2,
                              .name = "trn2",
                              .num_partitions = 128,
                              .sbuf_partition_bytes = 224 * kKiB,
                              .psum_partition_bytes = 16 * kKiB,
                              .psum_bank_bytes = 2 * kKiB,
                              .matmul_stationary_fmax = 128,
                              .matmul_moving_fmax = 512,
                              .fp8_e4m3_max = Fp8E4m3Max(proto::TARGET_TRN2),
                              .bn_stats_fmax = 512};
constexpr DeviceProfile kTrn3{.target = proto::TARGET_TRN3,
                              .name = "trn3",
                              .num_partitions = 128,
                              .sbuf_partition_bytes = 256 * kKiB,
                              .psum_partition_bytes = 16 * kKiB,
                              .psum_bank_bytes = 2 * kKiB,
                              .matmul_stationary_fmax = 128,
                              .matmul_moving_fmax = 4096,
                              .fp8_e4m3_max = Fp8E4m3Max(proto::TARGET_TRN3),
                              .bn_stats_fmax = 512};

}  // namespace

const DeviceProfile& ProfileFor(proto::Target target) {
  return ForTarget(target, kTrn1, kTrn2, kTrn3);
}

absl::StatusOr<proto::Target> ParseTarget(absl::string_view name) {
  for (const DeviceProfile* p : {&kTrn1, &kTrn2, &kTrn3}) {
    if (p->name == name) return p->target;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown target '", name, "' (expected trn1, trn2 or trn3)"));
}

}  // namespace nkigraph::ops
