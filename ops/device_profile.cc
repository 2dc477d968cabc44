#include "ops/device_profile.h"

#include "absl/strings/str_cat.h"
#include "util/dtype.h"

namespace nkigraph::ops {
namespace {

constexpr int64_t kKiB = 1024;

// What differs between the generations; the rest is common to all.
constexpr DeviceProfile Generation(proto::Target target, absl::string_view name,
                                   int64_t sbuf_partition_kib,
                                   int64_t matmul_moving_fmax) {
  return DeviceProfile{.target = target,
                       .name = name,
                       .num_partitions = 128,
                       .sbuf_partition_bytes = sbuf_partition_kib * kKiB,
                       .psum_partition_bytes = 16 * kKiB,
                       .psum_bank_bytes = 2 * kKiB,
                       .matmul_stationary_fmax = 128,
                       .matmul_moving_fmax = matmul_moving_fmax,
                       .fp8_e4m3_max = Fp8E4m3Max(target),
                       .bn_stats_fmax = 512};
}

constexpr DeviceProfile kTrn1 =
    Generation(proto::TARGET_TRN1, "trn1", 192, 512);
constexpr DeviceProfile kTrn2 =
    Generation(proto::TARGET_TRN2, "trn2", 224, 512);
constexpr DeviceProfile kTrn3 =
    Generation(proto::TARGET_TRN3, "trn3", 256, 4096);

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
