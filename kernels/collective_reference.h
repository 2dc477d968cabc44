#ifndef NKIGRAPH_KERNELS_COLLECTIVE_REFERENCE_H_
#define NKIGRAPH_KERNELS_COLLECTIVE_REFERENCE_H_

// Host-side helpers for the references of the collective kernels: per-rank
// arrays carry a leading [num_ranks] axis (none when there is one rank),
// and rank r's replica group is [g·tp, (g+1)·tp) with g = r / tp.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/kernel_io.h"
#include "proto/nkigraph.pb.h"
#include "util/host_array.h"

namespace nkigraph::kernels {

// Bound per-rank input `name` of the kernel's I/O table split into its
// io.num_ranks() arrays, each value rounded to `dtype` as the device
// stores it.
std::vector<std::vector<float>> PerRankInput(const HostIo& io,
                                             const std::string& name,
                                             proto::DType dtype);

// The float32 output `name` of the I/O table stacking `per_rank`.
HostArray PerRankOutput(const HostIo& io, const std::string& name,
                        const std::vector<std::vector<float>>& per_rank);

// The ranks of `rank`'s replica group, in ring order.
std::vector<int64_t> GroupRanks(int64_t rank, int64_t tp_degree);

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_COLLECTIVE_REFERENCE_H_
