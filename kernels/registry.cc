#include "kernels/registry.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "kernels/all_kernels.h"
#include "kernels/params.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {
namespace {

const ParamSpec* FindSpec(const std::vector<ParamSpec>& specs,
                          const std::string& name) {
  for (const ParamSpec& spec : specs) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

// Checks `text` against the spec and returns the value as recorded in the
// graph: numbers and booleans in canonical spelling (floats as the
// shortest text that reads back the same double), so `m=0256` and `m=256`,
// or `eps=1e-6` and `eps=0.000001`, trace the same graph.
absl::StatusOr<std::string> Canonicalize(const ParamSpec& spec,
                                         const std::string& text) {
  switch (spec.type) {
    case ParamType::kInt: {
      NKI_ASSIGN_OR_RETURN(int64_t value, ParseIntText(text));
      return absl::StrCat(value);
    }
    case ParamType::kFloat: {
      NKI_ASSIGN_OR_RETURN(double value, ParseFloatText(text));
      return FormatFloat(value);
    }
    case ParamType::kBool: {
      NKI_ASSIGN_OR_RETURN(bool value, ParseBoolText(text));
      return std::string(value ? "1" : "0");
    }
    case ParamType::kString:
      if (!spec.choices.empty() &&
          std::find(spec.choices.begin(), spec.choices.end(), text) ==
              spec.choices.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "'", text, "' is not one of ", absl::StrJoin(spec.choices, ", ")));
      }
      return text;
  }
  return absl::InternalError("unknown parameter type");
}

std::string KernelNames(const std::vector<KernelDef>& kernels) {
  return absl::StrJoin(
      kernels, ", ",
      [](std::string* out, const KernelDef& def) { out->append(def.name); });
}

}  // namespace

double KernelTolerance(const KernelDef& def, const ParamValues& values) {
  return def.tolerance ? def.tolerance(values) : 1e-4;
}

double ToleranceOf(const KernelDef& def, const ParamValues& values,
                   const std::string& output) {
  if (def.output_tolerance) {
    if (std::optional<double> own = def.output_tolerance(values, output)) {
      return *own;
    }
  }
  return KernelTolerance(def, values);
}

ParamSpec MakeParamSpec(std::string name, ParamType type,
                        std::string default_value, std::string help) {
  ParamSpec spec;
  spec.name = std::move(name);
  spec.type = type;
  spec.default_value = std::move(default_value);
  spec.help = std::move(help);
  return spec;
}

// --- ParamValues ---------------------------------------------------------

int64_t ParamValues::Int(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return 0;
  absl::StatusOr<int64_t> value = ParseIntText(it->second);
  return value.ok() ? *value : 0;
}

double ParamValues::Float(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return 0.0;
  absl::StatusOr<double> value = ParseFloatText(it->second);
  return value.ok() ? *value : 0.0;
}

bool ParamValues::Bool(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return false;
  absl::StatusOr<bool> value = ParseBoolText(it->second);
  return value.ok() && *value;
}

const std::string& ParamValues::Str(const std::string& name) const {
  static const std::string* const kEmpty = new std::string;
  auto it = values_.find(name);
  return it == values_.end() ? *kEmpty : it->second;
}

bool ParamValues::Has(const std::string& name) const {
  return values_.count(name) > 0;
}

bool ParamValues::Given(const std::string& name) const {
  auto it = given_.find(name);
  return it != given_.end() && it->second;
}

std::vector<std::pair<std::string, std::string>> ParamValues::AsPairs() const {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const ParamSpec& spec : specs_) {
    auto it = values_.find(spec.name);
    // An optional parameter without a default that was not given has no
    // value to record.
    if (it == values_.end()) continue;
    pairs.emplace_back(spec.name, it->second);
  }
  return pairs;
}

// --- KernelRegistry ------------------------------------------------------

namespace {

// The global registry and whether anyone has read it yet.
struct GlobalRegistry {
  absl::Mutex mutex;
  KernelRegistry registry;
  bool read = false;
};

GlobalRegistry& GlobalState() {
  static GlobalRegistry* const state = [] {
    auto* s = new GlobalRegistry;
    RegisterAllKernels(s->registry);
    return s;
  }();
  return *state;
}

}  // namespace

const KernelRegistry& KernelRegistry::Global() {
  GlobalRegistry& state = GlobalState();
  absl::MutexLock lock(&state.mutex);
  state.read = true;
  return state.registry;
}

