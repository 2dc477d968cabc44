#ifndef NKIGRAPH_KERNELS_KERNEL_SPEC_H_
#define NKIGRAPH_KERNELS_KERNEL_SPEC_H_

// A kernel defined once: KernelSpec<Params> holds the parameter struct's
// table of fields, the I/O table, and the kernel's world, body, reference,
// tolerance and input maker, all on the typed parameters. The registry
// type-erases it into a KernelDef (kernels/registry.h), and `list`,
// tracing, `verify`, the tests and the benchmarks read that.
//
//   struct ScaleParams {            // the defaults are the struct's
//     int64_t n = 128;
//     double factor = 2.0;
//     proto::DType dtype = proto::BFLOAT16;
//   };
//   const KernelSpec<ScaleParams>& ScaleSpec() {
//     using P = ScaleParams;
//     static const auto* spec = new KernelSpec<P>{
//         .name = "scale",
//         .summary = "out = factor * x",
//         .params = {IntField<P>("n", &P::n, {1, 4096}, "elements"),
//                    FloatField<P>("factor", &P::factor, {-1e6, 1e6}, "how"),
//                    DTypeField<P>()},
//         .io = {InputRow<P>("x", "[n]", [](const P& p) { return Shape{p.n};
//         }),
//                OutputRow<P>("out", "[n]",
//                             [](const P& p) { return Shape{p.n}; })},
//         .body = [](KernelIo& io, const P& p) {
//           Tensor x = io.Input("x");       // shape and dtype from the table
//           Tensor out = io.Output("out");  // published after the body
//           ...
//         },
//     };
//     return *spec;
//   }
//
// and one line in kernels/all_kernels.cc: registry.Register(ScaleSpec()).

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "builder/tracer.h"
#include "kernels/compare.h"
#include "kernels/kernel_io.h"
#include "kernels/params.h"
#include "kernels/registry.h"
#include "proto/nkigraph.pb.h"
#include "util/host_array.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {

using Shape = builder::Shape;

// --- Parameters
// ----------------------------------------------------------------

// The allowed values of an integer parameter, both ends included; `why`, when
// given, is said in parentheses after the limits.
struct IntLimits {
  int64_t lo;
  int64_t hi;
  std::string why = "";
};

struct FloatLimits {
  double lo;
  double hi;
  std::string why = "";
};

// One field of a parameter struct P: its row in `list` and the parser
// (`spec`), and how the member is read from the canonical text, written back
// as text and checked against its limits.
template <typename P>
struct ParamField {
  ParamSpec spec;
  std::function<absl::Status(const std::string& text, P& params)> read;
  // nullopt for an optional field that is unset.
  std::function<std::optional<std::string>(const P& params)> format;
  std::function<absl::Status(const P& params)> check;

  // The field has no default: the user must set it.
  ParamField& Required() {
    spec.required = true;
    spec.default_value.clear();
    return *this;
  }
  // The values where the kernel's tiling of this integer changes (see
  // ParamSpec::edges; AroundTiles builds the usual ones); those outside
  // the field's limits are dropped.
  ParamField& Edges(std::vector<int64_t> values) {
    spec.edges.clear();
    for (const int64_t v : values) {
      if (spec.int_range && v >= spec.int_range->first &&
          v <= spec.int_range->second) {
        spec.edges.push_back(v);
      }
    }
    return *this;
  }
};

// t − 1, t and t + 1 for every tile size t: a parameter cut into tiles of
// t has a short last tile on one side and one tile more on the other.
inline std::vector<int64_t> AroundTiles(std::initializer_list<int64_t> tiles) {
  std::vector<int64_t> values;
  for (const int64_t t : tiles) {
    for (const int64_t v : {t - 1, t, t + 1}) values.push_back(v);
  }
  return values;
}

// The field factories. Each names P, the parameter struct, explicitly
// (IntField<P>(...)): a member of a base struct then converts to P's. The
// default of a field is the member's initializer in P.

template <typename P>
ParamField<P> IntField(std::string name, int64_t P::*member, IntLimits limits,
                       std::string help) {
  ParamField<P> f;
  f.spec = MakeParamSpec(name, ParamType::kInt, absl::StrCat(P{}.*member),
                         std::move(help));
  f.read = [member](const std::string& text, P& p) -> absl::Status {
    NKI_ASSIGN_OR_RETURN(p.*member, ParseIntText(text));
    return absl::OkStatus();
  };
  f.format = [member](const P& p) -> std::optional<std::string> {
    return absl::StrCat(p.*member);
  };
  f.check = [name, member, limits](const P& p) {
    return CheckRange(name, p.*member, limits.lo, limits.hi, limits.why);
  };
  f.spec.int_range = std::pair{limits.lo, limits.hi};
  return f;
}

