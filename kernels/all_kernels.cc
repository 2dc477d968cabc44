#include "kernels/all_kernels.h"

#include "kernels/tiled_matmul.h"

namespace nkigraph::kernels {

void RegisterAllKernels(KernelRegistry& registry) {
  RegisterTiledMatmul(registry);
}

}  // namespace nkigraph::kernels
