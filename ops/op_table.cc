// The table of every op nkigraph knows, indexed by opcode.
#include <array>

#include "ops/op_def.h"
#include "ops/op_defs.h"

namespace nkigraph::ops {
namespace {

std::vector<const OpDef*> BuildTable() {
  const OpDef* const ops[] = {
      &NcMatmulOp(),
      &NcTransposeOp(),
      &ActivationOp(),
      &TensorTensorOp(),
      &TensorScalarOp(),
      &TensorReduceOp(),
      &TensorCopyOp(),
      &IotaOp(),
      &MemsetOp(),
      &AffineSelectOp(),
      &DmaCopyOp(),
      &DmaTransposeOp(),
      &DmaComputeOp(),
      &NcFindIndex8Op(),
      &Max8Op(),
      &NcStreamShuffleOp(),
      &SendRecvOp(),
      &CoreBarrierOp(),
      &AllGatherOp(),
      &AllReduceOp(),
      &CollectivePermuteImplicitOp(),
      &CollectivePermuteImplicitCurrentProcessingRankIdOp(),
  };
  std::vector<const OpDef*> table(proto::Opcode_ARRAYSIZE, nullptr);
  for (const OpDef* op : ops) table[op->opcode] = op;
  return table;
}

const std::vector<const OpDef*>& Table() {
  static const std::vector<const OpDef*>* table =
      new std::vector<const OpDef*>(BuildTable());
  return *table;
}

const std::vector<const OpDef*>& Dense() {
  static const std::vector<const OpDef*>* dense = [] {
    auto* ops = new std::vector<const OpDef*>;
    for (const OpDef* op : Table()) {
      if (op != nullptr) ops->push_back(op);
    }
    return ops;
  }();
  return *dense;
}

}  // namespace

const OpDef* FindOp(proto::Opcode opcode) {
  const auto& table = Table();
  if (opcode < 0 || static_cast<size_t>(opcode) >= table.size()) return nullptr;
  return table[opcode];
}

const OpDef* FindOpByName(absl::string_view name) {
  for (const OpDef* op : Dense()) {
    if (op->name == name) return op;
  }
  return nullptr;
}

absl::Span<const OpDef* const> AllOps() { return Dense(); }

absl::string_view EngineName(Engine engine) {
  switch (engine) {
    case Engine::kTensor:
      return "tensor";
    case Engine::kVector:
      return "vector";
    case Engine::kScalar:
      return "scalar";
    case Engine::kGpSimd:
      return "gpsimd";
    case Engine::kDma:
      return "dma";
    case Engine::kSync:
      return "sync";
    case Engine::kCollective:
      return "collective";
  }
  return "unknown";
}

}  // namespace nkigraph::ops
