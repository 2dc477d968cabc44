#ifndef NKIGRAPH_OPS_DECODED_STREAM_H_
#define NKIGRAPH_OPS_DECODED_STREAM_H_

// A stream's instructions decoded once for execution: each instruction's op
// definition, its operands resolved to tensors with their element counts,
// and its attributes found by spec (ResolvedAttr). Binding an InstrView to
// a decoded instruction then sets a few pointers, where BindInstrView walks
// the operands and every attribute read searches the instruction by name.
//
// Instructions whose operands are the same static patterns of the same
// tensors (a loop's element-wise ops on its tiles, iteration after
// iteration) share one run of decoded operand records: executing a long
// stream then reads a few records that stay in cache instead of about 120
// bytes per operand from memory, and decoding works each one out once.

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "ops/attr_spec.h"
#include "ops/instr_view.h"
#include "ops/op_def.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::ops {

class DecodedStream {
 public:
  // Decodes every instruction of `stream`, which must have passed
  // MakeInstrView against `tensors` and `world` (the graph's CheckGraph);
  // the graph must outlive the result. Fails only on what BindInstrView
  // guards against.
  static absl::StatusOr<DecodedStream> Decode(const proto::Stream& stream,
                                              const TensorTable& tensors,
                                              const proto::World& world);

  int size() const { return static_cast<int>(instrs_.size()); }
  // The decoded operand records the instructions share (at most one run of
  // records per instruction; fewer when operand lists repeat).
  int64_t operand_records() const {
    return static_cast<int64_t>(operands_.size());
  }
  const OpDef& def(int pc) const { return *instrs_[pc].def; }
  // Binds `view` to the instruction at `pc`; valid while this lives.
  // Inline: the interpreter binds every instruction it executes.
  void Bind(int pc, InstrView* view) const {
    const Instr& d = instrs_[pc];
    view->instr_ = d.instr;
    view->def_ = d.def;
    view->world_ = world_;
    view->profile_ = profile_;
    view->num_operands_ = d.num_operands;
    view->operand_list_ = operands_.data() + d.first_operand;
    view->attrs_ = attrs_.data() + d.first_attr;
  }

 private:
  struct Instr {
    const proto::Instruction* instr;
    const OpDef* def;
    uint32_t first_operand;  // into operands_
    uint32_t first_attr;     // into attrs_
    int num_operands;
  };

  std::vector<Instr> instrs_;
  std::vector<OperandInfo> operands_;
  std::vector<ResolvedAttr> attrs_;
  // The viewed tensors of bitcast operands, which operands_ point at: each
  // on the heap, so they stay where they are when the stream is moved.
  std::vector<std::unique_ptr<proto::Tensor>> viewed_;
  const proto::World* world_ = nullptr;
  const DeviceProfile* profile_ = nullptr;
};

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_DECODED_STREAM_H_
