#include "builder/isa.h"

#include "absl/strings/str_cat.h"

namespace nkigraph::builder::isa {
namespace {

// Builds one instruction: operands in role order, then attributes, then the
// op's checks.
class Emitter {
 public:
  Emitter(proto::Opcode opcode, const Tensor& anchor, Loc loc) : loc_(loc) {
    tracer_ = anchor.valid() ? anchor.tracer() : Tracer::Current();
    if (tracer_ != nullptr) instr_ = tracer_->BeginInstr(opcode, loc);
  }

  Emitter& Operand(const Tensor& t) {
    if (instr_ != nullptr) tracer_->AddOperand(instr_, t, loc_);
    return *this;
  }
  Emitter& Int(const char* name, int64_t value) {
    if (instr_ != nullptr) NewAttr(name)->set_i(value);
    return *this;
  }
  Emitter& Float(const char* name, double value) {
    if (instr_ != nullptr) NewAttr(name)->set_f(value);
    return *this;
  }
  Emitter& Str(const char* name, absl::string_view value) {
    if (instr_ != nullptr) NewAttr(name)->set_s(value.data(), value.size());
    return *this;
  }
  Emitter& Ints(const char* name, const std::vector<int64_t>& values) {
    if (instr_ != nullptr) {
      auto* list = NewAttr(name)->mutable_ints()->mutable_values();
      list->Add(values.begin(), values.end());
    }
    return *this;
  }
  Instr Finish() {
    if (tracer_ == nullptr) return Instr{};
    return tracer_->FinishInstr(instr_, loc_);
  }

 private:
  proto::Attr* NewAttr(const char* name) {
    proto::Attr* attr = instr_->add_attrs();
    attr->set_name(name);
    return attr;
  }

