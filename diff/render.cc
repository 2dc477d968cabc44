#include "diff/render.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ops/instr_facts.h"
#include "ops/instr_view.h"
#include "ops/op_def.h"
#include "util/dtype.h"

namespace nkigraph::diff {
namespace {

std::string SpaceText(proto::MemorySpace space) {
  if (proto::MemorySpace_IsValid(space)) {
    return absl::AsciiStrToLower(proto::MemorySpace_Name(space));
  }
  return absl::StrCat("space_", static_cast<int>(space));
}

std::string DTypeText(proto::DType dtype) {
  const absl::string_view name = DTypeName(dtype);
  if (!name.empty() && name != "invalid_dtype") return std::string(name);
  return absl::StrCat("dtype_", static_cast<int>(dtype));
}

std::string RoleText(const proto::Tensor& tensor) {
  switch (tensor.role()) {
    case proto::ROLE_INTERNAL:
      return "";
    case proto::ROLE_INPUT:
      return "input";
    case proto::ROLE_OUTPUT:
      return "output";
    case proto::ROLE_INPUT_OUTPUT:
      return absl::StrCat("input_output '", tensor.output_name(), "'");
    default:
      return absl::StrCat("role_", static_cast<int>(tensor.role()));
  }
}

std::string TypeText(const proto::Tensor& tensor) {
  return absl::StrCat(SpaceText(tensor.space()), " ", DTypeText(tensor.dtype()),
                      " [", absl::StrJoin(tensor.shape(), ", "), "]");
}

}  // namespace

std::string TensorSummary(const proto::Tensor& tensor) {
  std::string text = absl::StrCat(TypeText(tensor), " @", tensor.address());
  if (tensor.partition_offset() != 0) {
    absl::StrAppend(&text, " partition ", tensor.partition_offset());
  }
  const std::string role = RoleText(tensor);
  if (!role.empty()) absl::StrAppend(&text, " ", role);
  if (tensor.per_rank() && tensor.role() != proto::ROLE_INTERNAL) {
    absl::StrAppend(&text, " per_rank");
  }
  return text;
}

std::string TensorRefText(const GraphModel& model, uint32_t id) {
  if (id == 0) return "(none)";
  const proto::Tensor* tensor = model.FindTensor(id);
  if (tensor == nullptr) return absl::StrCat("(missing tensor ", id, ")");
  return absl::StrCat(tensor->name(), " (", TypeText(*tensor), ")");
}

std::string PatternText(const proto::AccessPattern& ap) {
  std::string text = "[";
  for (int d = 0; d + 1 < ap.pattern_size(); d += 2) {
    absl::StrAppend(&text, d == 0 ? "" : ",", "[", ap.pattern(d), ",",
                    ap.pattern(d + 1), "]");
  }
  if (ap.pattern_size() % 2 != 0) {  // malformed: show the odd value
    absl::StrAppend(&text, ap.pattern_size() > 1 ? "," : "",
                    ap.pattern(ap.pattern_size() - 1));
  }
  return absl::StrCat(text, "]");
}

std::string ViewText(const proto::AccessPattern& ap) {
  if (ap.view_dtype() == proto::DTYPE_UNSPECIFIED) return "none";
  if (!IsValidDType(ap.view_dtype())) {
    return absl::StrCat("dtype ", static_cast<int>(ap.view_dtype()));
  }
  return std::string(DTypeName(ap.view_dtype()));
}

std::string DynamicText(const GraphModel& model,
                        const proto::AccessPattern& ap) {
  if (!ap.has_dynamic()) return "none";
  const proto::DynamicOffset& dyn = ap.dynamic();
  std::string kind;
  switch (dyn.kind()) {
    case proto::DynamicOffset::SCALAR:
      kind = "scalar";
      break;
    case proto::DynamicOffset::VECTOR:
      kind = "vector";
      break;
    default:
      kind = absl::StrCat("kind_", static_cast<int>(dyn.kind()));
  }
  const proto::Tensor* tensor = model.FindTensor(dyn.tensor_id());
  std::string text =
      absl::StrCat(kind, " ", tensor == nullptr ? "?" : tensor->name(), "[",
                   dyn.offset_element());
  if (dyn.kind() == proto::DynamicOffset::VECTOR) {
    absl::StrAppend(&text, " step ", dyn.offset_stride());
  }
  absl::StrAppend(&text, "] dim ", dyn.indirect_dim());
  if (dyn.oob_mode() == proto::DynamicOffset::OOB_SKIP) {
    absl::StrAppend(&text, " oob_skip");
  }
  return text;
}

std::string OperandText(const GraphModel& model,
                        const proto::AccessPattern& ap) {
  if (ap.tensor_id() == 0) return "-";
  const proto::Tensor* tensor = model.FindTensor(ap.tensor_id());
  std::string text = absl::StrCat(
      tensor == nullptr ? absl::StrCat("(missing tensor ", ap.tensor_id(), ")")
                        : tensor->name(),
      "[offset=", ap.offset(), " ap=", PatternText(ap));
  if (ap.view_dtype() != proto::DTYPE_UNSPECIFIED) {
    absl::StrAppend(&text, " view=", ViewText(ap));
  }
  if (ap.has_dynamic()) {
    absl::StrAppend(&text, " dynamic=", DynamicText(model, ap));
  }
  return absl::StrCat(text, "]");
}

std::string AttrValueText(const proto::Attr& attr) {
  switch (attr.value_case()) {
    case proto::Attr::kI:
      return absl::StrCat(attr.i());
    case proto::Attr::kF:
      return absl::StrCat(attr.f());
    case proto::Attr::kS:
      return absl::StrCat("'", attr.s(), "'");
    case proto::Attr::kInts:
      return absl::StrCat("[", absl::StrJoin(attr.ints().values(), ","), "]");
    case proto::Attr::VALUE_NOT_SET:
      break;
  }
  return "(unset)";
}

std::string InstrText(const GraphModel& model,
                      const proto::Instruction& instr) {
  std::string text = ops::OpcodeName(instr.opcode());
  for (int i = 0; i < instr.operands_size(); ++i) {
    absl::StrAppend(&text, " ", ops::OperandName(instr.opcode(), i), "=",
                    OperandText(model, instr.operands(i)));
  }
  for (const proto::Attr& attr : instr.attrs()) {
    absl::StrAppend(&text, " ", attr.name(), "=", AttrValueText(attr));
  }
  return text;
}

std::string SourceText(const proto::Graph& graph,
                       const proto::Instruction& instr) {
  if (instr.line() == 0 && instr.file() == 0 && graph.files_size() == 0) {
    return "";
  }
  const std::string file =
      instr.file() < static_cast<uint32_t>(graph.files_size())
          ? graph.files(static_cast<int>(instr.file()))
          : "?";
  return absl::StrCat(file, ":", instr.line());
}

std::string ScopeText(const proto::Graph& graph,
                      const proto::Instruction& instr) {
  if (instr.scope() < static_cast<uint32_t>(graph.scopes_size())) {
    return graph.scopes(static_cast<int>(instr.scope()));
  }
  return absl::StrCat("(scope ", instr.scope(), ")");
}

}  // namespace nkigraph::diff
