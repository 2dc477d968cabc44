#ifndef NKIGRAPH_INTERP_TENSOR_SNAPSHOT_H_
#define NKIGRAPH_INTERP_TENSOR_SNAPSHOT_H_

// The bytes and shadow state one program's copy of a tensor holds, saved
// to be put back: a run across processes that reports every write (dumps)
// undoes what executing a collective wrote after the call where a member
// held by another process failed, so memory is what one process, which
// stops at that call, leaves.

#include <cstdint>
#include <vector>

#include "interp/device_memory.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::interp {

class TensorSnapshot {
 public:
  // Saves `tensor` as program (rank, core) sees it in `memory`.
  static TensorSnapshot Take(DeviceMemory& memory, const proto::Tensor& tensor,
                             int rank, int core);
  // Puts the saved bytes and shadow state back.
  void Restore(DeviceMemory& memory) const;

 private:
  // One contiguous run of the tensor's bytes in its region: a partition's
  // row on chip, the whole tensor in HBM.
  struct Span {
    int64_t byte;
    std::vector<uint8_t> data;
    std::vector<uint8_t> shadow;
  };
  const proto::Tensor* tensor_ = nullptr;
  int rank_ = 0;
  int core_ = 0;
  std::vector<Span> spans_;
};

}  // namespace nkigraph::interp

#endif  // NKIGRAPH_INTERP_TENSOR_SNAPSHOT_H_
