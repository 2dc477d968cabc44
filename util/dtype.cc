#include "util/dtype.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace nkigraph {
namespace {

struct DTypeInfo {
  DType dtype;
  absl::string_view name;
  int size;
  bool is_float;
};

constexpr DTypeInfo kDTypes[] = {
    {proto::FLOAT32, "float32", 4, true},
    {proto::BFLOAT16, "bfloat16", 2, true},
    {proto::FLOAT16, "float16", 2, true},
    {proto::FLOAT8_E4M3, "float8_e4m3", 1, true},
    {proto::INT32, "int32", 4, false},
    {proto::UINT32, "uint32", 4, false},
    {proto::INT16, "int16", 2, false},
    {proto::UINT16, "uint16", 2, false},
    {proto::INT8, "int8", 1, false},
    {proto::UINT8, "uint8", 1, false},
};

const DTypeInfo* Find(DType dtype) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.dtype == dtype) return &info;
  }
  return nullptr;
}

// Rounds |a| (finite, >= 0) to a binary float with `mant_bits` explicit
// mantissa bits and smallest normal exponent `min_exp`, to nearest even.
float QuantizeMagnitude(float a, int mant_bits, int min_exp) {
  if (a == 0.0f) return 0.0f;
  int exp = std::ilogb(a);
  if (exp < min_exp) exp = min_exp;  // subnormal range: fixed quantum
  const float quantum = std::ldexp(1.0f, exp - mant_bits);
  return std::nearbyint(a / quantum) * quantum;
}

template <typename Int>
Int SaturatingRound(float value) {
  if (std::isnan(value)) return 0;
  const double r = std::nearbyint(static_cast<double>(value));
  if (r <= static_cast<double>(std::numeric_limits<Int>::min())) {
    return std::numeric_limits<Int>::min();
  }
  if (r >= static_cast<double>(std::numeric_limits<Int>::max())) {
    return std::numeric_limits<Int>::max();
  }
  return static_cast<Int>(r);
}

template <typename T>
T LoadUnaligned(const uint8_t* src) {
  T value;
  std::memcpy(&value, src, sizeof(T));
  return value;
}

template <typename T>
void StoreUnaligned(T value, uint8_t* dst) {
  std::memcpy(dst, &value, sizeof(T));
}

}  // namespace

int DTypeSize(DType dtype) {
  const DTypeInfo* info = Find(dtype);
  return info == nullptr ? 0 : info->size;
}

bool IsFloatDType(DType dtype) {
  const DTypeInfo* info = Find(dtype);
  return info != nullptr && info->is_float;
}

bool IsValidDType(int value) {
  return proto::DType_IsValid(value) && value != proto::DTYPE_UNSPECIFIED;
}

absl::string_view DTypeName(DType dtype) {
  const DTypeInfo* info = Find(dtype);
  return info == nullptr ? "invalid_dtype" : info->name;
}

absl::StatusOr<DType> ParseDType(absl::string_view name) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.name == name) return info.dtype;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown dtype '", name,
                   "' (expected float32, bfloat16, float16, float8_e4m3, "
                   "int32, uint32, int16, uint16, int8 or uint8)"));
}

uint16_t FloatToBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  const uint32_t rounding_bias = 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding_bias) >> 16);
}

float Bf16ToFloat(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, 4);
  return value;
}

uint16_t FloatToFp16(float value) {
  const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  if (std::isnan(value)) return 0x7E00;
  if (std::isinf(value)) return sign | 0x7C00;
  float a = std::fabs(value);
  a = QuantizeMagnitude(a, 10, -14);
  if (a > 65504.0f) return sign | 0x7C00;  // overflow rounds to infinity
  if (a == 0.0f) return sign;
  const int exp = std::ilogb(a);
  if (exp < -14) {  // subnormal: multiples of 2^-24
    return sign | static_cast<uint16_t>(std::ldexp(a, 24));
  }
  const uint16_t mant =
      static_cast<uint16_t>(std::ldexp(a, 10 - exp)) - (1u << 10);
  return sign | static_cast<uint16_t>((exp + 15) << 10) | mant;
}

float Fp16ToFloat(uint16_t bits) {
  const float sign = (bits & 0x8000) ? -1.0f : 1.0f;
  const int exp = (bits >> 10) & 0x1F;
  const int mant = bits & 0x3FF;
  if (exp == 0x1F) {
    return mant ? std::numeric_limits<float>::quiet_NaN()
                : sign * std::numeric_limits<float>::infinity();
  }
  if (exp == 0) return sign * std::ldexp(static_cast<float>(mant), -24);
  return sign * std::ldexp(static_cast<float>(mant + 1024), exp - 25);
}

// fp8 values are stored in the e4m3fn bit layout (bias 7, only S.1111.111
// is NaN), which holds every finite value of both the trn2 (max 240) and
// trn3 (max 448) formats; the target's maximum is where values saturate.
uint8_t FloatToFp8E4m3(float value, float max_finite) {
  if (std::isnan(value)) return 0x7F;
  const uint8_t sign = std::signbit(value) ? 0x80 : 0;
  float a = std::fabs(value);
  if (a >= max_finite) {
    a = max_finite;
  } else {
    a = std::min(QuantizeMagnitude(a, 3, -6), max_finite);
  }
  if (a == 0.0f) return sign;
  const int exp = std::ilogb(a);
  if (exp < -6) {  // subnormal: multiples of 2^-9
    return sign | static_cast<uint8_t>(std::ldexp(a, 9));
  }
  const uint8_t mant = static_cast<uint8_t>(std::ldexp(a, 3 - exp)) - 8;
  return sign | static_cast<uint8_t>((exp + 7) << 3) | mant;
}

