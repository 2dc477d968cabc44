#ifndef NKIGRAPH_OPS_OP_DEFS_H_
#define NKIGRAPH_OPS_OP_DEFS_H_

// One accessor per op; each is defined in the op's own file
// (ops/<name>.cc) and listed once in ops/op_table.cc.

#include "ops/op_def.h"

namespace nkigraph::ops {

const OpDef& NcMatmulOp();
const OpDef& NcTransposeOp();
const OpDef& ActivationOp();
const OpDef& TensorTensorOp();
const OpDef& TensorScalarOp();
const OpDef& TensorReduceOp();
const OpDef& TensorCopyOp();
const OpDef& IotaOp();
const OpDef& MemsetOp();
const OpDef& AffineSelectOp();
const OpDef& DmaCopyOp();
const OpDef& DmaTransposeOp();
const OpDef& DmaComputeOp();
const OpDef& NcFindIndex8Op();
const OpDef& Max8Op();
const OpDef& NcStreamShuffleOp();
const OpDef& SendRecvOp();
const OpDef& CoreBarrierOp();
const OpDef& AllGatherOp();
const OpDef& AllReduceOp();
const OpDef& CollectivePermuteImplicitOp();
const OpDef& CollectivePermuteImplicitCurrentProcessingRankIdOp();

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_OP_DEFS_H_
