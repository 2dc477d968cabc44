#ifndef NKIGRAPH_KERNELS_DSL_H_
#define NKIGRAPH_KERNELS_DSL_H_

// The DSL names the kernels are written in, brought into nkigraph::kernels
// once, as an NKI kernel file imports nki.isa: kernel code reads like the
// design notes (isa::nc_matmul, Tensor, TiledRange) without every file
// restating the same using-declarations. Part of this namespace's interface
// on purpose; include it from kernel sources, not from headers other code
// includes.

#include "builder/isa.h"
#include "builder/jit.h"
#include "builder/tensor.h"
#include "builder/tiling.h"
#include "builder/tracer.h"

namespace nkigraph::kernels {

namespace isa = builder::isa;
using builder::Buffer;
using builder::CeilDiv;
using builder::PartitionTile;
using builder::PartitionTiledShape;
using builder::Scope;
using builder::Tensor;
using builder::Tile;
using builder::TiledRange;

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_DSL_H_
