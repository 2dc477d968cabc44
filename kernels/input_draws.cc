// Uniform draws for the kernels' input makers (kernels/input_draws.h).
#include "kernels/input_draws.h"

#include <cmath>

#include "kernels/device.h"

namespace nkigraph::kernels {

double Uniform(std::mt19937_64& rng, double lo, double hi) {
  return lo + (hi - lo) * (static_cast<double>(rng() >> 11) * 0x1p-53);
}

void FillUniform(HostArray& array, double lo, double hi, proto::DType dtype,
                 std::mt19937_64& rng) {
  for (float& v : array.f32) {
    v = RoundLikeDevice(dtype, static_cast<float>(Uniform(rng, lo, hi)));
  }
}

HostArray InputDraws::Uniform(absl::string_view name, double lo,
                              double hi) const {
  return Uniform(name, lo, hi, dtype_);
}

HostArray InputDraws::Uniform(absl::string_view name, double lo, double hi,
                              proto::DType dtype) const {
  HostArray array = io_.Zeros(name);
  FillUniform(array, lo, hi, dtype, rng_);
  return array;
}

HostArray InputDraws::FanInWeights(absl::string_view name,
                                   int64_t fan_in) const {
  const double bound = std::sqrt(3.0 / static_cast<double>(fan_in));
  return Uniform(name, -bound, bound);
}

}  // namespace nkigraph::kernels
