#include "builder/isa.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "builder/emitter.h"
#include "ops/op_def.h"

namespace nkigraph::builder::isa {
namespace {

absl::string_view ReduceCmdName(ReduceCmd cmd) {
  switch (cmd) {
    case ReduceCmd::kIdle:
      return "idle";
    case ReduceCmd::kReset:
      return "reset";
    case ReduceCmd::kReduce:
      return "reduce";
    case ReduceCmd::kResetReduce:
      return "reset_reduce";
  }
  return "idle";
}

std::vector<int64_t> Flatten(const Pattern& pattern) {
  std::vector<int64_t> flat;
  for (const auto& [step, num] : pattern) {
    flat.push_back(step);
    flat.push_back(num);
  }
  return flat;
}

}  // namespace

Instr nc_matmul(const Tensor& dst, const Tensor& stationary,
                const Tensor& moving, bool accumulate, Loc loc) {
  return Emitter(proto::NC_MATMUL, dst, loc)
      .Operand("dst", dst)
      .Operand("stationary", stationary)
      .Operand("moving", moving)
      .Int("accumulate", accumulate ? 1 : 0)
      .Finish();
}

Instr nc_transpose(const Tensor& dst, const Tensor& data, Engine engine,
                   Loc loc) {
  return Emitter(proto::NC_TRANSPOSE, dst, loc)
      .Operand("dst", dst)
      .Operand("data", data)
      .Str("engine", ops::EngineName(engine))
      .Finish();
}

Instr activation(const Tensor& dst, ActFunc func, const Tensor& data,
                 const ActivationArgs& args, Loc loc) {
  Emitter e(proto::ACTIVATION, dst, loc);
  e.Operand("dst", dst)
      .Operand("data", data)
      .Operand("bias", args.bias.vector)
      .Operand("scale", args.scale.vector)
      .Operand("reduce_res", args.reduce_res)
      .Str("func", ops::ActFuncName(func));
  if (!args.scale.vector.valid()) e.Float("scale", args.scale.value);
  if (!args.bias.vector.valid()) e.Float("bias", args.bias.value);
  e.Str("reduce_cmd", ReduceCmdName(args.reduce_cmd));
  return e.Finish();
}

Instr tensor_tensor(const Tensor& dst, const Tensor& data1, const Tensor& data2,
                    Alu op, Loc loc) {
  return Emitter(proto::TENSOR_TENSOR, dst, loc)
      .Operand("dst", dst)
      .Operand("data1", data1)
      .Operand("data2", data2)
      .Str("op", ops::AluName(op))
      .Finish();
}

Instr tensor_scalar(const Tensor& dst, const Tensor& data, Alu op0,
                    const Scalar& operand0, const TensorScalarArgs& args,
                    Loc loc) {
  Emitter e(proto::TENSOR_SCALAR, dst, loc);
  e.Operand("dst", dst)
      .Operand("data", data)
      .Operand("operand0", operand0.vector)
      .Str("op0", ops::AluName(op0));
  if (!operand0.vector.valid()) e.Float("scalar0", operand0.value);
  e.Int("reverse0", args.reverse0 ? 1 : 0);
  if (args.op1) {
    e.Operand("operand1", args.operand1.vector)
        .Str("op1", ops::AluName(*args.op1));
    if (!args.operand1.vector.valid()) e.Float("scalar1", args.operand1.value);
    e.Int("reverse1", args.reverse1 ? 1 : 0);
  }
  return e.Finish();
}

Instr scalar_tensor_tensor(const Tensor& dst, const Tensor& data, Alu op0,
                           const Scalar& operand0, Alu op1,
                           const Tensor& operand1, bool reverse0, bool reverse1,
                           Loc loc) {
  Emitter e(proto::SCALAR_TENSOR_TENSOR, dst, loc);
  e.Operand("dst", dst)
      .Operand("data", data)
      .Operand("operand0", operand0.vector)
      .Operand("operand1", operand1)
      .Str("op0", ops::AluName(op0));
  if (!operand0.vector.valid()) e.Float("scalar0", operand0.value);
  return e.Int("reverse0", reverse0 ? 1 : 0)
      .Str("op1", ops::AluName(op1))
      .Int("reverse1", reverse1 ? 1 : 0)
      .Finish();
}

Instr tensor_tensor_scan(const Tensor& dst, const Tensor& data0,
                         const Tensor& data1, const Scalar& initial, Alu op0,
                         Alu op1, bool reverse0, bool reverse1, Loc loc) {
  Emitter e(proto::TENSOR_TENSOR_SCAN, dst, loc);
  e.Operand("dst", dst)
      .Operand("data0", data0)
      .Operand("data1", data1)
      .Operand("initial", initial.vector)
      .Str("op0", ops::AluName(op0))
      .Str("op1", ops::AluName(op1));
  if (!initial.vector.valid()) e.Float("initial", initial.value);
  return e.Int("reverse0", reverse0 ? 1 : 0)
      .Int("reverse1", reverse1 ? 1 : 0)
      .Finish();
}

Instr tensor_scalar_reduce(const Tensor& dst, const Tensor& data, Alu op0,
                           const Scalar& operand0, Alu reduce_op,
                           const Tensor& reduce_res, bool reverse0, Loc loc) {
  Emitter e(proto::TENSOR_SCALAR_REDUCE, dst, loc);
  e.Operand("dst", dst)
      .Operand("data", data)
      .Operand("operand0", operand0.vector)
      .Operand("reduce_res", reduce_res)
      .Str("op0", ops::AluName(op0));
  if (!operand0.vector.valid()) e.Float("scalar0", operand0.value);
  return e.Int("reverse0", reverse0 ? 1 : 0)
      .Str("reduce_op", ops::AluName(reduce_op))
      .Finish();
}

Instr bn_stats(const Tensor& dst, const Tensor& data, Loc loc) {
  return Emitter(proto::BN_STATS, dst, loc)
      .Operand("dst", dst)
      .Operand("data", data)
      .Finish();
}

Instr bn_aggr(const Tensor& dst, const Tensor& data, Loc loc) {
  return Emitter(proto::BN_AGGR, dst, loc)
      .Operand("dst", dst)
      .Operand("data", data)
      .Finish();
}

Instr tensor_reduce(const Tensor& dst, Alu op, const Tensor& data, int num_axes,
                    bool negate, Loc loc) {
  return Emitter(proto::TENSOR_REDUCE, dst, loc)
      .Operand("dst", dst)
      .Operand("data", data)
      .Str("op", ops::AluName(op))
      .Int("num_axes", num_axes)
      .Int("negate", negate ? 1 : 0)
      .Finish();
}

Instr tensor_copy(const Tensor& dst, const Tensor& src, Engine engine,
                  Loc loc) {
  return Emitter(proto::TENSOR_COPY, dst, loc)
      .Operand("dst", dst)
      .Operand("src", src)
      .Str("engine", ops::EngineName(engine))
      .Finish();
}

Instr tensor_copy_predicated(const Tensor& dst, const Scalar& src,
                             const Tensor& predicate, bool reverse_pred,
                             Loc loc) {
  Emitter e(proto::TENSOR_COPY_PREDICATED, dst, loc);
  e.Operand("dst", dst)
      .Operand("src", src.vector)
      .Operand("predicate", predicate);
  if (!src.vector.valid()) e.Float("src", src.value);
  return e.Int("reverse_pred", reverse_pred ? 1 : 0).Finish();
}

Instr iota(const Tensor& dst, const Pattern& pattern, int64_t offset,
           int64_t channel_multiplier, Loc loc) {
  return Emitter(proto::IOTA, dst, loc)
      .Operand("dst", dst)
      .Ints("pattern", Flatten(pattern))
      .Int("offset", offset)
      .Int("channel_multiplier", channel_multiplier)
      .Finish();
}

Instr memset(const Tensor& dst, float value, Engine engine, Loc loc) {
  return Emitter(proto::MEMSET, dst, loc)
      .Operand("dst", dst)
      .Float("value", value)
      .Str("engine", ops::EngineName(engine))
      .Finish();
}

Instr affine_select(const Tensor& dst, const Pattern& pattern,
                    int64_t channel_multiplier, const Tensor& on_true,
                    float on_false_value, Alu cmp_op, int64_t offset, Loc loc) {
  return Emitter(proto::AFFINE_SELECT, dst, loc)
      .Operand("dst", dst)
      .Operand("on_true", on_true)
      .Ints("pattern", Flatten(pattern))
      .Int("offset", offset)
      .Int("channel_multiplier", channel_multiplier)
      .Float("on_false_value", on_false_value)
      .Str("cmp_op", ops::AluName(cmp_op))
      .Finish();
}

Instr dma_copy(const Tensor& dst, const Tensor& src, Loc loc) {
  return Emitter(proto::DMA_COPY, dst, loc)
      .Operand("dst", dst)
      .Operand("src", src)
      .Finish();
}

Instr dma_transpose(const Tensor& dst, const Tensor& src,
                    const std::vector<int>& axes, Loc loc) {
  return Emitter(proto::DMA_TRANSPOSE, dst, loc)
      .Operand("dst", dst)
      .Operand("src", src)
      .Ints("axes", std::vector<int64_t>(axes.begin(), axes.end()))
      .Finish();
}

Instr dma_compute(const Tensor& dst, const std::vector<Tensor>& srcs,
                  bool accumulate, Loc loc) {
  Emitter e(proto::DMA_COMPUTE, dst, loc);
  e.Operand("dst", dst);
  for (const Tensor& src : srcs) e.Operand("src", src);
  return e.Str("reduce_op", ops::AluName(Alu::kAdd))
      .Int("accumulate", accumulate ? 1 : 0)
      .Finish();
}

Instr nc_find_index8(const Tensor& dst, const Tensor& data, const Tensor& vals,
                     Loc loc) {
  return Emitter(proto::NC_FIND_INDEX8, dst, loc)
      .Operand("dst", dst)
      .Operand("data", data)
      .Operand("vals", vals)
      .Finish();
}

Instr max8(const Tensor& dst, const Tensor& src, Loc loc) {
  return Emitter(proto::MAX8, dst, loc)
      .Operand("dst", dst)
      .Operand("src", src)
      .Finish();
}

Instr nc_stream_shuffle(const Tensor& dst, const Tensor& src,
                        const std::vector<int64_t>& mask, Loc loc) {
  return Emitter(proto::NC_STREAM_SHUFFLE, dst, loc)
      .Operand("dst", dst)
      .Operand("src", src)
      .Ints("mask", mask)
      .Finish();
}

Instr sendrecv(const Tensor& dst, const Tensor& src, int send_to, int recv_from,
               int pipe_id, Loc loc) {
  return Emitter(proto::SENDRECV, dst, loc)
      .Operand("dst", dst)
      .Operand("src", src)
      .Int("send_to", send_to)
      .Int("recv_from", recv_from)
      .Int("pipe_id", pipe_id)
      .Finish();
}

Instr core_barrier(const Tensor& data, Loc loc) {
  return Emitter(proto::CORE_BARRIER, data, loc).Operand("data", data).Finish();
}

Instr all_gather(const Tensor& dst, const Tensor& src, int collective_dim,
                 Loc loc) {
  return Emitter(proto::ALL_GATHER, dst, loc)
      .Operand("dst", dst)
      .Operand("src", src)
      .Int("collective_dim", collective_dim)
      .Finish();
}

Instr all_reduce(const Tensor& dst, const Tensor& src, Alu op, Loc loc) {
  return Emitter(proto::ALL_REDUCE, dst, loc)
      .Operand("dst", dst)
      .Operand("src", src)
      .Str("op", ops::AluName(op))
      .Finish();
}

Instr collective_permute_implicit(const Tensor& dst, const Tensor& src,
                                  int channel, Loc loc) {
  return Emitter(proto::COLLECTIVE_PERMUTE_IMPLICIT, dst, loc)
      .Operand("dst", dst)
      .Operand("src", src)
      .Int("channel", channel)
      .Finish();
}

Instr collective_permute_implicit_current_processing_rank_id(const Tensor& dst,
                                                             int iteration,
                                                             int channel,
                                                             Loc loc) {
  return Emitter(proto::COLLECTIVE_PERMUTE_IMPLICIT_CURRENT_PROCESSING_RANK_ID,
                 dst, loc)
      .Operand("dst", dst)
      .Int("iteration", iteration)
      .Int("channel", channel)
      .Finish();
}

}  // namespace nkigraph::builder::isa