  Tracer* tracer_ = nullptr;
  proto::Instruction* instr_ = nullptr;
  Loc loc_;
};

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
  Emitter e(proto::NC_MATMUL, dst, loc);
  e.Operand(dst).Operand(stationary).Operand(moving);
  if (accumulate) e.Int("accumulate", 1);
  return e.Finish();
}

Instr nc_transpose(const Tensor& dst, const Tensor& data, Engine engine,
                   Loc loc) {
  Emitter e(proto::NC_TRANSPOSE, dst, loc);
  e.Operand(dst).Operand(data);
  if (engine != Engine::kTensor) e.Str("engine", ops::EngineName(engine));
  return e.Finish();
}

Instr activation(const Tensor& dst, ActFunc func, const Tensor& data,
                 const ActivationArgs& args, Loc loc) {
  Emitter e(proto::ACTIVATION, dst, loc);
  e.Operand(dst)
      .Operand(data)
      .Operand(args.bias.vector)
      .Operand(args.scale.vector)
      .Operand(args.reduce_res)
      .Str("func", ops::ActFuncName(func));
  if (!args.scale.vector.valid() && args.scale.value != 1.0f) {
    e.Float("scale", args.scale.value);
  }
  if (!args.bias.vector.valid() && args.bias.value != 0.0f) {
    e.Float("bias", args.bias.value);
  }
  if (args.reduce_cmd != ReduceCmd::kIdle) {
    e.Str("reduce_cmd", ReduceCmdName(args.reduce_cmd));
  }
  return e.Finish();
}

Instr tensor_tensor(const Tensor& dst, const Tensor& data1, const Tensor& data2,
                    Alu op, Loc loc) {
  return Emitter(proto::TENSOR_TENSOR, dst, loc)
      .Operand(dst)
      .Operand(data1)
      .Operand(data2)
      .Str("op", ops::AluName(op))
      .Finish();
}

Instr tensor_scalar(const Tensor& dst, const Tensor& data, Alu op0,
                    const Scalar& operand0, const TensorScalarArgs& args,
                    Loc loc) {
  Emitter e(proto::TENSOR_SCALAR, dst, loc);
  e.Operand(dst)
      .Operand(data)
      .Operand(operand0.vector)
      .Operand(args.op1 ? args.operand1.vector : Tensor())
      .Str("op0", ops::AluName(op0));
  if (!operand0.vector.valid()) e.Float("scalar0", operand0.value);
  if (args.reverse0) e.Int("reverse0", 1);
  if (args.op1) {
    e.Str("op1", ops::AluName(*args.op1));
    if (!args.operand1.vector.valid()) e.Float("scalar1", args.operand1.value);
    if (args.reverse1) e.Int("reverse1", 1);
  }
  return e.Finish();
}

Instr tensor_reduce(const Tensor& dst, Alu op, const Tensor& data, int num_axes,
                    bool negate, Loc loc) {
  Emitter e(proto::TENSOR_REDUCE, dst, loc);
  e.Operand(dst).Operand(data).Str("op", ops::AluName(op));
  if (num_axes != 1) e.Int("num_axes", num_axes);
  if (negate) e.Int("negate", 1);
  return e.Finish();
}

Instr tensor_copy(const Tensor& dst, const Tensor& src, Engine engine,
                  Loc loc) {
  Emitter e(proto::TENSOR_COPY, dst, loc);
  e.Operand(dst).Operand(src);
  if (engine != Engine::kVector) e.Str("engine", ops::EngineName(engine));
  return e.Finish();
}

Instr iota(const Tensor& dst, const Pattern& pattern, int64_t offset,
           int64_t channel_multiplier, Loc loc) {
  return Emitter(proto::IOTA, dst, loc)
      .Operand(dst)
      .Ints("pattern", Flatten(pattern))
      .Int("offset", offset)
      .Int("channel_multiplier", channel_multiplier)
      .Finish();
}

Instr memset(const Tensor& dst, float value, Engine engine, Loc loc) {
  Emitter e(proto::MEMSET, dst, loc);
  e.Operand(dst).Float("value", value);
  if (engine != Engine::kVector) e.Str("engine", ops::EngineName(engine));
  return e.Finish();
}

Instr affine_select(const Tensor& dst, const Pattern& pattern,
                    int64_t channel_multiplier, const Tensor& on_true,
                    float on_false_value, Alu cmp_op, int64_t offset, Loc loc) {
  return Emitter(proto::AFFINE_SELECT, dst, loc)
      .Operand(dst)
      .Operand(on_true)
      .Ints("pattern", Flatten(pattern))
      .Int("offset", offset)
      .Int("channel_multiplier", channel_multiplier)
      .Float("on_false_value", on_false_value)
      .Str("cmp_op", ops::AluName(cmp_op))
      .Finish();
}

Instr dma_copy(const Tensor& dst, const Tensor& src, Loc loc) {
  return Emitter(proto::DMA_COPY, dst, loc).Operand(dst).Operand(src).Finish();
}

Instr dma_transpose(const Tensor& dst, const Tensor& src,
                    const std::vector<int>& axes, Loc loc) {
  return Emitter(proto::DMA_TRANSPOSE, dst, loc)
      .Operand(dst)
      .Operand(src)
      .Ints("axes", std::vector<int64_t>(axes.begin(), axes.end()))
      .Finish();
}

Instr dma_compute(const Tensor& dst, const std::vector<Tensor>& srcs,
                  bool accumulate, Loc loc) {
  Emitter e(proto::DMA_COMPUTE, dst, loc);
  e.Operand(dst);
  for (const Tensor& src : srcs) e.Operand(src);
  return e.Str("reduce_op", "add")
      .Int("accumulate", accumulate ? 1 : 0)
      .Finish();
}

Instr nc_find_index8(const Tensor& dst, const Tensor& data, const Tensor& vals,
                     Loc loc) {
  return Emitter(proto::NC_FIND_INDEX8, dst, loc)
      .Operand(dst)
      .Operand(data)
      .Operand(vals)
      .Finish();
}

Instr max8(const Tensor& dst, const Tensor& src, Loc loc) {
  return Emitter(proto::MAX8, dst, loc).Operand(dst).Operand(src).Finish();
}

Instr nc_stream_shuffle(const Tensor& dst, const Tensor& src,
                        const std::vector<int64_t>& mask, Loc loc) {
  return Emitter(proto::NC_STREAM_SHUFFLE, dst, loc)
      .Operand(dst)
      .Operand(src)
      .Ints("mask", mask)
      .Finish();
}

Instr sendrecv(const Tensor& dst, const Tensor& src, int send_to, int recv_from,
               int pipe_id, Loc loc) {
  return Emitter(proto::SENDRECV, dst, loc)
      .Operand(dst)
      .Operand(src)
      .Int("send_to", send_to)
      .Int("recv_from", recv_from)
      .Int("pipe_id", pipe_id)
      .Finish();
}

Instr core_barrier(const Tensor& data, Loc loc) {
  return Emitter(proto::CORE_BARRIER, data, loc).Operand(data).Finish();
}

Instr all_gather(const Tensor& dst, const Tensor& src, int collective_dim,
                 Loc loc) {
  return Emitter(proto::ALL_GATHER, dst, loc)
      .Operand(dst)
      .Operand(src)
      .Int("collective_dim", collective_dim)
      .Finish();
}

Instr all_reduce(const Tensor& dst, const Tensor& src, Alu op, Loc loc) {
  return Emitter(proto::ALL_REDUCE, dst, loc)
      .Operand(dst)
      .Operand(src)
      .Str("op", ops::AluName(op))
      .Finish();
}

Instr collective_permute_implicit(const Tensor& dst, const Tensor& src,
                                  int channel, Loc loc) {
  return Emitter(proto::COLLECTIVE_PERMUTE_IMPLICIT, dst, loc)
      .Operand(dst)
      .Operand(src)
      .Int("channel", channel)
      .Finish();
}

Instr collective_permute_implicit_current_processing_rank_id(const Tensor& dst,
                                                             int iteration,
                                                             int channel,
                                                             Loc loc) {
  return Emitter(proto::COLLECTIVE_PERMUTE_IMPLICIT_CURRENT_PROCESSING_RANK_ID,
                 dst, loc)
      .Operand(dst)
      .Int("iteration", iteration)
      .Int("channel", channel)
      .Finish();
}

}  // namespace nkigraph::builder::isa
