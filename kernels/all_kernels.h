#ifndef NKIGRAPH_KERNELS_ALL_KERNELS_H_
#define NKIGRAPH_KERNELS_ALL_KERNELS_H_

#include "kernels/registry.h"

namespace nkigraph::kernels {

// Registers every kernel of the project, in a fixed order. The one list of
// kernels: KernelRegistry::Global() calls it once.
void RegisterAllKernels(KernelRegistry& registry);

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_ALL_KERNELS_H_
