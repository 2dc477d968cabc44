#include "ops/instr_view.h"

#include <algorithm>
#include <array>
#include <vector>

#include "absl/strings/str_join.h"
#include "ops/access_pattern.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::ops {

absl::string_view SpaceName(proto::MemorySpace space) {
  switch (space) {
    case proto::HBM:
      return "hbm";
    case proto::SHARED_HBM:
      return "shared_hbm";
    case proto::SBUF:
      return "sbuf";
    case proto::PSUM:
      return "psum";
    default:
      return "invalid_space";
  }
}

std::string SpaceSetName(SpaceSet spaces) {
  std::vector<absl::string_view> names;
  for (proto::MemorySpace s :
       {proto::HBM, proto::SHARED_HBM, proto::SBUF, proto::PSUM}) {
    if (spaces & Space(s)) names.push_back(SpaceName(s));
  }
  return absl::StrJoin(names, " or ");
}

absl::string_view InstrView::RoleName(int i) const {
  const OperandRole* role = OperandRoleOf(*def_, i);
  return role != nullptr ? role->name : absl::string_view("?");
}

namespace {

absl::Status CheckDynamicOffset(const PatternRef& ap,
                                const proto::Tensor& indexed,
                                const TensorTable& tensors) {
  if (!ap.has_dynamic ||
      ap.dynamic.kind == proto::DynamicOffset::KIND_UNSPECIFIED) {
    return absl::OkStatus();
  }
  const DynamicRef& dyn = ap.dynamic;
  if (!proto::DynamicOffset::Kind_IsValid(dyn.kind) ||
      !proto::DynamicOffset::OobMode_IsValid(dyn.oob_mode)) {
    return absl::InvalidArgumentError("dynamic offset has an unknown kind");
  }
  if (dyn.tensor_id < 1 ||
      dyn.tensor_id > static_cast<uint32_t>(tensors.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("dynamic offset names tensor id ", dyn.tensor_id,
                     ", which does not exist"));
  }
  const proto::Tensor& index = tensors.Get(dyn.tensor_id - 1);
  if (index.dtype() != proto::INT32 && index.dtype() != proto::UINT32) {
    return absl::InvalidArgumentError(
        absl::StrCat("dynamic offset tensor '", index.name(), "' is ",
                     DTypeName(index.dtype()), "; it must be int32 or uint32"));
  }
  if (index.space() == proto::PSUM) {
    return absl::InvalidArgumentError(
        absl::StrCat("dynamic offset tensor '", index.name(), "' is in psum"));
  }
  if (dyn.kind == proto::DynamicOffset::VECTOR && !IsHbm(indexed.space())) {
    return absl::InvalidArgumentError(
        absl::StrCat("a vector dynamic offset indexes an HBM tensor; '",
                     indexed.name(), "' is in ", SpaceName(indexed.space())));
  }
  if (dyn.indirect_dim >= static_cast<uint32_t>(indexed.shape_size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("indirect_dim ", dyn.indirect_dim, " is not a dim of '",
                     indexed.name(), "' (rank ", indexed.shape_size(), ")"));
  }
  int64_t index_elements = 1;
  for (int64_t d : index.shape()) index_elements *= d;
  const int64_t entries =
      dyn.kind == proto::DynamicOffset::VECTOR ? ap.pattern[1] : 1;
  const int64_t stride =
      dyn.kind == proto::DynamicOffset::VECTOR ? dyn.offset_stride : 0;
  if (stride < 0 || stride > kMaxElements) {
    return absl::InvalidArgumentError("dynamic offset stride is absurd");
  }
  int64_t last = 0;
  if (__builtin_mul_overflow(stride, entries - 1, &last) ||
      __builtin_add_overflow(dyn.offset_element, last, &last)) {
    return absl::InvalidArgumentError(
        "dynamic offset entries reach beyond the int64 range");
  }
  if (dyn.offset_element < 0 || last >= index_elements) {
    return absl::OutOfRangeError(absl::StrCat(
        "dynamic offset reads elements [", dyn.offset_element, ", ", last,
        "] of '", index.name(), "', which has ", index_elements));
  }
  return absl::OkStatus();
}

}  // namespace

namespace {

// Resets `info` to an absent operand with unknown facts. Field by field:
// assigning OperandInfo{} clears all of OperandFacts too, a `rep stos`
// that cost about 4% of tracing, and a view made for checking reads no
// fact of an operand whose facts are unknown.
void ClearForChecking(OperandInfo* info) {
  info->ap = nullptr;
  info->ref = nullptr;
  info->tensor = nullptr;
  info->num_elements = 0;
  info->facts.known = false;
}

}  // namespace

