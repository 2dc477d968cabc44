#ifndef NKIGRAPH_KERNELS_INPUT_DRAWS_H_
#define NKIGRAPH_KERNELS_INPUT_DRAWS_H_

// The random values of the kernels' input makers: uniform draws from one
// seeded std::mt19937_64 (the top 53 bits of one call each, in the order
// asked for), rounded as the device holds them, so a kernel's generated
// inputs are the same for the same seed on every machine.

#include <cstdint>
#include <random>

#include "absl/strings/string_view.h"
#include "kernels/kernel_io.h"
#include "proto/nkigraph.pb.h"
#include "util/host_array.h"

namespace nkigraph::kernels {

// Uniform in [lo, hi): one draw.
double Uniform(std::mt19937_64& rng, double lo, double hi);

// Each float32 element of `array` in turn Uniform(rng, lo, hi), rounded
// to `dtype` as the device holds it.
void FillUniform(HostArray& array, double lo, double hi, proto::DType dtype,
                 std::mt19937_64& rng);

// The arrays of a kernel's I/O table `io` filled from `rng`, rounded to
// `dtype` unless told otherwise. Holds references: `io` and `rng` must
// outlive it.
class InputDraws {
 public:
  InputDraws(const HostIo& io, proto::DType dtype, std::mt19937_64& rng)
      : io_(io), dtype_(dtype), rng_(rng) {}

  // Row `name`, each element uniform in [lo, hi).
  HostArray Uniform(absl::string_view name, double lo, double hi) const;
  HostArray Uniform(absl::string_view name, double lo, double hi,
                    proto::DType dtype) const;
  // Row `name`, a weight whose outputs each sum `fan_in` products: uniform
  // in ±sqrt(3/fan_in), variance 1/fan_in, so every stage's values stay
  // O(1) and a softmax over them is not one-hot in either dtype.
  HostArray FanInWeights(absl::string_view name, int64_t fan_in) const;

 private:
  const HostIo& io_;
  proto::DType dtype_;
  std::mt19937_64& rng_;
};

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_INPUT_DRAWS_H_
