// The table of every op, indexed by opcode, built once from the generated
// list of definitions (ops/op_list.h) and checked as it is built.
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ops/op_def.h"
#include "ops/op_list.h"

namespace nkigraph::ops {
namespace {

struct Table {
  std::vector<OpDef> storage;         // by opcode
  std::vector<std::string> names;     // by opcode
  std::vector<const OpDef*> by_code;  // nullptr: not defined
  absl::Status status;
};

// What contradicts itself inside one definition.
void CheckDef(const OpDef& def, std::vector<std::string>* errors) {
  auto error = [&](const auto&... args) {
    errors->push_back(absl::StrCat(def.name, ": ", args...));
  };
  for (size_t i = 0; i < def.roles.size(); ++i) {
    if (def.roles[i].variadic && i + 1 != def.roles.size()) {
      error("role '", def.roles[i].name, "' is variadic but not the last");
    }
    for (size_t j = 0; j < i; ++j) {
      if (def.roles[j].name == def.roles[i].name) {
        error("role '", def.roles[i].name, "' is declared twice");
      }
    }
  }
  if (def.attrs.size() > 64) error("declares more than 64 attributes");
  for (size_t i = 0; i < def.attrs.size(); ++i) {
    const AttrSpec& spec = def.attrs[i];
    for (size_t j = 0; j < i; ++j) {
      if (def.attrs[j].name == spec.name) {
        error("attribute '", spec.name, "' is declared twice");
      }
    }
    if (spec.required) continue;
    // A default must be a value the loader accepts.
    if (spec.type == AttrType::kInt &&
        (spec.int_default < spec.min || spec.int_default > spec.max)) {
      error("attribute '", spec.name,
            "' defaults to a value outside its range");
    }
    if (spec.type == AttrType::kString && !spec.one_of.empty() &&
        !spec.string_default.empty()) {
      bool allowed = false;
      for (absl::string_view v : spec.one_of)
        allowed |= v == spec.string_default;
      if (!allowed) {
        error("attribute '", spec.name, "' defaults to '", spec.string_default,
              "', which it does not allow");
      }
    }
    if (spec.name == "engine" &&
        (spec.type != AttrType::kString ||
         spec.string_default != EngineName(def.engine))) {
      error("the 'engine' attribute must default to the op's engine, ",
            EngineName(def.engine));
    }
  }
  const bool sync = def.sync != SyncKind::kNone;
  if (sync &&
      (def.sync_rule.members == nullptr || def.sync_rule.matches == nullptr ||
       def.execute_group == nullptr || def.execute != nullptr)) {
    error("a sync op needs members, matches and execute_group, no execute");
  }
  if (!sync && (def.execute == nullptr || def.execute_group != nullptr)) {
    error("an op that runs alone needs execute and no execute_group");
  }
}

absl::Status Build(absl::Span<const OpDefiner> definers, Table* table) {
  table->storage.assign(proto::Opcode_ARRAYSIZE, OpDef{});
  table->names.assign(proto::Opcode_ARRAYSIZE, std::string());
  table->by_code.assign(proto::Opcode_ARRAYSIZE, nullptr);
  std::vector<std::string> errors;
  for (const OpDefiner& definer : definers) {
    const proto::Opcode opcode = definer.opcode;
    if (opcode == proto::OPCODE_UNSPECIFIED || !proto::Opcode_IsValid(opcode)) {
      errors.push_back(absl::StrCat("a definition for opcode ",
                                    static_cast<int>(opcode),
                                    ", which the proto does not define"));
      continue;
    }
    std::string& name = table->names[opcode];
    if (table->by_code[opcode] != nullptr) {
      errors.push_back(absl::StrCat(name, " is defined twice"));
      continue;
    }
    name = absl::AsciiStrToLower(proto::Opcode_Name(opcode));
    OpDef& def = table->storage[opcode];
    def = definer.define();
    def.opcode = opcode;
    def.name = name;
    CheckDef(def, &errors);
    table->by_code[opcode] = &def;
  }
  if (errors.empty()) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat("op table: ", absl::StrJoin(errors, "; ")));
}

const Table& TheTable() {
  static const Table* const table = [] {
    auto* t = new Table;
    t->status = Build(GeneratedOpDefiners(), t);
    return t;
  }();
  return *table;
}

}  // namespace

const OpDef* FindOp(proto::Opcode opcode) {
  const std::vector<const OpDef*>& by_code = TheTable().by_code;
  if (opcode < 0 || static_cast<size_t>(opcode) >= by_code.size()) {
    return nullptr;
  }
  return by_code[opcode];
}

absl::Status OpTableStatus() { return TheTable().status; }

absl::Status CheckOpDefiners(absl::Span<const OpDefiner> definers) {
  Table table;
  return Build(definers, &table);
}

std::optional<Engine> ParseEngine(absl::string_view name) {
  for (Engine engine :
       {Engine::kTensor, Engine::kVector, Engine::kScalar, Engine::kGpSimd,
        Engine::kDma, Engine::kSync, Engine::kCollective}) {
    if (EngineName(engine) == name) return engine;
  }
  return std::nullopt;
}

}  // namespace nkigraph::ops
