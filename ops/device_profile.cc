#include "ops/device_profile.h"

#include "absl/strings/str_cat.h"

namespace nkigraph::ops {
namespace {

constexpr int64_t kKiB = 1024;

constexpr DeviceProfile kTrn1{
    proto::TARGET_TRN1, "trn1", 128, 192 * kKiB, 16 * kKiB,
    2 * kKiB,           128,    512, 240.0f,     512};
constexpr DeviceProfile kTrn2{
    proto::TARGET_TRN2, "trn2", 128, 224 * kKiB, 16 * kKiB,
    2 * kKiB,           128,    512, 240.0f,     512};
constexpr DeviceProfile kTrn3{
    proto::TARGET_TRN3, "trn3", 128,  256 * kKiB, 16 * kKiB,
    2 * kKiB,           128,    4096, 448.0f,     512};

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
