#ifndef NKIGRAPH_KERNELS_KERNEL_IO_H_
#define NKIGRAPH_KERNELS_KERNEL_IO_H_

// A kernel's inputs and outputs for one parameter setting: its I/O table
// (kernels/kernel_spec.h) evaluated, and the two things that read it — the
// kernel body at trace time (KernelIo: declares the inputs and allocates
// the outputs with the table's shapes and dtypes, publishes the outputs)
// and the host side (HostIo: the references' and input makers' arrays in
// the .npy layouts of the contract).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "builder/tensor.h"
#include "builder/tracer.h"
#include "proto/nkigraph.pb.h"
#include "util/host_array.h"

namespace nkigraph::kernels {

enum class IoRole {
  kInput,
  kOutput,
  // Declared as an input and published, written in place, as the output of
  // the same name (a KV cache updated in place).
  kInputOutput,
};

// Whole numbers in [lo, hi], both included: the values an input is meant
// to hold (an expert index in [0, E − 1], a 0/1 mask in [0, 1]). Recorded
// in the graph's tensor declaration; random inputs are drawn from it.
using builder::ValueRange;

// One row of a kernel's I/O table for one parameter setting.
struct IoDecl {
  std::string name;
  IoRole role = IoRole::kInput;
  std::vector<int64_t> shape;
  proto::DType dtype = proto::FLOAT32;
  // Each rank has its own values (a leading [num_ranks] axis in the .npy
  // of a multi-rank graph); false: every rank holds the same values.
  bool per_rank = true;
  // False when the row's condition does not hold (`bias` with bias=0):
  // the tensor does not exist for this setting.
  bool present = true;
  std::optional<ValueRange> values;  // inputs only
  // Host arrays of this 2-byte tensor are uint16 raw bits, not values.
  bool raw_bits = false;
};

// The I/O table as the kernel body sees it while tracing one core. Every
// present input of the table must be declared, and every present output
// produced, by the body on every core; Finish() publishes the outputs in
// table order. Mistakes (a name the table lacks, an input declared twice,
// an output never produced) become the trace's error.
class KernelIo {
 public:
  KernelIo(builder::Tracer& tracer, std::string kernel,
           const std::vector<IoDecl>& decls);

  // Declares the input (or input-output) `name` with the table's shape,
  // dtype, per-rank flag and value range. An invalid Tensor when the row is
  // absent for these parameters (or on error).
  builder::Tensor Input(absl::string_view name,
                        builder::Loc loc = builder::Loc::current());
  // Allocates the output `name` in shared HBM with the table's shape and
  // dtype; it is published by Finish(). Invalid when absent.
  builder::Tensor Output(absl::string_view name,
                         builder::Loc loc = builder::Loc::current());
  // Publishes an existing tensor (an input written in place, say) as the
  // output `name`; it must have the table's shape and dtype. Returns it.
  builder::Tensor Output(absl::string_view name, const builder::Tensor& tensor,
                         builder::Loc loc = builder::Loc::current());

  // After the body, on each core: publishes the outputs, and records an
  // error for a table row the body left out.
  void Finish();

 private:
  struct Slot {
    IoDecl decl;
    builder::Tensor tensor;
    bool declared = false;
  };
  // The row `name`, an output row when `output` (an input-output row is an
  // input); null and an error recorded when there is none, it has the other
  // role, or it was declared already.
  Slot* Find(absl::string_view name, bool output, builder::Loc loc);
  // The error message prefix naming the kernel.
  std::string Where() const;

  builder::Tracer& tracer_;
  std::string kernel_;
  std::vector<Slot> slots_;
};

// Records a refused `status` as the error of the trace being recorded (a
// kernel that plans its tiling at trace time and finds the plan refused);
// true when it is OK.
bool TraceOk(const absl::Status& status,
             builder::Loc loc = builder::Loc::current());

// The I/O table on the host, for a kernel's reference and input maker:
// arrays in the contract's .npy layouts (a leading [num_ranks] axis on
// per-rank tensors of a multi-rank world), float32 for floating tensors and
// int32 for integer ones.
class HostIo {
 public:
  HostIo(std::vector<IoDecl> decls, int64_t num_ranks);

  // Finds every input row present for these parameters among `inputs`,
  // checked for shape and dtype; an error naming the input when one is
  // missing or misshapen. `inputs` must outlive this HostIo.
  absl::Status BindInputs(const HostArrays& inputs);
  // A bound input; an empty array for a row that is absent (or unbound).
  const HostArray& In(absl::string_view name) const;
  // A bound input, or nullptr for a row absent for these parameters
  // (`bias` with bias=0).
  const HostArray* Optional(absl::string_view name) const;
  // A zero array named `name` with the row's host shape (float32, or int32
  // for an integer row). A name the table lacks gives an empty array.
  HostArray Zeros(absl::string_view name) const;
  // The host shape of row `name` (empty for a name the table lacks).
  std::vector<int64_t> Shape(absl::string_view name) const;
  int64_t num_ranks() const { return num_ranks_; }

 private:
  // The row `name` and its bound input (nullptr when none).
  struct Row {
    IoDecl decl;
    const HostArray* input = nullptr;
    // The input converted to this row's host form, when it came in the
    // other (uint16 raw bits or float32 values); `input` points at it.
    std::shared_ptr<const HostArray> converted;
  };
  const Row* Find(absl::string_view name) const;

  std::vector<Row> rows_;
  int64_t num_ranks_;
};

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_KERNEL_IO_H_