float Fp8E4m3ToFloat(uint8_t bits) {
  const float sign = (bits & 0x80) ? -1.0f : 1.0f;
  const int exp = (bits >> 3) & 0xF;
  const int mant = bits & 0x7;
  if (exp == 0xF && mant == 0x7) {
    return std::numeric_limits<float>::quiet_NaN();
  }
  if (exp == 0) return sign * std::ldexp(static_cast<float>(mant), -9);
  return sign * std::ldexp(static_cast<float>(mant + 8), exp - 10);
}

float LoadAsFloat(DType dtype, const uint8_t* src) {
  switch (dtype) {
    case proto::FLOAT32:
      return LoadUnaligned<float>(src);
    case proto::BFLOAT16:
      return Bf16ToFloat(LoadUnaligned<uint16_t>(src));
    case proto::FLOAT16:
      return Fp16ToFloat(LoadUnaligned<uint16_t>(src));
    case proto::FLOAT8_E4M3:
      return Fp8E4m3ToFloat(*src);
    case proto::INT32:
      return static_cast<float>(LoadUnaligned<int32_t>(src));
    case proto::UINT32:
      return static_cast<float>(LoadUnaligned<uint32_t>(src));
    case proto::INT16:
      return static_cast<float>(LoadUnaligned<int16_t>(src));
    case proto::UINT16:
      return static_cast<float>(LoadUnaligned<uint16_t>(src));
    case proto::INT8:
      return static_cast<float>(static_cast<int8_t>(*src));
    case proto::UINT8:
      return static_cast<float>(*src);
    default:
      return 0.0f;
  }
}

void StoreFromFloat(DType dtype, float value, uint8_t* dst, float fp8_max) {
  switch (dtype) {
    case proto::FLOAT32:
      StoreUnaligned(value, dst);
      break;
    case proto::BFLOAT16:
      StoreUnaligned(FloatToBf16(value), dst);
      break;
    case proto::FLOAT16:
      StoreUnaligned(FloatToFp16(value), dst);
      break;
    case proto::FLOAT8_E4M3:
      *dst = FloatToFp8E4m3(value, fp8_max);
      break;
    case proto::INT32:
      StoreUnaligned(SaturatingRound<int32_t>(value), dst);
      break;
    case proto::UINT32:
      StoreUnaligned(SaturatingRound<uint32_t>(value), dst);
      break;
    case proto::INT16:
      StoreUnaligned(SaturatingRound<int16_t>(value), dst);
      break;
    case proto::UINT16:
      StoreUnaligned(SaturatingRound<uint16_t>(value), dst);
      break;
    case proto::INT8:
      StoreUnaligned(SaturatingRound<int8_t>(value), dst);
      break;
    case proto::UINT8:
      *dst = SaturatingRound<uint8_t>(value);
      break;
    default:
      break;
  }
}

void LoadRowAsFloat(DType dtype, const uint8_t* src, int64_t count,
                    float* dst) {
  switch (dtype) {
    case proto::FLOAT32:
      std::memcpy(dst, src, count * 4);
      return;
    case proto::BFLOAT16:
      // Bf16ToFloat written out, so the loop vectorises (a call per
      // element was over half of a bf16 fgcc run's time).
      for (int64_t i = 0; i < count; ++i) {
        const uint32_t wide =
            static_cast<uint32_t>(LoadUnaligned<uint16_t>(src + 2 * i)) << 16;
        std::memcpy(&dst[i], &wide, 4);
      }
      return;
    default: {
      const int size = DTypeSize(dtype);
      for (int64_t i = 0; i < count; ++i)
        dst[i] = LoadAsFloat(dtype, src + i * size);
    }
  }
}

void StoreRowFromFloat(DType dtype, const float* src, int64_t count,
                       uint8_t* dst, float fp8_max) {
  switch (dtype) {
    case proto::FLOAT32:
      std::memcpy(dst, src, count * 4);
      return;
    case proto::BFLOAT16: {
      // FloatToBf16 without its branch, so the loop vectorises: NaNs keep
      // their top bits and become quiet, the rest round to nearest even.
      for (int64_t i = 0; i < count; ++i) {
        uint32_t bits;
        std::memcpy(&bits, &src[i], 4);
        const bool nan = (bits & 0x7FFFFFFFu) > 0x7F800000u;
        const uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1)) >> 16;
        const uint16_t out =
            static_cast<uint16_t>(nan ? (bits >> 16) | 0x40 : rounded);
        StoreUnaligned(out, dst + 2 * i);
      }
      return;
    }
    default: {
      const int size = DTypeSize(dtype);
      for (int64_t i = 0; i < count; ++i) {
        StoreFromFloat(dtype, src[i], dst + i * size, fp8_max);
      }
    }
  }
}

float RoundTo(DType dtype, float value, float fp8_max) {
  uint8_t buffer[4];
  StoreFromFloat(dtype, value, buffer, fp8_max);
  return LoadAsFloat(dtype, buffer);
}

}  // namespace nkigraph
