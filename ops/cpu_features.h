#ifndef NKIGRAPH_OPS_CPU_FEATURES_H_
#define NKIGRAPH_OPS_CPU_FEATURES_H_

// The instruction sets this processor has, as the vector paths of the row
// kernels, the exp, block copies and the matmul kernel choose among them
// (each path is compiled for its set with a target attribute and taken
// only where the processor runs it). Read once, on first use.

namespace nkigraph::ops {

bool CpuHasAvx2();
// AVX2 and FMA.
bool CpuHasAvx2Fma();
bool CpuHasAvx512F();
// AVX-512 F with BW and VL (byte/word and 256-bit forms).
bool CpuHasAvx512FBwVl();

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_CPU_FEATURES_H_
