#include "diff/model.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace nkigraph::diff {
namespace {

// Tags keep the kinds of keys apart inside the one table.
constexpr char kTensorTag = 'T';
constexpr char kInstrTag = 'I';

void PutTensorKey(std::string* key, const GraphModel& model, uint32_t id) {
  if (id == 0) {
    PutInt(key, 0);  // absent optional operand
    return;
  }
  PutInt(key, model.tensor_keys[id - 1]);
}

void PutAttrValue(std::string* key, const proto::Attr& attr) {
  PutInt(key, attr.value_case());
  switch (attr.value_case()) {
    case proto::Attr::kI:
      PutInt(key, attr.i());
      break;
    case proto::Attr::kF: {
      int64_t bits = 0;
      const double value = attr.f();
      std::memcpy(&bits, &value, sizeof(bits));
      PutInt(key, bits);
      break;
    }
    case proto::Attr::kS:
      PutString(key, attr.s());
      break;
    case proto::Attr::kInts:
      PutInt(key, attr.ints().values_size());
      for (int64_t v : attr.ints().values()) PutInt(key, v);
      break;
    case proto::Attr::VALUE_NOT_SET:
      break;
  }
}

void PutAccessPattern(std::string* key, const GraphModel& model,
                      const proto::AccessPattern& ap) {
  PutTensorKey(key, model, ap.tensor_id());
  PutInt(key, ap.offset());
  PutInt(key, ap.pattern_size());
  for (int64_t v : ap.pattern()) PutInt(key, v);
  PutInt(key, ap.view_dtype());
  if (ap.has_dynamic()) {
    const proto::DynamicOffset& dyn = ap.dynamic();
    PutInt(key, 1);
    PutInt(key, dyn.kind());
    PutTensorKey(key, model, dyn.tensor_id());
    PutInt(key, dyn.offset_element());
    PutInt(key, dyn.offset_stride());
    PutInt(key, dyn.indirect_dim());
    PutInt(key, dyn.oob_mode());
  } else {
    PutInt(key, 0);
  }
}

absl::Status CheckTensorRef(uint32_t id, const GraphModel& model,
                            absl::string_view label,
                            const proto::Stream& stream,
                            const proto::Instruction& instr) {
  if (id == 0 || model.FindTensor(id) != nullptr) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "graph ", label, ": instruction ", instr.id(), " (core ", stream.core(),
      ") refers to tensor ", id, ", which the graph lacks"));
}

// The attributes in name order (a graph may list them in any order).
void SortedAttrs(const proto::Instruction& instr,
                 std::vector<const proto::Attr*>& out) {
  out.clear();
  for (const proto::Attr& attr : instr.attrs()) out.push_back(&attr);
  std::stable_sort(out.begin(), out.end(),
                   [](const proto::Attr* x, const proto::Attr* y) {
                     return x->name() < y->name();
                   });
}

}  // namespace

uint32_t KeyTable::Intern(absl::string_view bytes) {
  auto it = ids_.find(bytes);
  if (it != ids_.end()) return it->second;
  const uint32_t id = static_cast<uint32_t>(ids_.size()) + 1;
  ids_.emplace(std::string(bytes), id);
  return id;
}

void PutInt(std::string* key, int64_t value) {
  char bytes[sizeof(value)];
  std::memcpy(bytes, &value, sizeof(value));
  key->append(bytes, sizeof(bytes));
}

void PutString(std::string* key, absl::string_view text) {
  PutInt(key, static_cast<int64_t>(text.size()));
  key->append(text.data(), text.size());
}

const proto::Tensor* GraphModel::FindTensor(uint32_t id) const {
  if (id == 0 || id > static_cast<uint32_t>(graph->tensors_size())) {
    return nullptr;
  }
  return &graph->tensors(static_cast<int>(id) - 1);
}

absl::StatusOr<GraphModel> BuildModel(const proto::Graph& graph,
                                      absl::string_view label, bool strict,
                                      KeyTable& keys) {
  GraphModel model;
  model.graph = &graph;
  std::string key;

  model.tensor_keys.reserve(graph.tensors_size());
  for (int t = 0; t < graph.tensors_size(); ++t) {
    const proto::Tensor& tensor = graph.tensors(t);
    if (tensor.id() != static_cast<uint32_t>(t) + 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph ", label, ": tensor #", t, " ('", tensor.name(),
                       "') has id ", tensor.id(), ", expected ", t + 1,
                       " (tensors must be listed in id order)"));
    }
    key.assign(1, kTensorTag);
    PutString(&key, tensor.name());
    PutInt(&key, tensor.space());
    PutInt(&key, tensor.dtype());
    PutInt(&key, tensor.shape_size());
    for (int64_t d : tensor.shape()) PutInt(&key, d);
    model.tensor_keys.push_back(keys.Intern(key));
  }

  // Source locations by content, so that graphs interning their files and
  // scopes in different orders still compare equal.
  std::vector<uint32_t> file_keys, scope_keys;
  if (strict) {
    for (const std::string& file : graph.files()) {
      key.assign(1, 'F');
      PutString(&key, file);
      file_keys.push_back(keys.Intern(key));
    }
    for (const std::string& scope : graph.scopes()) {
      key.assign(1, 'S');
      PutString(&key, scope);
      scope_keys.push_back(keys.Intern(key));
    }
  }

  absl::flat_hash_set<uint32_t> cores;
  std::vector<const proto::Attr*> attrs;
  model.stream_keys.resize(graph.streams_size());
  for (int s = 0; s < graph.streams_size(); ++s) {
    const proto::Stream& stream = graph.streams(s);
    if (!cores.insert(stream.core()).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "graph ", label, " has two streams for core ", stream.core()));
    }
    std::vector<uint32_t>& out = model.stream_keys[s];
    out.reserve(stream.instructions_size());
    for (const proto::Instruction& instr : stream.instructions()) {
      key.assign(1, kInstrTag);
      PutInt(&key, instr.opcode());
      PutInt(&key, instr.operands_size());
      for (const proto::AccessPattern& ap : instr.operands()) {
        for (uint32_t id : {ap.tensor_id(), ap.dynamic().tensor_id()}) {
          if (absl::Status status =
                  CheckTensorRef(id, model, label, stream, instr);
              !status.ok()) {
            return status;
          }
        }
        PutAccessPattern(&key, model, ap);
      }
      SortedAttrs(instr, attrs);
      PutInt(&key, static_cast<int64_t>(attrs.size()));
      for (const proto::Attr* attr : attrs) {
        PutString(&key, attr->name());
        PutAttrValue(&key, *attr);
      }
      if (strict) {
        // An index outside the tables reads as "no file" / "no scope".
        PutInt(&key,
               instr.file() < file_keys.size() ? file_keys[instr.file()] : 0);
        PutInt(&key, instr.line());
        PutInt(&key, instr.scope() < scope_keys.size()
                         ? scope_keys[instr.scope()]
                         : 0);
      }
      out.push_back(keys.Intern(key));
    }
  }
  return model;
}

}  // namespace nkigraph::diff