// An integer that may stay unset (no default).
template <typename P>
ParamField<P> OptionalIntField(std::string name,
                               std::optional<int64_t> P::*member,
                               IntLimits limits, std::string help) {
  ParamField<P> f;
  f.spec = MakeParamSpec(name, ParamType::kInt, "", std::move(help));
  f.read = [member](const std::string& text, P& p) -> absl::Status {
    NKI_ASSIGN_OR_RETURN(p.*member, ParseIntText(text));
    return absl::OkStatus();
  };
  f.format = [member](const P& p) -> std::optional<std::string> {
    if (!(p.*member).has_value()) return std::nullopt;
    return absl::StrCat(*(p.*member));
  };
  f.check = [name, member, limits](const P& p) -> absl::Status {
    if (!(p.*member).has_value()) return absl::OkStatus();
    return CheckRange(name, *(p.*member), limits.lo, limits.hi, limits.why);
  };
  f.spec.int_range = std::pair{limits.lo, limits.hi};
  return f;
}

template <typename P>
ParamField<P> FloatField(std::string name, double P::*member,
                         FloatLimits limits, std::string help) {
  ParamField<P> f;
  f.spec = MakeParamSpec(name, ParamType::kFloat, FormatFloat(P{}.*member),
                         std::move(help));
  f.read = [member](const std::string& text, P& p) -> absl::Status {
    NKI_ASSIGN_OR_RETURN(p.*member, ParseFloatText(text));
    return absl::OkStatus();
  };
  f.format = [member](const P& p) -> std::optional<std::string> {
    return FormatFloat(p.*member);
  };
  f.check = [name, member, limits](const P& p) {
    return CheckFloatRange(name, p.*member, limits.lo, limits.hi, limits.why);
  };
  return f;
}

// A switch given as the integer 0 or 1 (bias=1).
template <typename P>
ParamField<P> FlagField(std::string name, bool P::*member, std::string help) {
  ParamField<P> f;
  f.spec = MakeParamSpec(name, ParamType::kInt, P{}.*member ? "1" : "0",
                         std::move(help));
  f.read = [name, member](const std::string& text, P& p) -> absl::Status {
    NKI_ASSIGN_OR_RETURN(const int64_t value, ParseIntText(text));
    NKI_RETURN_IF_ERROR(CheckRange(name, value, 0, 1));
    p.*member = value == 1;
    return absl::OkStatus();
  };
  f.format = [member](const P& p) -> std::optional<std::string> {
    return std::string(p.*member ? "1" : "0");
  };
  f.check = [](const P&) { return absl::OkStatus(); };
  f.spec.int_range = std::pair<int64_t, int64_t>{0, 1};
  return f;
}

