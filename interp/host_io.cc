// Moving tensors between the host and the device: input and output
// lookup, loading inputs, reading tensors and outputs back.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "interp/byte_buffer.h"
#include "interp/device_memory.h"
#include "interp/interpreter.h"
#include "interp/interpreter_impl.h"
#include "ops/access_pattern.h"
#include "ops/device_profile.h"
#include "util/diagnostic.h"
#include "util/dtype.h"
#include "util/status_macros.h"
#include "util/tensor_roles.h"

namespace nkigraph::interp {
namespace {

std::string ShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

// Host data that does not fit the graph, about the input or output `name`.
absl::Status HostError(absl::string_view name, std::string message) {
  Diagnostic d = MakeDiagnostic(DiagnosticKind::kInput, std::move(message));
  d.tensor = std::string(name);
  return DiagnosticError(absl::StatusCode::kInvalidArgument, d);
}

}  // namespace

std::vector<std::string> Interpreter::InputNames() const {
  std::vector<std::string> names;
  for (const proto::Tensor& t : graph_.tensors()) {
    if (IsHostInput(t)) names.push_back(t.name());
  }
  return names;
}

std::vector<std::string> Interpreter::OutputNames() const {
  std::vector<std::string> names;
  for (const proto::Tensor& t : graph_.tensors()) {
    if (IsHostOutput(t)) names.push_back(HostOutputName(t));
  }
  return names;
}

std::vector<int64_t> Interpreter::HostShape(const proto::Tensor& t) const {
  std::vector<int64_t> shape;
  if (t.per_rank() && impl_->num_ranks > 1) shape.push_back(impl_->num_ranks);
  shape.insert(shape.end(), t.shape().begin(), t.shape().end());
  return shape;
}

const proto::Tensor* Interpreter::FindInput(const std::string& name) const {
  for (const proto::Tensor& t : graph_.tensors()) {
    if (IsHostInput(t) && t.name() == name) return &t;
  }
  return nullptr;
}

const proto::Tensor* Interpreter::FindOutput(const std::string& name) const {
  for (const proto::Tensor& t : graph_.tensors()) {
    if (IsHostOutput(t) && HostOutputName(t) == name) return &t;
  }
  return nullptr;
}

absl::Status Interpreter::SetInput(const HostArray& array) {
  return SetInputValues(array.name, array.dtype, array.shape,
                        static_cast<int64_t>(array.values()), array.data());
}

absl::Status Interpreter::SetInputValues(const std::string& name,
                                         proto::DType dtype,
                                         const std::vector<int64_t>& shape,
                                         int64_t values, const void* data,
                                         const InputFile* file) {
  // Saturates rather than overflowing on a hostile shape (the count then
  // matches no tensor and the input is refused below).
  const int64_t elements = ShapeElementCount(shape);
  const float* f32 = static_cast<const float*>(data);
  const int32_t* i32 = static_cast<const int32_t*>(data);
  const proto::Tensor* t = FindInput(name);
  if (t == nullptr) {
    return HostError(name,
                     absl::StrCat("'", name, "' is not an input of kernel '",
                                  graph_.kernel_name(), "' (inputs: ",
                                  absl::StrJoin(InputNames(), ", "), ")"));
  }
  const bool stacked = t->per_rank() && impl_->num_ranks > 1;
  const RankBlock held = impl_->block;
  std::vector<int64_t> expected = HostShape(*t);
  // In a process holding some of the ranks, a per-rank input may come as
  // those ranks' rows alone.
  const bool held_rows = stacked && held.size() != impl_->num_ranks &&
                         !shape.empty() && shape[0] == held.size();
  if (held_rows) expected[0] = held.size();
  if (shape != expected) {
    return HostError(
        name, absl::StrCat("input '", name, "' has shape ", ShapeString(shape),
                           "; the graph expects ", ShapeString(expected)));
  }
  const int64_t esize = DTypeSize(t->dtype());
  const bool raw = dtype == proto::UINT16;
  if (raw && esize != 2) {
    return HostError(
        name, absl::StrCat("input '", name,
                           "' is uint16 raw bits, but the graph declares it ",
                           DTypeName(t->dtype()),
                           " (raw bits are taken for 2-byte dtypes only)"));
  }
  const bool integer = !IsFloatDType(t->dtype());
  if (!raw && integer != (dtype == proto::INT32)) {
    return HostError(
        name,
        absl::StrCat("input '", name, "' is ", DTypeName(dtype), "; the graph ",
                     "expects ", integer ? "int32" : "float32", " (declared ",
                     DTypeName(t->dtype()), ")"));
  }
  if (values != elements) {
    return HostError(
        name, absl::StrCat("input '", name, "' has shape ", ShapeString(shape),
                           " but holds ", values, " values"));
  }
  const int64_t per_rank = [&] {
    int64_t n = 1;
    for (int64_t d : t->shape()) n *= d;
    return n;
  }();
  const float fp8_max = ops::ProfileFor(graph_.world().target()).fp8_e4m3_max;
  for (int r = held.first; r < held.end; ++r) {
    Region& region = impl_->memory.RegionFor(*t, r, 0);
    uint8_t* dst = &region.data[t->address()];
    const int64_t first =
        stacked ? (held_rows ? r - held.first : r) * per_rank : 0;
    const bool word = t->dtype() == proto::INT32 || t->dtype() == proto::UINT32;
    if (raw || (integer && word) ||
        (dtype == proto::FLOAT32 && t->dtype() == proto::FLOAT32)) {
      // The values as the device holds them: the file's pages mapped
      // where they can be, copied where they cannot.
      const int64_t bytes = per_rank * esize;
      const uint8_t* src = static_cast<const uint8_t*>(data) + first * esize;
      if (file != nullptr) {
        NKI_RETURN_IF_ERROR(region.data.MapFile(
            t->address(), bytes, file->fd, file->offset + first * esize, src));
      } else {
        std::memcpy(dst, src, bytes);
      }
    } else if (integer) {
      for (int64_t e = 0; e < per_rank; ++e) {
        StoreFromFloat(t->dtype(), static_cast<float>(i32[first + e]),
                       dst + e * esize, fp8_max);
      }
    } else {
      // Rounded a chunk at a time; a file's pages let go once read.
      constexpr int64_t kChunk = int64_t{1} << 22;
      for (int64_t e0 = 0; e0 < per_rank; e0 += kChunk) {
        const int64_t n = std::min(kChunk, per_rank - e0);
        StoreRowFromFloat(t->dtype(), &f32[first + e0], n, dst + e0 * esize,
                          fp8_max);
        if (file != nullptr) ReleasePages(&f32[first + e0], n * 4);
      }
    }
    region.shadow.Set(t->address(), per_rank * esize, kInitialized);
  }
  impl_->input_set[t->id() - 1] = true;
  return absl::OkStatus();
}

absl::Status Interpreter::FillRandomInputs(uint64_t seed) {
  // One draw of the generator per element, whatever the tensor, so the
  // values of one input do not depend on how another's are drawn. Drawn a
  // chunk at a time straight into device memory: the host holds one
  // chunk, however large the input (a model's weights).
  constexpr int64_t kChunk = 16384;
  if (MissingInputs().empty()) return absl::OkStatus();
  const ScopedCharge chunk_charge(
      budget_, kChunk * int64_t{sizeof(float) + sizeof(int32_t)},
      "host memory for drawing random inputs");
  NKI_RETURN_IF_ERROR(chunk_charge.status());
  std::mt19937_64 rng(seed);
  std::vector<float> f32(kChunk);
  std::vector<int32_t> i32(kChunk);
  const RankBlock held = impl_->block;
  const float fp8_max = ops::ProfileFor(graph_.world().target()).fp8_e4m3_max;
  // Large inputs (a model's weights): their fresh pages are faulted in on
  // a second thread while this one draws, when the run may use two.
  std::vector<std::pair<uint8_t*, int64_t>> ranges;
  int64_t fill_bytes = 0;
  for (const proto::Tensor& t : graph_.tensors()) {
    if (!IsHostInput(t) || impl_->input_set[t.id() - 1]) continue;
    int64_t bytes = DTypeSize(t.dtype());
    for (int64_t d : t.shape()) bytes *= d;
    for (int r = held.first; r < held.end; ++r) {
      ranges.emplace_back(&impl_->memory.RegionFor(t, r, 0).data[t.address()],
                          bytes);
      fill_bytes += bytes;
    }
  }
  constexpr int64_t kWarmFrom = int64_t{64} << 20;
  const bool two_threads =
      options_.threads > 1 ||
      (options_.threads <= 0 && std::thread::hardware_concurrency() > 1);
  std::optional<PageWarmer> warmer;
  if (fill_bytes >= kWarmFrom && two_threads) warmer.emplace(std::move(ranges));
  for (const proto::Tensor& t : graph_.tensors()) {
    if (!IsHostInput(t) || impl_->input_set[t.id() - 1]) continue;
    const bool stacked = t.per_rank() && impl_->num_ranks > 1;
    int64_t per_rank = 1;
    for (int64_t d : t.shape()) per_rank *= d;
    const bool floating = IsFloatDType(t.dtype());
    const bool word = t.dtype() == proto::INT32 || t.dtype() == proto::UINT32;
    const int64_t esize = DTypeSize(t.dtype());
    const uint64_t lo = static_cast<uint64_t>(t.value_range().lo());
    // lo + (draw mod the range's size), in unsigned arithmetic so that any
    // [lo, hi] of int64 works (a size of 2^64 wraps to 0: any draw).
    const uint64_t size = static_cast<uint64_t>(t.value_range().hi()) - lo + 1;
    // Draws `n` values into f32 or i32.
    auto draw = [&](int64_t n) {
      for (int64_t e = 0; e < n; ++e) {
        if (t.has_value_range()) {
          const int64_t v =
              static_cast<int64_t>(lo + (size == 0 ? rng() : rng() % size));
          if (floating) {
            f32[e] = static_cast<float>(v);
          } else {
            i32[e] = static_cast<int32_t>(v);
          }
        } else if (floating) {
          // 24 random bits per value: portable, unlike std distributions.
          f32[e] = static_cast<float>(rng() >> 40) * 0x1p-23f - 1.0f;
        } else {
          i32[e] = static_cast<int32_t>(rng() >> 61);
        }
      }
    };
    // Stores f32 or i32's first `n` values at `dst` in the tensor's dtype.
    auto store = [&](int64_t n, uint8_t* dst) {
      if (floating) {
        StoreRowFromFloat(t.dtype(), f32.data(), n, dst, fp8_max);
      } else if (word) {
        std::memcpy(dst, i32.data(), n * 4);
      } else {
        for (int64_t e = 0; e < n; ++e) {
          StoreFromFloat(t.dtype(), static_cast<float>(i32[e]), dst + e * esize,
                         fp8_max);
        }
      }
    };
    if (stacked) {
      // A process holding some of the ranks draws its ranks' values alone,
      // skipping the others' draws.
      rng.discard(held.first * per_rank);
      for (int r = held.first; r < held.end; ++r) {
        Region& region = impl_->memory.RegionFor(t, r, 0);
        uint8_t* dst = &region.data[t.address()];
        for (int64_t e0 = 0; e0 < per_rank; e0 += kChunk) {
          const int64_t n = std::min(kChunk, per_rank - e0);
          draw(n);
          store(n, dst + e0 * esize);
        }
        region.shadow.Set(t.address(), per_rank * esize, kInitialized);
      }
      rng.discard((impl_->num_ranks - held.end) * per_rank);
    } else {
      // One set of values, the same on every rank.
      for (int64_t e0 = 0; e0 < per_rank; e0 += kChunk) {
        const int64_t n = std::min(kChunk, per_rank - e0);
        draw(n);
        for (int r = held.first; r < held.end; ++r) {
          Region& region = impl_->memory.RegionFor(t, r, 0);
          store(n, &region.data[t.address()] + e0 * esize);
        }
      }
      for (int r = held.first; r < held.end; ++r) {
        impl_->memory.RegionFor(t, r, 0).shadow.Set(
            t.address(), per_rank * esize, kInitialized);
      }
    }
    impl_->input_set[t.id() - 1] = true;
  }
  return absl::OkStatus();
}

std::vector<std::string> Interpreter::MissingInputs() const {
  std::vector<std::string> missing;
  for (const proto::Tensor& t : graph_.tensors()) {
    if (IsHostInput(t) && !impl_->input_set[t.id() - 1])
      missing.push_back(t.name());
  }
  return missing;
}

absl::StatusOr<HostArray> Interpreter::ReadTensor(uint32_t tensor_id, int rank,
                                                  int core,
                                                  HostForm form) const {
  if (tensor_id < 1 ||
      tensor_id > static_cast<uint32_t>(graph_.tensors_size()) || rank < 0 ||
      rank >= impl_->num_ranks || core < 0 || core >= impl_->num_cores) {
    return absl::InvalidArgumentError("no such tensor or program");
  }
  if (!impl_->block.Holds(rank)) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " is held by another process of the run"));
  }
  const proto::Tensor& t = graph_.tensors(static_cast<int>(tensor_id) - 1);
  Region& region = impl_->memory.RegionFor(t, rank, core);
  HostArray array;
  array.name = t.name();
  array.shape.assign(t.shape().begin(), t.shape().end());
  const int64_t n = array.num_elements();
  const int64_t esize = DTypeSize(t.dtype());
  const bool floating = IsFloatDType(t.dtype());
  // Row by row: a whole partition row on chip, the whole tensor in HBM;
  // rows entirely written in bulk, the others element by element.
  const int64_t row =
      ops::IsOnChip(t.space()) ? std::max<int64_t>(1, ops::RowElements(t)) : n;
  auto for_each_row = [&](auto&& whole, auto&& one) {
    for (int64_t e0 = 0; e0 < n; e0 += row) {
      const int64_t count = std::min(row, n - e0);
      const int64_t byte0 =
          DeviceMemory::ByteOffset(t, e0, region.partition_bytes);
      if (region.shadow.All(byte0, count * esize, kInitialized)) {
        whole(e0, count, &region.data[byte0]);
        continue;
      }
      for (int64_t e = e0; e < e0 + count; ++e) {
        const int64_t byte = byte0 + (e - e0) * esize;
        one(e, region.shadow.All(byte, esize, kInitialized),
            &region.data[byte]);
      }
    }
  };
  if (form == HostForm::kRawBits16 && esize == 2) {
    // Never-written elements: the dtype's quiet NaN, or 0 for integers.
    const uint16_t unset = t.dtype() == proto::BFLOAT16  ? 0x7FC0
                           : t.dtype() == proto::FLOAT16 ? 0x7E00
                                                         : 0;
    array.dtype = proto::UINT16;
    array.u16.resize(n);
    for_each_row(
        [&](int64_t e0, int64_t count, const uint8_t* src) {
          std::memcpy(&array.u16[e0], src, count * 2);
        },
        [&](int64_t e, bool initialized, const uint8_t* src) {
          if (initialized) {
            std::memcpy(&array.u16[e], src, 2);
          } else {
            array.u16[e] = unset;
          }
        });
    return array;
  }
  array.dtype = floating ? proto::FLOAT32 : proto::INT32;
  if (floating) {
    array.f32.resize(n);
    for_each_row(
        [&](int64_t e0, int64_t count, const uint8_t* src) {
          LoadRowAsFloat(t.dtype(), src, count, &array.f32[e0]);
        },
        [&](int64_t e, bool initialized, const uint8_t* src) {
          array.f32[e] =
              initialized ? LoadAsFloat(t.dtype(), src) : std::nanf("");
        });
    return array;
  }
  array.i32.resize(n);
  const bool word = t.dtype() == proto::INT32 || t.dtype() == proto::UINT32;
  auto load_int = [&](const uint8_t* src) -> int32_t {
    if (word) {
      int32_t raw;
      std::memcpy(&raw, src, 4);
      return raw;
    }
    return static_cast<int32_t>(
        static_cast<int64_t>(LoadAsFloat(t.dtype(), src)));
  };
  for_each_row(
      [&](int64_t e0, int64_t count, const uint8_t* src) {
        if (word) {
          std::memcpy(&array.i32[e0], src, count * 4);
          return;
        }
        for (int64_t e = 0; e < count; ++e) {
          array.i32[e0 + e] = load_int(src + e * esize);
        }
      },
      [&](int64_t e, bool initialized, const uint8_t* src) {
        if (initialized) array.i32[e] = load_int(src);
      });
  return array;
}

