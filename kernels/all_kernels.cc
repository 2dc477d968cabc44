#include "kernels/all_kernels.h"

#include "kernels/blockwise_mm_bwd.h"
#include "kernels/bwmm_shard_on_h.h"
#include "kernels/conv1d.h"
#include "kernels/cross_entropy_backward.h"
#include "kernels/cross_entropy_forward.h"
#include "kernels/depthwise_conv1d.h"
#include "kernels/fg_allgather.h"
#include "kernels/fgcc.h"
#include "kernels/sb2sb_allgather.h"
#include "kernels/tiled_matmul.h"

namespace nkigraph::kernels {

void RegisterAllKernels(KernelRegistry& registry) {
  RegisterTiledMatmul(registry);
  RegisterBwmmShardOnH(registry);
  RegisterBlockwiseMmBwd(registry);
  RegisterConv1d(registry);
  RegisterDepthwiseConv1d(registry);
  RegisterCrossEntropyForward(registry);
  RegisterCrossEntropyBackward(registry);
  RegisterFgcc(registry);
  RegisterFgAllgather(registry);
  RegisterSb2sbAllgather(registry);
  RegisterSb2sbAllgatherTiled(registry);
}

}  // namespace nkigraph::kernels
