// The tracer's on-chip allocation: placing SBUF and PSUM tensors (on the
// scope stack, or on the heap a front-end frees from), freeing them, and
// views a front-end builds from raw patterns.
#include "absl/strings/str_cat.h"
#include "builder/tracer.h"
#include "ops/device_profile.h"
#include "ops/instr_facts.h"
#include "util/diagnostic.h"
#include "util/dtype.h"

namespace nkigraph::builder {

bool Tracer::AllocateOnChip(proto::Tensor* tensor, Loc loc) {
  const ops::DeviceProfile& profile = ops::ProfileFor(config_.world.target);
  if (tensor->shape(0) > profile.num_partitions) {
    RecordError(MakeTensorDiagnostic(
                    DiagnosticKind::kTrace, tensor->id(), tensor->name(),
                    absl::StrCat("on-chip tensor '", tensor->name(), "' has ",
                                 tensor->shape(0),
                                 " partitions; the partition dim is "
                                 "at most ",
                                 profile.num_partitions)),
                loc);
    return false;
  }
  int64_t row = DTypeSize(tensor->dtype());
  for (int d = 1; d < tensor->shape_size(); ++d) row *= tensor->shape(d);
  const OnChipStack::Placement placement =
      config_.explicit_release
          ? on_chip_heap_.Allocate(tensor->space(), row, tensor->id(), profile)
          : on_chip_.Allocate(tensor->space(), row, tensor->id(), profile);
  if (!placement.fits(row)) {
    RecordError(MakeTensorDiagnostic(
                    DiagnosticKind::kTrace, tensor->id(), tensor->name(),
                    absl::StrCat(
                        ops::SpaceName(tensor->space()),
                        " capacity exceeded: '", tensor->name(), "' needs ",
                        row, " bytes per partition at offset ",
                        placement.address, ", but a ", profile.name,
                        " partition holds ", placement.capacity, " bytes (",
                        placement.address, " already in use by live tensors)")),
                loc);
    return false;
  }
  tensor->set_address(placement.address);
  tensor->set_live_begin(StreamPosition());
  return true;
}

void Tracer::Release(uint32_t id, Loc loc) {
  if (failed()) return;
  if (!config_.explicit_release) {
    RecordError("Release needs a trace with explicit_release", loc);
    return;
  }
  if (!on_chip_heap_.Free(id)) {
    RecordError(absl::StrCat("tensor ", id,
                             " is not a live on-chip tensor "
                             "of this core"),
                loc);
    return;
  }
  graph_->mutable_tensors(static_cast<int>(id) - 1)
      ->set_live_end(StreamPosition());
}

Tensor Tracer::View(uint32_t id, int64_t offset,
                    absl::Span<const int64_t> pattern, Loc loc) {
  if (failed()) return Tensor();
  if (id < 1 || static_cast<int>(id) > graph_->tensors_size()) {
    RecordError(absl::StrCat("no tensor ", id), loc);
    return Tensor();
  }
  if (pattern.empty() || pattern.size() % 2 != 0 ||
      pattern.size() > 2 * ops::kMaxDims) {
    RecordError(absl::StrCat("a view of '", decl(id).name(), "' has ",
                             pattern.size(), " pattern values; it takes 1 to ",
                             ops::kMaxDims, " [stride, count] pairs"),
                loc);
    return Tensor();
  }
  return Tensor(this, id, offset,
                Tensor::Pattern(pattern.begin(), pattern.end()));
}

}  // namespace nkigraph::builder