absl::Status KernelRegistry::AddToGlobal(
    absl::FunctionRef<void(KernelRegistry&)> add) {
  KernelRegistry added;
  add(added);
  GlobalRegistry& state = GlobalState();
  absl::MutexLock lock(&state.mutex);
  for (size_t i = 0; i < added.kernels_.size(); ++i) {
    const std::string& name = added.kernels_[i].name;
    const bool taken_before =
        std::any_of(added.kernels_.begin(), added.kernels_.begin() + i,
                    [&](const KernelDef& def) { return def.name == name; });
    if (state.registry.Find(name) != nullptr || taken_before) {
      return absl::AlreadyExistsError(
          absl::StrCat("a kernel named '", name, "' is already registered"));
    }
  }
  if (state.read) {
    return absl::FailedPreconditionError(
        "kernels can be added to the global registry only before it is "
        "first read (at the start of main)");
  }
  for (KernelDef& def : added.kernels_) {
    state.registry.Register(std::move(def));
  }
  return absl::OkStatus();
}

void KernelRegistry::Register(KernelDef def) {
  kernels_.push_back(std::move(def));
}

const KernelDef* KernelRegistry::Find(const std::string& name) const {
  for (const KernelDef& def : kernels_) {
    if (def.name == name) return &def;
  }
  return nullptr;
}

absl::StatusOr<ParamValues> KernelRegistry::ParseParams(
    const KernelDef& def,
    const std::vector<std::pair<std::string, std::string>>& settings) const {
  ParamValues values;
  values.specs_ = def.params;
  for (const auto& [name, text] : settings) {
    const ParamSpec* spec = FindSpec(def.params, name);
    if (spec == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown parameter '", name, "' for kernel '", def.name, "' (known: ",
          absl::StrJoin(def.params, ", ",
                        [](std::string* out, const ParamSpec& s) {
                          out->append(s.name);
                        }),
          ")"));
    }
    if (values.given_[name]) {
      return absl::InvalidArgumentError(
          absl::StrCat("parameter '", name, "' is given more than once"));
    }
    absl::StatusOr<std::string> value = Canonicalize(*spec, text);
    if (!value.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("parameter '", name, "': ", value.status().message()));
    }
    values.values_[name] = *std::move(value);
    values.given_[name] = true;
  }
  for (const ParamSpec& spec : def.params) {
    if (values.given_[spec.name]) continue;
    values.given_[spec.name] = false;
    if (spec.required) {
      return absl::InvalidArgumentError(absl::StrCat(
          "missing required parameter '", spec.name, "' for kernel '", def.name,
          "'", spec.help.empty() ? "" : absl::StrCat(" (", spec.help, ")")));
    }
    if (spec.default_value.empty()) continue;  // optional, no default
    // A default that does not parse is a bug in the kernel's definition.
    absl::StatusOr<std::string> value = Canonicalize(spec, spec.default_value);
    if (!value.ok()) {
      return absl::InternalError(
          absl::StrCat("kernel '", def.name, "': default of parameter '",
                       spec.name, "': ", value.status().message()));
    }
    values.values_[spec.name] = *std::move(value);
  }
  if (def.read_params) {
    NKI_ASSIGN_OR_RETURN(values.typed_, def.read_params(values));
  }
  return values;
}

absl::StatusOr<KernelRegistry::Prepared> KernelRegistry::Prepare(
    const std::string& name,
    const std::vector<std::pair<std::string, std::string>>& settings) const {
  const KernelDef* def = Find(name);
  if (def == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("unknown kernel '", name,
                     "' (registered: ", KernelNames(kernels_), ")"));
  }
  if (!def->body) {
    return absl::InternalError(absl::StrCat("kernel '", name, "' has no body"));
  }
  Prepared prepared;
  prepared.def = def;
  NKI_ASSIGN_OR_RETURN(prepared.values, ParseParams(*def, settings));
  builder::WorldConfig world;
  if (def->world) {
    NKI_ASSIGN_OR_RETURN(world, def->world(prepared.values));
  }
  prepared.config =
      builder::TraceConfig{name, prepared.values.AsPairs(), std::move(world)};
  return prepared;
}

absl::StatusOr<proto::Graph> KernelRegistry::Trace(
    const std::string& name,
    const std::vector<std::pair<std::string, std::string>>& settings) const {
  NKI_ASSIGN_OR_RETURN(Prepared prepared, Prepare(name, settings));
  builder::Tracer tracer(std::move(prepared.config));
  return tracer.Trace(
      [&](builder::Tracer& t) { prepared.def->body(t, prepared.values); });
}

absl::StatusOr<builder::SerializedGraph> KernelRegistry::TraceSerialized(
    const std::string& name,
    const std::vector<std::pair<std::string, std::string>>& settings) const {
  NKI_ASSIGN_OR_RETURN(Prepared prepared, Prepare(name, settings));
  builder::Tracer tracer(std::move(prepared.config));
  return tracer.TraceSerialized(
      [&](builder::Tracer& t) { prepared.def->body(t, prepared.values); });
}

}  // namespace nkigraph::kernels
