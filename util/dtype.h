#ifndef NKIGRAPH_UTIL_DTYPE_H_
#define NKIGRAPH_UTIL_DTYPE_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph {

using proto::DType;

// Bytes per element; 0 for DTYPE_UNSPECIFIED or an unknown value.
int DTypeSize(DType dtype);
bool IsFloatDType(DType dtype);
bool IsValidDType(int value);
absl::string_view DTypeName(DType dtype);  // "float32", "bfloat16", ...
absl::StatusOr<DType> ParseDType(absl::string_view name);

// Largest finite fp8 e4m3 value for a target (240 on trn1/trn2, 448 on
// trn3), where conversions saturate. The one definition: the device
// profiles (ops::DeviceProfile::fp8_e4m3_max) take theirs from here.
constexpr float Fp8E4m3Max(proto::Target target) {
  return target == proto::TARGET_TRN3 ? 448.0f : 240.0f;
}

// Round-to-nearest-even conversions. NaN stays NaN.
uint16_t FloatToBf16(float value);
float Bf16ToFloat(uint16_t bits);
uint16_t FloatToFp16(float value);
float Fp16ToFloat(uint16_t bits);
// IEEE-like e4m3 (bias 7, with infinities and NaN in the top exponent);
// finite values saturate at +-max_finite.
uint8_t FloatToFp8E4m3(float value, float max_finite);
float Fp8E4m3ToFloat(uint8_t bits);

// Loads one element of `dtype` stored at `src` as a float.
float LoadAsFloat(DType dtype, const uint8_t* src);
// Stores `value` at `dst` rounded (floats) or converted with saturation
// (integers, after rounding to nearest) to `dtype`.
void StoreFromFloat(DType dtype, float value, uint8_t* dst, float fp8_max);

// Loads one element as an integer: exact for integer dtypes, floats
// rounded to nearest (0 for NaN and infinities). Inline, with
// StoreFromInt: the interpreter calls them once per integer element.
inline int64_t LoadAsInt(DType dtype, const uint8_t* src) {
  auto load = [&](auto v) -> int64_t {
    std::memcpy(&v, src, sizeof(v));
    return v;
  };
  switch (dtype) {
    case proto::INT32:
      return load(int32_t{});
    case proto::UINT32:
      return load(uint32_t{});
    case proto::INT16:
      return load(int16_t{});
    case proto::UINT16:
      return load(uint16_t{});
    case proto::INT8:
      return load(int8_t{});
    case proto::UINT8:
      return load(uint8_t{});
    default: {
      const float f = LoadAsFloat(dtype, src);
      return std::isfinite(f) ? static_cast<int64_t>(std::nearbyint(f)) : 0;
    }
  }
}

namespace dtype_internal {

// `v` clamped to T's range, stored at `dst`.
template <typename T>
void StoreSaturated(int64_t v, uint8_t* dst) {
  const int64_t lo = std::numeric_limits<T>::min();
  const int64_t hi = static_cast<int64_t>(std::numeric_limits<T>::max());
  const T t = static_cast<T>(v < lo ? lo : (v > hi ? hi : v));
  std::memcpy(dst, &t, sizeof(T));
}

}  // namespace dtype_internal

// Stores an integer, saturating to integer dtypes, converted (and rounded)
// for float dtypes.
inline void StoreFromInt(DType dtype, int64_t value, uint8_t* dst,
                         float fp8_max) {
  using dtype_internal::StoreSaturated;
  switch (dtype) {
    case proto::INT32:
      return StoreSaturated<int32_t>(value, dst);
    case proto::UINT32:
      return StoreSaturated<uint32_t>(value, dst);
    case proto::INT16:
      return StoreSaturated<int16_t>(value, dst);
    case proto::UINT16:
      return StoreSaturated<uint16_t>(value, dst);
    case proto::INT8:
      return StoreSaturated<int8_t>(value, dst);
    case proto::UINT8:
      return StoreSaturated<uint8_t>(value, dst);
    default:
      StoreFromFloat(dtype, static_cast<float>(value), dst, fp8_max);
  }
}

// Bulk forms of the above, for the interpreter's hot paths.
void LoadRowAsFloat(DType dtype, const uint8_t* src, int64_t count, float* dst);
void StoreRowFromFloat(DType dtype, const float* src, int64_t count,
                       uint8_t* dst, float fp8_max);

// Rounds a float to the precision of `dtype` (identity for float32).
float RoundTo(DType dtype, float value, float fp8_max);

}  // namespace nkigraph

#endif  // NKIGRAPH_UTIL_DTYPE_H_