// One of named values of an enum (activation ∈ {none, relu, ...}). For a
// member of a base of P, name E too: ChoiceField<P, E>.
template <typename P, typename E>
ParamField<P> ChoiceField(std::string name, E P::*member,
                          std::vector<std::pair<std::string, E>> choices,
                          std::string help) {
  ParamField<P> f;
  f.spec = MakeParamSpec(name, ParamType::kString, "", std::move(help));
  for (const auto& [text, value] : choices) {
    if (value == P{}.*member) f.spec.default_value = text;
    f.spec.choices.push_back(text);
  }
  f.read = [name, member, choices](const std::string& text,
                                   P& p) -> absl::Status {
    for (const auto& [choice, value] : choices) {
      if (choice != text) continue;
      p.*member = value;
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(
        absl::StrCat("parameter '", name, "' is '", text, "'"));
  };
  f.format = [member, choices](const P& p) -> std::optional<std::string> {
    for (const auto& [choice, value] : choices) {
      if (value == p.*member) return choice;
    }
    return std::nullopt;
  };
  f.check = [](const P&) { return absl::OkStatus(); };
  return f;
}

// `dtype` ∈ {float32, bfloat16}: the dtype of the kernel's floating inputs
// and outputs (KERNELS.md conventions).
template <typename P>
ParamField<P> DTypeField() {
  return ChoiceField<P, proto::DType>(
      "dtype", &P::dtype,
      {{"float32", proto::FLOAT32}, {"bfloat16", proto::BFLOAT16}},
      "dtype of the floating inputs and outputs; matmuls accumulate in "
      "float32");
}

// --- The I/O table
// ---------------------------------------------------------------

// How a tensor's values are spread over the ranks of a multi-rank kernel.
enum class RankLayout {
  kOneRank,     // a single-rank kernel: no rank axis
  kPerRank,     // each rank's own values: `list` says "per rank"
  kReplicated,  // the same values on every rank: no rank axis in the .npy
};

// One row of the I/O table, as functions of the parameters; the texts are
// what `list` shows.
template <typename P>
struct IoEntry {
  std::string name;
  IoRole role = IoRole::kInput;
  std::string shape_text;
  std::function<Shape(const P&)> shape;
  std::string dtype_text = "dtype";
  std::function<proto::DType(const P&)> dtype;
  RankLayout ranks = RankLayout::kOneRank;
  std::string when_text;
  std::function<bool(const P&)> when;
  std::string values_text;
  std::function<ValueRange(const P&)> values;
  std::string note;
  bool raw_bits = false;

  // The dtype, when it is not the `dtype` parameter.
  IoEntry& DType(std::string text, std::function<proto::DType(const P&)> fn) {
    dtype_text = std::move(text);
    dtype = std::move(fn);
    return *this;
  }
  IoEntry& Float32() {
    return DType("float32", [](const P&) { return proto::FLOAT32; });
  }
  IoEntry& Int32() {
    return DType("int32", [](const P&) { return proto::INT32; });
  }
  IoEntry& PerRank() {
    ranks = RankLayout::kPerRank;
    return *this;
  }
  IoEntry& Replicated() {
    ranks = RankLayout::kReplicated;
    return *this;
  }
  // The tensor exists only when `fn` holds ("bias=1").
  IoEntry& When(std::string text, std::function<bool(const P&)> fn) {
    when_text = std::move(text);
    when = std::move(fn);
    return *this;
  }
  // The values the input is meant to hold ("[0, E)").
  IoEntry& Values(std::string text, std::function<ValueRange(const P&)> fn) {
    values_text = std::move(text);
    values = std::move(fn);
    return *this;
  }
  IoEntry& Note(std::string text) {
    note = std::move(text);
    return *this;
  }
  // A 2-byte input whose host arrays are uint16 raw bits (for the
  // reference and the input maker): values no float path preserves, such
  // as integers packed into bf16 columns.
  IoEntry& RawBits() {
    raw_bits = true;
    return *this;
  }

  IoDecl Resolve(const P& p) const {
    IoDecl decl;
    decl.name = name;
    decl.role = role;
    decl.shape = shape(p);
    decl.dtype = dtype ? dtype(p) : proto::DTYPE_UNSPECIFIED;
    decl.per_rank = ranks != RankLayout::kReplicated;
    decl.present = !when || when(p);
    if (values) decl.values = values(p);
    decl.raw_bits = raw_bits;
    return decl;
  }

  // The row of `list`.
  IoSpec Listed() const {
    std::string shape_col = shape_text;
    if (ranks == RankLayout::kPerRank) absl::StrAppend(&shape_col, " per rank");
    if (ranks == RankLayout::kReplicated) {
      absl::StrAppend(&shape_col, " replicated");
    }
    std::string dtype_col = dtype_text;
    if (!values_text.empty()) absl::StrAppend(&dtype_col, " in ", values_text);
    if (raw_bits) absl::StrAppend(&dtype_col, " (as uint16 raw bits)");
    if (!note.empty()) absl::StrAppend(&dtype_col, " (", note, ")");
    if (!when_text.empty()) {
      absl::StrAppend(&dtype_col, " (only when ", when_text, ")");
    }
    return IoSpec{name, std::move(shape_col), std::move(dtype_col)};
  }
};

// The row factories of parameter struct P, named explicitly:
// InputRow<P>("x_in", "[B, c_in, L]", shape), OutputRow<P>(...),
// InputOutputRow<P>(...). The dtype is P's `dtype` member unless the row
// says otherwise.
template <typename P, IoRole kRole>
IoEntry<P> IoRow(std::string name, std::string shape_text,
                 std::function<Shape(const P&)> shape) {
  IoEntry<P> entry;
  entry.name = std::move(name);
  entry.role = kRole;
  entry.shape_text = std::move(shape_text);
  entry.shape = std::move(shape);
  if constexpr (requires(const P& p) { p.dtype; }) {
    entry.dtype = [](const P& p) { return p.dtype; };
  }
  return entry;
}
template <typename P>
inline constexpr auto InputRow = IoRow<P, IoRole::kInput>;
template <typename P>
inline constexpr auto OutputRow = IoRow<P, IoRole::kOutput>;
template <typename P>
inline constexpr auto InputOutputRow = IoRow<P, IoRole::kInputOutput>;

// --- The kernel
// ---------------------------------------------------------------

template <typename P>
struct KernelSpec {
  using Body = std::function<void(KernelIo&, const P&)>;

  std::string name;
  std::string summary;
  std::vector<ParamField<P>> params;
  // What the fields' own limits cannot say (a size that must be even, a
  // trace too big to hold); run after them. Messages name the parameter
  // and the limit.
  std::function<absl::Status(const P&)> validate = nullptr;
  std::vector<IoEntry<P>> io;
  // One rank and one core unless given.
  std::function<builder::WorldConfig(const P&)> world = nullptr;
  // Declares the inputs through the KernelIo, runs the kernel, produces
  // the outputs; once per core.
  Body body;
  // The oracle (optional): the outputs computed on the host from the inputs
  // as the device holds them, in the contract's .npy layouts.
  std::function<HostOutputs(const P&, const HostArrays&)> reference = nullptr;
  // The tolerance of the comparison with the reference (1e-4 unless given).
  std::function<double(const P&)> tolerance = nullptr;
  Comparison comparison = Comparison::kElementwise;
  // Inputs that must hold valid values (routing tables, checkpoints),
  // deterministic in the seed; those it leaves out are random.
  std::function<HostOutputs(const P&, uint64_t seed)> make_inputs = nullptr;
  // A representative configuration, for kernels with required parameters.
  Settings example = {};
  // The tolerance of an output compared otherwise than `tolerance` says
  // (KernelDef::output_tolerance); nullopt for the kernel's.
  std::function<std::optional<double>(const P&, const std::string& output)>
      output_tolerance = nullptr;

  // Every field's limits, then `validate`.
  absl::Status Validate(const P& p) const {
    for (const ParamField<P>& field : params) {
      NKI_RETURN_IF_ERROR(field.check(p));
    }
    return validate ? validate(p) : absl::OkStatus();
  }

  // The parameters of a parsed setting (every value present is canonical
  // text, defaults filled in), validated.
  absl::StatusOr<P> Read(const ParamValues& values) const {
    P p{};
    for (const ParamField<P>& field : params) {
      if (!values.Has(field.spec.name)) continue;
      NKI_RETURN_IF_ERROR(field.read(values.Str(field.spec.name), p));
    }
    NKI_RETURN_IF_ERROR(Validate(p));
    return p;
  }

  // name=value pairs of `p` in table order, as a parsed setting records
  // them in the graph.
  Settings SettingsOf(const P& p) const {
    Settings settings;
    for (const ParamField<P>& field : params) {
      if (std::optional<std::string> text = field.format(p)) {
        settings.emplace_back(field.spec.name, *std::move(text));
      }
    }
    return settings;
  }

  builder::WorldConfig World(const P& p) const {
    return world ? world(p) : builder::WorldConfig{};
  }

  std::vector<IoDecl> Io(const P& p) const {
    std::vector<IoDecl> decls;
    decls.reserve(io.size());
    for (const IoEntry<P>& entry : io) decls.push_back(entry.Resolve(p));
    return decls;
  }

  // The host side of the I/O table for `p` (validated first): for making
  // inputs.
  absl::StatusOr<HostIo> Host(const P& p) const {
    NKI_RETURN_IF_ERROR(Validate(p));
    return HostIo(Io(p), World(p).num_ranks);
  }
  // The same with every input present for `p` found among `inputs` (which
  // must outlive it): what a reference starts with.
  absl::StatusOr<HostIo> Host(const P& p, const HostArrays& inputs) const {
    NKI_ASSIGN_OR_RETURN(HostIo io, Host(p));
    NKI_RETURN_IF_ERROR(io.BindInputs(inputs));
    return io;
  }

  // Runs `body` (the kernel's unless given) once per core of the tracer's
  // world on the table's inputs and outputs.
  void TraceBody(builder::Tracer& tracer, const P& p,
                 const Body& body_override = nullptr) const {
    KernelIo kernel_io(tracer, name, Io(p));
    (body_override ? body_override : body)(kernel_io, p);
    kernel_io.Finish();
  }

  // Traces the kernel at `p` into a graph, outside the registry (tests
  // that swap the body for a variant).
  absl::StatusOr<proto::Graph> Trace(
      const P& p, const Body& body_override = nullptr) const {
    NKI_RETURN_IF_ERROR(Validate(p));
    builder::Tracer tracer(builder::TraceConfig{name, SettingsOf(p), World(p)});
    return tracer.Trace(
        [&](builder::Tracer& t) { TraceBody(t, p, body_override); });
  }
};

// The KernelDef the registry holds for `spec`: every hook reads the typed
// parameters the registry parsed.
template <typename P>
KernelDef ToKernelDef(const KernelSpec<P>& spec) {
  auto s = std::make_shared<const KernelSpec<P>>(spec);
  KernelDef def;
  def.name = s->name;
  def.summary = s->summary;
  for (const ParamField<P>& field : s->params) def.params.push_back(field.spec);
  for (const IoEntry<P>& entry : s->io) {
    (entry.role == IoRole::kOutput ? def.outputs : def.inputs)
        .push_back(entry.Listed());
  }
  def.comparison = s->comparison;
  def.example = s->example;
  def.read_params =
      [s](const ParamValues& values) -> absl::StatusOr<TypedParams> {
    NKI_ASSIGN_OR_RETURN(P p, s->Read(values));
    return TypedParams::Of(std::move(p));
  };
  def.world =
      [s](const ParamValues& values) -> absl::StatusOr<builder::WorldConfig> {
    NKI_ASSIGN_OR_RETURN(const P* p, values.Typed<P>());
    return s->World(*p);
  };
  def.body = [s](builder::Tracer& tracer, const ParamValues& values) {
    absl::StatusOr<const P*> p = values.Typed<P>();
    if (!p.ok()) {
      tracer.RecordError(p.status().message(), builder::Loc::current());
      return;
    }
    s->TraceBody(tracer, **p);
  };
  if (s->reference) {
    def.reference = [s](const ParamValues& values,
                        const HostArrays& inputs) -> HostOutputs {
      NKI_ASSIGN_OR_RETURN(const P* p, values.Typed<P>());
      return s->reference(*p, inputs);
    };
  }
  if (s->tolerance) {
    def.tolerance = [s](const ParamValues& values) -> double {
      absl::StatusOr<const P*> p = values.Typed<P>();
      return p.ok() ? s->tolerance(**p) : 0.0;
    };
  }
  if (s->output_tolerance) {
    def.output_tolerance =
        [s](const ParamValues& values,
            const std::string& output) -> std::optional<double> {
      absl::StatusOr<const P*> p = values.Typed<P>();
      if (!p.ok()) return std::nullopt;
      return s->output_tolerance(**p, output);
    };
  }
  if (s->make_inputs) {
    def.make_inputs = [s](const ParamValues& values,
                          uint64_t seed) -> HostOutputs {
      NKI_ASSIGN_OR_RETURN(const P* p, values.Typed<P>());
      return s->make_inputs(*p, seed);
    };
  }
  return def;
}

// a followed by b: a table built from shared rows and a kernel's own.
template <typename T>
std::vector<T> Concat(std::vector<T> a, std::vector<T> b) {
  a.insert(a.end(), std::make_move_iterator(b.begin()),
           std::make_move_iterator(b.end()));
  return a;
}

// The tolerance of a kernel with a `dtype` parameter: one for float32, one
// for bfloat16.
inline auto ToleranceByDType(double float32, double bfloat16) {
  return [=](const auto& p) {
    return p.dtype == proto::FLOAT32 ? float32 : bfloat16;
  };
}

// The tolerance of the kernels whose outputs are long sums of products,
// compared relative to an output's scale (Comparison::kScale): the MoE and
// decode families. float32 1e-4, bfloat16 3e-2.
inline double ScaleTolerance(proto::DType dtype) {
  return dtype == proto::FLOAT32 ? 1e-4 : 3e-2;
}

}  // namespace nkigraph::kernels

#endif  // NKIGRAPH_KERNELS_KERNEL_SPEC_H_
