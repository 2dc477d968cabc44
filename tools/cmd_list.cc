// nkigraph list [NAME...]: the registered kernels and their interfaces.
#include <algorithm>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kernels/registry.h"
#include "tools/commands.h"

namespace nkigraph::tools {
namespace {

constexpr char kUsage[] = R"(usage: nkigraph list [--names] [NAME...]

Lists the registered kernels (or only the named ones): summary, parameters
with type, default, choices and help, and the inputs and outputs with their
shapes and dtypes. Parameters are set with `nkigraph trace NAME --set k=v`.

options:
  --names      print only the kernel names, one per line
  -h, --help   show this help
)";

absl::string_view TypeName(kernels::ParamType type) {
  switch (type) {
    case kernels::ParamType::kInt:
      return "int";
    case kernels::ParamType::kFloat:
      return "float";
    case kernels::ParamType::kString:
      return "string";
    case kernels::ParamType::kBool:
      return "bool";
  }
  return "?";
}

std::string DefaultText(const kernels::ParamSpec& spec) {
  if (spec.required) return "required";
  if (spec.default_value.empty()) return "default: unset";
  return absl::StrCat("default: ", spec.default_value);
}

void PrintIo(absl::string_view title, const std::vector<kernels::IoSpec>& ios,
             std::ostream& out) {
  out << "  " << title << ":\n";
  if (ios.empty()) {
    out << "    (none)\n";
    return;
  }
  size_t name_width = 0, shape_width = 0;
  for (const kernels::IoSpec& io : ios) {
    name_width = std::max(name_width, io.name.size());
    shape_width = std::max(shape_width, io.shape.size());
  }
  for (const kernels::IoSpec& io : ios) {
    out << absl::StrFormat("    %-*s  %-*s  %s\n", name_width, io.name,
                           shape_width, io.shape, io.dtype);
  }
}

}  // namespace

void PrintKernel(const kernels::KernelDef& def, std::ostream& out) {
  out << def.name << "\n";
  if (!def.summary.empty()) out << "  " << def.summary << "\n";
  out << "  parameters:\n";
  if (def.params.empty()) out << "    (none)\n";
  size_t name_width = 0, type_width = 0, default_width = 0;
  for (const kernels::ParamSpec& spec : def.params) {
    name_width = std::max(name_width, spec.name.size());
    type_width = std::max(type_width, TypeName(spec.type).size());
    default_width = std::max(default_width, DefaultText(spec).size());
  }
  for (const kernels::ParamSpec& spec : def.params) {
    std::string help = spec.help;
    if (!spec.choices.empty()) {
      absl::StrAppend(&help, help.empty() ? "" : " ", "{",
                      absl::StrJoin(spec.choices, ", "), "}");
    }
    out << absl::StrFormat("    %-*s  %-*s  %-*s  %s\n", name_width, spec.name,
                           type_width, TypeName(spec.type), default_width,
                           DefaultText(spec), help);
  }
  PrintIo("inputs", def.inputs, out);
  PrintIo("outputs", def.outputs, out);
}

int RunList(const std::vector<std::string>& args) {
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(
      args, {{"--names", "", /*takes_value=*/false, /*repeated=*/false}});
  if (!parsed.ok()) return ReportError("list", parsed.status());
  if (parsed->help) {
    std::cout << kUsage;
    return kExitOk;
  }
  const kernels::KernelRegistry& registry = kernels::KernelRegistry::Global();
  std::vector<const kernels::KernelDef*> selected;
  if (parsed->positionals.empty()) {
    for (const kernels::KernelDef& def : registry.kernels()) {
      selected.push_back(&def);
    }
  } else {
    for (const std::string& name : parsed->positionals) {
      const kernels::KernelDef* def = registry.Find(name);
      if (def == nullptr) {
        return ReportError(
            "list", absl::StrCat("unknown kernel '", name, "' (registered: ",
                                 absl::StrJoin(registry.kernels(), ", ",
                                               [](std::string* s,
                                                  const kernels::KernelDef& d) {
                                                 s->append(d.name);
                                               }),
                                 ")"));
      }
      selected.push_back(def);
    }
  }
  if (parsed->Has("--names")) {  // one name per line, for scripts
    for (const kernels::KernelDef* def : selected)
      std::cout << def->name << "\n";
    return kExitOk;
  }
  for (size_t i = 0; i < selected.size(); ++i) {
    if (i > 0) std::cout << "\n";
    PrintKernel(*selected[i], std::cout);
  }
  return kExitOk;
}

}  // namespace nkigraph::tools