absl::StatusOr<HostArray> Interpreter::GetOutput(const std::string& name,
                                                 HostForm form) const {
  const proto::Tensor* t = FindOutput(name);
  if (t == nullptr) {
    return HostError(name,
                     absl::StrCat("'", name, "' is not an output (outputs: ",
                                  absl::StrJoin(OutputNames(), ", "), ")"));
  }
  NKI_ASSIGN_OR_RETURN(HostArray result, ReadHostTensor(*t, form));
  result.name = name;
  return result;
}

absl::StatusOr<HostArray> Interpreter::ReadHostTensor(
    const proto::Tensor& tensor, HostForm form) const {
  const bool stacked = tensor.per_rank() && impl_->num_ranks > 1;
  const RankBlock held = impl_->block;
  // Host tensors lie in HBM, one region per rank, whatever their core:
  // core 0's view reads it.
  constexpr int core = 0;
  HostArray result;
  for (int r = held.first; r < (stacked ? held.end : held.first + 1); ++r) {
    NKI_ASSIGN_OR_RETURN(HostArray part,
                         ReadTensor(tensor.id(), r, core, form));
    if (r == held.first) {
      result = std::move(part);
      // One allocation for every rank's part: stacked outputs of wide
      // graphs are large enough that growing by doubling would briefly
      // hold half as much again.
      if (stacked) {
        result.f32.reserve(result.f32.size() * held.size());
        result.i32.reserve(result.i32.size() * held.size());
        result.u16.reserve(result.u16.size() * held.size());
      }
    } else {
      result.Append(part);
    }
  }
  result.name = tensor.name();
  result.shape = HostShape(tensor);
  if (stacked) result.shape[0] = held.size();
  return result;
}

}  // namespace nkigraph::interp
