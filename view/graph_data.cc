#include "view/graph_data.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/dependencies.h"
#include "ops/access_pattern.h"
#include "ops/instr_facts.h"
#include "ops/instr_view.h"
#include "util/dtype.h"
#include "viz/style.h"

namespace nkigraph::view {
namespace {

using nlohmann::json;

json AttrValue(const proto::Attr& attr) {
  switch (attr.value_case()) {
    case proto::Attr::kI:
      return attr.i();
    case proto::Attr::kF:
      return attr.f();
    case proto::Attr::kS:
      return attr.s();
    case proto::Attr::kInts:
      return json(std::vector<int64_t>(attr.ints().values().begin(),
                                       attr.ints().values().end()));
    case proto::Attr::VALUE_NOT_SET:
      break;
  }
  return nullptr;
}

// "[128x512] elements 0..65535, partitions 0..127 x bytes 0..2047" style
// byte range: where in its memory the operand's static pattern reaches.
// On chip a tensor occupies the same bytes of consecutive partitions
// (rows); in HBM it is one run of bytes from its address.
std::string ByteRange(const graph::GraphIndex& index,
                      const proto::AccessPattern& ap) {
  const proto::Tensor& tensor = index.tensor(ap.tensor_id());
  const bool dynamic =
      ap.dynamic().kind() != proto::DynamicOffset::KIND_UNSPECIFIED;
  absl::StatusOr<ops::FlatExtent> extent = ops::StaticExtent(ap);
  if (!extent.ok()) return "?";
  const int64_t size = DTypeSize(ops::OperandDType(ap, tensor));
  // The extent counts from the tensor's start: the offset is in it.
  const int64_t lo = extent->lo;
  const int64_t hi = extent->hi;
  std::string text;
  if (ops::IsOnChip(tensor.space())) {
    // Elements per partition of the (viewed) tensor.
    const int64_t row = ops::OperandRowElements(ap, tensor);
    const ops::PartitionSpan partitions = ops::OperandPartitions(ap, tensor);
    // The columns: what the dims after the partition dim reach inside
    // one partition (validation keeps them inside it).
    absl::StatusOr<ops::FlatExtent> inner = ops::StaticExtent(ap, 1);
    if (!inner.ok()) return "?";
    const int64_t c0 = inner->lo % row;
    const int64_t c1 = c0 + (inner->hi - inner->lo);
    text = absl::StrCat("partitions ", partitions.lo, "..", partitions.hi - 1,
                        ", bytes ", tensor.address() + c0 * size, "..",
                        tensor.address() + (c1 + 1) * size - 1);
  } else {
    text = absl::StrCat("bytes ", tensor.address() + lo * size, "..",
                        tensor.address() + (hi + 1) * size - 1);
  }
  if (dynamic) absl::StrAppend(&text, " + dynamic offset");
  return text;
}

std::string Extent(const proto::AccessPattern& ap) {
  std::string text;
  for (int d = 0; d < ops::NumDims(ap); ++d) {
    absl::StrAppend(&text, d == 0 ? "" : "x", ops::Count(ap, d));
  }
  return text.empty() ? "1" : text;
}

json Operands(const graph::GraphIndex& index, int i) {
  const graph::InstrInfo& info = index.info(i);
  const proto::Instruction& instr = *info.instr;
  json out = json::array();
  for (int o = 0; o < instr.operands_size(); ++o) {
    const proto::AccessPattern& ap = instr.operands(o);
    if (ap.tensor_id() == 0) continue;
    const ops::OperandRole* role = ops::OperandRoleOf(*info.def, o);
    std::string access;
    if (info.Reads(o)) access += "r";
    if (info.Writes(o)) access += "w";
    json operand = {role != nullptr ? std::string(role->name) : "?",
                    ap.tensor_id(), access, Extent(ap), ByteRange(index, ap)};
    if (ap.view_dtype() != proto::DTYPE_UNSPECIFIED) {
      operand.push_back(std::string(DTypeName(ap.view_dtype())));
    }
    out.push_back(std::move(operand));
  }
  return out;
}

}  // namespace

json GraphData(const graph::GraphIndex& index) {
  const proto::Graph& graph = index.graph();
  json data;
  data["kernel"] = graph.kernel_name();
  data["cores"] = index.num_cores();
  data["ranks"] = index.num_ranks();
  json colors = json::object();
  for (ops::Engine engine : graph::kAllEngines) {
    colors[std::string(ops::EngineName(engine))] =
        std::string(viz::EngineColor(engine));
  }
  data["engine_colors"] = std::move(colors);
  data["files"] = json(
      std::vector<std::string>(graph.files().begin(), graph.files().end()));
  data["scopes"] = json(
      std::vector<std::string>(graph.scopes().begin(), graph.scopes().end()));
  json tensors = json::array();
  for (const proto::Tensor& tensor : graph.tensors()) {
    tensors.push_back(
        {tensor.name(), std::string(ops::SpaceName(tensor.space())),
         std::string(DTypeName(tensor.dtype())),
         std::vector<int64_t>(tensor.shape().begin(), tensor.shape().end()),
         tensor.address(), tensor.core()});
  }
  data["tensors"] = std::move(tensors);

  json instrs = json::array();
  for (int i = 0; i < index.size(); ++i) {
    const graph::InstrInfo& info = index.info(i);
    const proto::Instruction& instr = *info.instr;
    json attrs = json::array();
    for (const proto::Attr& attr : instr.attrs()) {
      attrs.push_back({attr.name(), AttrValue(attr)});
    }
    instrs.push_back({instr.id(), ops::OpcodeName(instr.opcode()),
                      std::string(ops::EngineName(info.engine)), info.core,
                      info.position, instr.scope(), instr.file(), instr.line(),
                      Operands(index, i), std::move(attrs)});
  }
  data["instrs"] = std::move(instrs);

  // Producers by instruction: the read-after-write edges.
  std::vector<std::vector<int>> producers(index.size());
  for (const graph::Dependency& dep : graph::AnalyzeDependencies(index)) {
    if (dep.kind == graph::DepKind::kRaw) producers[dep.to].push_back(dep.from);
  }
  data["producers"] = std::move(producers);
  return data;
}

}  // namespace nkigraph::view
