#include "kernels/all_kernels.h"

#include "kernels/attention_block_tkg.h"
#include "kernels/blockwise_mm_bwd.h"
#include "kernels/bwmm_shard_on_h.h"
#include "kernels/conv1d.h"
#include "kernels/cross_entropy_backward.h"
#include "kernels/cross_entropy_forward.h"
#include "kernels/depthwise_conv1d.h"
#include "kernels/fg_allgather.h"
#include "kernels/fgcc.h"
#include "kernels/mlp_tkg.h"
#include "kernels/sb2sb_allgather.h"
#include "kernels/tiled_matmul.h"
#include "kernels/topk_reduce.h"
#include "kernels/transformer_tkg.h"

namespace nkigraph::kernels {

void RegisterAllKernels(KernelRegistry& registry) {
  registry.Register(TiledMatmulSpec());
  registry.Register(BwmmShardOnHSpec());
  registry.Register(BlockwiseMmBwdSpec());
  registry.Register(Conv1dSpec());
  registry.Register(DepthwiseConv1dSpec());
  registry.Register(CrossEntropyForwardSpec());
  registry.Register(CrossEntropyBackwardSpec());
  registry.Register(FgccSpec());
  registry.Register(FgAllgatherSpec());
  registry.Register(Sb2sbAllgatherSpec());
  registry.Register(Sb2sbAllgatherTiledSpec());
  registry.Register(MlpTkgSpec());
  registry.Register(AttentionBlockTkgSpec());
  registry.Register(TransformerTkgSpec());
  registry.Register(TopkReduceSpec());
}

}  // namespace nkigraph::kernels