absl::Status InstrView::Make(const proto::Instruction& instr, int n,
                             const PatternRef* operands,
                             const proto::Instruction* messages,
                             const uint8_t* attr_specs,
                             const TensorTable& tensors,
                             const proto::World& world, InstrView* view) {
  const OpDef* def = FindOp(instr.opcode());
  if (def == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown opcode ", static_cast<int>(instr.opcode())));
  }
  view->Start(instr, def, world);

  const int num_roles = static_cast<int>(def->roles.size());
  const bool variadic = num_roles > 0 && def->roles.back().variadic;
  if (n > kMaxOperands || (!variadic && n > num_roles)) {
    return view->Error("has ", n, " operands; at most ",
                       variadic ? kMaxOperands : num_roles, " allowed");
  }
  view->num_operands_ = std::max(n, num_roles);
  for (int i = 0; i < view->num_operands_; ++i) {
    const OperandRole& role = *OperandRoleOf(*def, i);  // i < roles or variadic
    OperandInfo& info = view->operands_[i];
    ClearForChecking(&info);
    if (i >= n || operands[i].tensor_id == 0) {
      if (!role.optional && i < num_roles) {
        return view->Error("operand '", role.name, "' is missing");
      }
      continue;
    }
    const PatternRef& ap = operands[i];
    if (ap.tensor_id > static_cast<uint32_t>(tensors.size())) {
      return view->Error("operand '", role.name, "' names tensor id ",
                         ap.tensor_id, ", which does not exist");
    }
    const proto::Tensor* declared = &tensors.Get(ap.tensor_id - 1);
    if (ap.view_dtype != proto::DTYPE_UNSPECIFIED) {
      if (absl::Status s =
              ViewedTensor(*declared, ap.view_dtype, &view->viewed_[i]);
          !s.ok()) {
        return view->Error("operand '", role.name, "': ", s.message());
      }
      declared = &view->viewed_[i];
    }
    const proto::Tensor& tensor = *declared;
    if ((Space(tensor.space()) & role.spaces) == 0) {
      return view->Error("operand '", role.name, "' ('", tensor.name(),
                         "') is in ", SpaceName(tensor.space()),
                         "; it must be in ", SpaceSetName(role.spaces));
    }
    if (absl::Status s = CheckAccessPattern(ap, tensor); !s.ok()) {
      return view->Error("operand '", role.name, "': ", s.message());
    }
    if (absl::Status s = CheckDynamicOffset(ap, tensor, tensors); !s.ok()) {
      return view->Error("operand '", role.name, "': ", s.message());
    }
    if (messages != nullptr) {
      info.ap = &messages->operands(i);
    } else {
      info.ref = &ap;
    }
    info.tensor = &tensor;
    info.num_elements = ApElements(ap.pattern, ap.pattern_size);
  }
  if (attr_specs != nullptr && def->attrs.size() <= kMaxResolvedAttrs) {
    if (absl::Status s = CheckAttrsOfSpecs(instr, attr_specs, def->attrs,
                                           view->resolved_.data());
        !s.ok()) {
      return view->Error(s.message());
    }
    view->attrs_ = view->resolved_.data();
  } else if (absl::Status s = CheckAttrs(instr, def->attrs); !s.ok()) {
    return view->Error(s.message());
  }
  if (def->check != nullptr) return def->check(*view);
  return absl::OkStatus();
}

absl::Status MakeInstrView(const proto::Instruction& instr,
                           const TensorTable& tensors,
                           const proto::World& world, InstrView* view) {
  const int n = instr.operands_size();
  std::array<PatternRef, kMaxOperands> operands;
  for (int i = 0; i < std::min(n, kMaxOperands); ++i) {
    operands[i] = PatternOf(instr.operands(i));
  }
  return InstrView::Make(instr, n, operands.data(), &instr, nullptr, tensors,
                         world, view);
}

absl::Status MakeInstrView(const proto::Instruction& instr, int num_operands,
                           const PatternRef* operands,
                           const uint8_t* attr_specs,
                           const TensorTable& tensors,
                           const proto::World& world, InstrView* view) {
  return InstrView::Make(instr, num_operands, operands, nullptr, attr_specs,
                         tensors, world, view);
}

absl::Status BindInstrView(const proto::Instruction& instr,
                           const TensorTable& tensors,
                           const proto::World& world, InstrView* view) {
  const OpDef* def = FindOp(instr.opcode());
  if (def == nullptr) return absl::InvalidArgumentError("unknown opcode");
  view->Start(instr, def, world);
  const int num_roles = static_cast<int>(def->roles.size());
  const int n = instr.operands_size();
  view->num_operands_ = std::min(std::max(n, num_roles), kMaxOperands);
  for (int i = 0; i < view->num_operands_; ++i) {
    NKI_RETURN_IF_ERROR(BindOperand(instr, i, tensors, &view->operands_[i],
                                    [&] { return &view->viewed_[i]; }));
  }
  return absl::OkStatus();
}

absl::Status BindOperand(const proto::Instruction& instr, int i,
                         const TensorTable& tensors, OperandInfo* info,
                         absl::FunctionRef<proto::Tensor*()> view_storage) {
  *info = OperandInfo{};
  if (i >= instr.operands_size()) return absl::OkStatus();
  const proto::AccessPattern& ap = instr.operands(i);
  if (ap.tensor_id() == 0) return absl::OkStatus();
  if (ap.tensor_id() > static_cast<uint32_t>(tensors.size())) {
    return absl::InvalidArgumentError("operand tensor id out of range");
  }
  info->ap = &ap;
  info->tensor = &tensors.Get(ap.tensor_id() - 1);
  info->num_elements = ApElements(ap);
  if (ap.view_dtype() != proto::DTYPE_UNSPECIFIED) {
    proto::Tensor* viewed = view_storage();
    NKI_RETURN_IF_ERROR(ViewedTensor(*info->tensor, ap.view_dtype(), viewed));
    info->tensor = viewed;
  }
  info->facts = ComputeOperandFacts(*info->tensor, ap);
  return absl::OkStatus();
}

}  // namespace nkigraph::ops
