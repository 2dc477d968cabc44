#ifndef NKIGRAPH_KERNELS_REGISTRY_H_
#define NKIGRAPH_KERNELS_REGISTRY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "builder/tracer.h"
#include "kernels/compare.h"
#include "proto/nkigraph.pb.h"
#include "util/host_array.h"

namespace nkigraph::kernels {

struct KernelDef;
template <typename P>
struct KernelSpec;
template <typename P>
KernelDef ToKernelDef(const KernelSpec<P>& spec);

using Settings = std::vector<std::pair<std::string, std::string>>;

enum class ParamType { kInt, kFloat, kString, kBool };

struct ParamSpec {
  std::string name;
  ParamType type;
  std::string default_value;  // "" with required = true: must be given
  std::string help;
  bool required = false;
  // kString only: the accepted values (empty: any).
  std::vector<std::string> choices;
  // kInt only: the allowed values, both ends included (a flag's are 0 and
  // 1), when the field declares them.
  std::optional<std::pair<int64_t, int64_t>> int_range;
  // kInt only: the values at which the kernel's tiling changes (either side
  // of every tile size the parameter is cut by: 127, 128, 129, ...), for
  // the boundary sweep (kernels/boundary_cases.h). Inside int_range.
  std::vector<int64_t> edges;
};

// A kernel's parameter struct, type-erased: what a KernelSpec<P> reads from
// the parsed text (kernels/kernel_spec.h), held for its hooks.
class TypedParams {
 public:
  template <typename P>
  static TypedParams Of(P params) {
    TypedParams typed;
    typed.value_ = std::make_shared<const P>(std::move(params));
    typed.type_ = &kTypeTag<P>;
    return typed;
  }
  // The struct, if it is a P.
  template <typename P>
  const P* Get() const {
    return type_ == &kTypeTag<P> ? static_cast<const P*>(value_.get())
                                 : nullptr;
  }

 private:
  template <typename P>
  static constexpr char kTypeTag = 0;

  std::shared_ptr<const void> value_;
  const void* type_ = nullptr;
};

ParamSpec MakeParamSpec(std::string name, ParamType type,
                        std::string default_value, std::string help);

// Parsed parameter values of one trace, every parameter present (defaults
// filled in). Accessors assume the spec's type; the registry has checked.
class ParamValues {
 public:
  int64_t Int(const std::string& name) const;
  double Float(const std::string& name) const;
  bool Bool(const std::string& name) const;
  const std::string& Str(const std::string& name) const;
  // True if the user gave the parameter (not its default).
  bool Given(const std::string& name) const;
  // True if the parameter has a value (given, or a default).
  bool Has(const std::string& name) const;
  // The kernel's parameter struct, read and validated by the kernel's
  // KernelDef::read_params when the registry parsed these values.
  template <typename P>
  absl::StatusOr<const P*> Typed() const {
    if (const P* p = typed_.Get<P>()) return p;
    return absl::InternalError(
        "the parameters were not parsed by the kernel's registry entry");
  }
  // name=value pairs in spec order, recorded in the graph.
  std::vector<std::pair<std::string, std::string>> AsPairs() const;

