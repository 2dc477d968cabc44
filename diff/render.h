#ifndef NKIGRAPH_DIFF_RENDER_H_
#define NKIGRAPH_DIFF_RENDER_H_

// One-line human-readable text for the parts of a graph a diff shows.

#include <string>

#include "diff/model.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::diff {

// "sbuf bfloat16 [128, 200] @64", plus partition offset, core and role
// when they are not the defaults.
std::string TensorSummary(const proto::Tensor& tensor);
// "lhs_T_tile (sbuf bfloat16 [128, 200])"; "(none)" for id 0.
std::string TensorRefText(const GraphModel& model, uint32_t id);

// "[[200,128],[1,200]]".
std::string PatternText(const proto::AccessPattern& ap);
// "scalar idx[3] dim 0", or "none".
// An operand's bitcast view dtype ("none" for the tensor's own).
std::string ViewText(const proto::AccessPattern& ap);
std::string DynamicText(const GraphModel& model,
                        const proto::AccessPattern& ap);
// "lhs_T_tile[offset=64 ap=[[200,128],[1,200]]]"; "-" when absent.
std::string OperandText(const GraphModel& model,
                        const proto::AccessPattern& ap);
std::string AttrValueText(const proto::Attr& attr);
// "nc_matmul dst=... stationary=... moving=... accumulate=1".
std::string InstrText(const GraphModel& model, const proto::Instruction& instr);
// "kernels/tiled_matmul.cc:73", "" when unknown.
std::string SourceText(const proto::Graph& graph,
                       const proto::Instruction& instr);
// The scope path, "" at the top level.
std::string ScopeText(const proto::Graph& graph,
                      const proto::Instruction& instr);

}  // namespace nkigraph::diff

#endif  // NKIGRAPH_DIFF_RENDER_H_