 private:
  friend class KernelRegistry;
  std::vector<ParamSpec> specs_;
  std::map<std::string, std::string> values_;
  std::map<std::string, bool> given_;
  TypedParams typed_;
};

// One tensor of a kernel's signature, as `list` shows it.
struct IoSpec {
  std::string name;
  std::string shape;  // e.g. "[B, c_in, L]"
  std::string dtype;  // e.g. "dtype", "float32", "int32"
};

// A registered kernel, as its consumers (tools, tests, benchmarks) see it.
// Kernels define a KernelSpec<Params> (kernels/kernel_spec.h), which
// fills in all of this from one parameter table and one I/O table.
struct KernelDef {
  std::string name;
  std::string summary;
  std::vector<ParamSpec> params;
  std::vector<IoSpec> inputs;
  std::vector<IoSpec> outputs;
  // Reads the kernel's parameter struct from the parsed values and
  // validates it; ParseParams keeps it in the ParamValues. Optional.
  std::function<absl::StatusOr<TypedParams>(const ParamValues&)> read_params =
      nullptr;
  // The world (target, ranks, cores) of the parameters read_params read.
  std::function<absl::StatusOr<builder::WorldConfig>(const ParamValues&)> world;
  // Declares inputs, runs the kernel, publishes outputs.
  std::function<void(builder::Tracer&, const ParamValues&)> body;
  // Computes the outputs from the inputs on the host (the oracle), in the
  // .npy layouts of the contract. Optional.
  std::function<HostOutputs(const ParamValues&, const HostArrays& inputs)>
      reference;
  // Absolute and relative tolerance for comparing against the reference,
  // per dtype; the main job uses them.
  std::function<double(const ParamValues&)> tolerance;
  // What the tolerance bounds (kernels/compare.h): each element's error
  // relative to 1 + its magnitude, or relative to its output's largest
  // magnitude. Verify, the kernel benchmarks and the tests compare so.
  Comparison comparison = Comparison::kElementwise;
  // Inputs that must hold valid values for the kernel (int32 indices,
  // routing tables, ...), in the .npy layouts of the contract, generated
  // deterministically from `seed`. Inputs it does not return are filled
  // with random values. Optional: without it every input is random.
  // (The default initializer keeps designated initializers that omit it
  // free of -Wmissing-field-initializers.)
  std::function<HostOutputs(const ParamValues&, uint64_t seed)> make_inputs =
      nullptr;
  // Parameter settings of a representative configuration: what the main
  // job and `nkigraph verify --all` trace, for kernels whose contract
  // leaves some sizes without a default.
  std::vector<std::pair<std::string, std::string>> example = {};
  // An output whose precision is not the kernel's `tolerance`'s (a cache
  // stored in float8): its own tolerance, or nullopt for the kernel's.
  // Optional. ToleranceOf asks both.
  std::function<std::optional<double>(const ParamValues&,
                                      const std::string& output)>
      output_tolerance = nullptr;
};

// The kernel's tolerance at `values`: its `tolerance`, else 1e-4.
double KernelTolerance(const KernelDef& def, const ParamValues& values);
// The tolerance `output` of `def` is compared with at `values`: its own,
// else the kernel's.
double ToleranceOf(const KernelDef& def, const ParamValues& values,
                   const std::string& output);

class KernelRegistry {
 public:
  // Every kernel of the project (kernels/all_kernels.cc lists them), then
  // those a program added with AddToGlobal.
  static const KernelRegistry& Global();

  // Adds the kernels `add` registers (registry.Register(MySpec())) to
  // Global(): how a program with kernels of its own (its own nkigraph
  // command, tools/cli.h; its tests) gives them to everything that reads
  // the registry. Adds nothing and fails with AlreadyExists when a
  // kernel's name is taken, and with FailedPrecondition once Global() has
  // been read (so no reader ever sees it change).
  static absl::Status AddToGlobal(absl::FunctionRef<void(KernelRegistry&)> add);

  void Register(KernelDef def);
  template <typename P>
  void Register(const KernelSpec<P>& spec) {
    Register(ToKernelDef(spec));
  }
  const KernelDef* Find(const std::string& name) const;
  const std::vector<KernelDef>& kernels() const { return kernels_; }

  // Parses `name=value` settings against the kernel's specs: unknown names,
  // bad values and missing required parameters are errors naming them;
  // then reads and validates the kernel's parameter struct (read_params),
  // whose errors name the parameter and the limit.
  absl::StatusOr<ParamValues> ParseParams(
      const KernelDef& def,
      const std::vector<std::pair<std::string, std::string>>& settings) const;

  // Parses, then traces the kernel into a graph.
  absl::StatusOr<proto::Graph> Trace(
      const std::string& name,
      const std::vector<std::pair<std::string, std::string>>& settings) const;

  // The same, as the bytes of a binary graph file (never held as
  // messages: the way to trace a big graph for writing).
  absl::StatusOr<builder::SerializedGraph> TraceSerialized(
      const std::string& name,
      const std::vector<std::pair<std::string, std::string>>& settings) const;

 private:
  // A kernel, its parsed parameters and its trace configuration.
  struct Prepared {
    const KernelDef* def = nullptr;
    ParamValues values;
    builder::TraceConfig config;
  };
  absl::StatusOr<Prepared> Prepare(
      const std::string& name,
      const std::vector<std::pair<std::string, std::string>>& settings) const;

  std::vector<KernelDef> kernels_;
};

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_REGISTRY_H_
