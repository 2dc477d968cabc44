#ifndef NKIGRAPH_OPS_INSTR_VIEW_H_
#define NKIGRAPH_OPS_INSTR_VIEW_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ops/access_pattern.h"
#include "ops/attr_spec.h"
#include "ops/device_profile.h"
#include "ops/op_def.h"
#include "ops/operand_facts.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::ops {

using TensorTable = google::protobuf::RepeatedPtrField<proto::Tensor>;

// One operand as the checks see it.
struct OperandInfo {
  // The operand's message when it was read from a graph's instruction
  // (MakeInstrView of a proto::Instruction, a decoded stream, BindInstrView);
  // nullptr in a view the builder made from its own form, which holds no
  // message and sets `ref` instead: checks read the accessors below, which
  // hold in both.
  const proto::AccessPattern* ap = nullptr;
  // The builder's form of the operand while it is checked (the tracer's,
  // which outlives the check); nullptr when `ap` is set. (One pointer, not
  // the pattern's fields: decoded streams keep an OperandInfo per operand,
  // and a bigger one showed in dispatch.)
  const PatternRef* ref = nullptr;
  // The tensor as the operand sees it: the declaration, or for a bitcast
  // view the viewed tensor (ops::ViewedTensor). nullptr: absent optional
  // operand.
  const proto::Tensor* tensor = nullptr;
  // ApElements of the pattern, counted once when the view is made or
  // decoded.
  int64_t num_elements = 0;
  // Where its elements lie, worked out when it is bound for execution (a
  // decoded stream, BindInstrView); unknown in a view made for checking.
  OperandFacts facts;

  bool present() const { return tensor != nullptr; }
  proto::MemorySpace space() const { return tensor->space(); }
  proto::DType dtype() const { return tensor->dtype(); }
  // The pattern's [stride, count] pairs, 2 * num_dims() values.
  // (Through data(): RepeatedField<int64_t>::Get is not inlined across
  // the protobuf library boundary.)
  const int64_t* pattern() const {
    return ap != nullptr ? ap->pattern().data() : ref->pattern;
  }
  int num_dims() const {
    return (ap != nullptr ? ap->pattern_size() : ref->pattern_size) / 2;
  }
  int64_t stride(int d) const { return pattern()[2 * d]; }
  int64_t count(int d) const { return pattern()[2 * d + 1]; }
  // The static offset, in elements of the (viewed) tensor.
  int64_t offset() const { return ap != nullptr ? ap->offset() : ref->offset; }
  int64_t elements() const { return num_elements; }
  // Partition count (dim 0) and elements per partition (the rest), the
  // 2-D view the engines work on.
  int64_t partitions() const { return count(0); }
  int64_t free_size() const { return elements() / count(0); }
  bool has_dynamic() const {
    if (ap != nullptr) {
      return ap->dynamic().kind() != proto::DynamicOffset::KIND_UNSPECIFIED;
    }
    return ref->has_dynamic &&
           ref->dynamic.kind != proto::DynamicOffset::KIND_UNSPECIFIED;
  }
};

inline constexpr int kMaxOperands = 20;
// The most attribute specs an op may have for a view to resolve its
// attributes by spec as it checks them (the builder's form; more are
// looked up by name). Ops declare at most 6 today.
inline constexpr int kMaxResolvedAttrs = 16;

// An instruction with its op definition, operands resolved to tensors, and
// attribute accessors. Built only through MakeInstrView, which runs the
// generic checks.
class InstrView {
 public:
  const proto::Instruction& instr() const { return *instr_; }
  const OpDef& def() const { return *def_; }
  const DeviceProfile& profile() const { return *profile_; }
  const proto::World& world() const { return *world_; }
  int num_operands() const { return num_operands_; }
  const OperandInfo& operand(int i) const {
    return operand_list_ != nullptr ? operand_list_[i] : operands_[i];
  }
  // The name of operand `i`'s role (a variadic role names every operand
  // from its slot on).
  absl::string_view RoleName(int i) const;

  // Attribute values, by the op's own specs (AttrOf in the op's file): the
  // instruction's value, or the schema's default.
  bool Has(const AttrSpec& spec) const {
    return Resolved(spec).attr != nullptr;
  }
  int64_t Int(const AttrSpec& spec) const {
    const proto::Attr* attr = Resolved(spec).attr;
    return attr != nullptr ? attr->i() : spec.int_default;
  }
  double Float(const AttrSpec& spec) const {
    const proto::Attr* attr = Resolved(spec).attr;
    return attr != nullptr ? attr->f() : spec.float_default;
  }
  absl::string_view Str(const AttrSpec& spec) const {
    const proto::Attr* attr = Resolved(spec).attr;
    return attr != nullptr ? absl::string_view(attr->s()) : spec.string_default;
  }
  absl::Span<const int64_t> Ints(const AttrSpec& spec) const {
    const proto::Attr* attr = Resolved(spec).attr;
    if (attr == nullptr) return {};
    return absl::MakeConstSpan(attr->ints().values().data(),
                               attr->ints().values_size());
  }
  // The index in spec.one_of of a string attribute's value, known when the
  // view was bound from a decoded stream or made from the builder's form
  // with its attributes' specs; -1 otherwise, or when the
  // attribute is absent (its default) or the spec allows any value.
  int Choice(const AttrSpec& spec) const { return Resolved(spec).choice; }

  // An InvalidArgument error prefixed by the op name.
  template <typename... Args>
  absl::Status Error(const Args&... args) const {
    return absl::InvalidArgumentError(absl::StrCat(def_->name, ": ", args...));
  }

 private:
  friend absl::Status MakeInstrView(const proto::Instruction&,
                                    const TensorTable&, const proto::World&,
                                    InstrView*);
  friend absl::Status MakeInstrView(const proto::Instruction&, int,
                                    const PatternRef*, const uint8_t*,
                                    const TensorTable&, const proto::World&,
                                    InstrView*);
  // MakeInstrView's work, for both of its forms; `messages`, when given,
  // holds the operands' messages, which the view's operands then point at.
  // `attr_specs`, when given, names each attribute's spec (then resolved_
  // receives them, by spec, as the view's table).
  static absl::Status Make(const proto::Instruction& instr, int n,
                           const PatternRef* operands,
                           const proto::Instruction* messages,
                           const uint8_t* attr_specs,
                           const TensorTable& tensors,
                           const proto::World& world, InstrView* view);
  friend absl::Status BindInstrView(const proto::Instruction&,
                                    const TensorTable&, const proto::World&,
                                    InstrView*);
  friend class DecodedStream;
  // Points the view at `instr` of op `def` in `world`, with no operands
  // or attribute table yet (Make and BindInstrView bind them).
  void Start(const proto::Instruction& instr, const OpDef* def,
             const proto::World& world) {
    instr_ = &instr;
    def_ = def;
    operand_list_ = nullptr;
    attrs_ = nullptr;
    world_ = &world;
    profile_ = &ProfileFor(world.target());
  }
  // The spec's attribute: from the decoded table when the view has one
  // and the spec is the op's own, else looked up by name.
  ResolvedAttr Resolved(const AttrSpec& spec) const {
    if (attrs_ != nullptr && &spec >= def_->attrs.data() &&
        &spec < def_->attrs.data() + def_->attrs.size()) {
      return attrs_[&spec - def_->attrs.data()];
    }
    return {TypedAttr(*instr_, spec), -1};
  }

  const proto::Instruction* instr_ = nullptr;
  const OpDef* def_ = nullptr;
  const DeviceProfile* profile_ = nullptr;
  const proto::World* world_ = nullptr;
  int num_operands_ = 0;
  // A decoded stream's operands of this instruction; nullptr: operands_.
  const OperandInfo* operand_list_ = nullptr;
  // Indexed like def_->attrs (a decoded stream's); nullptr: by name.
  const ResolvedAttr* attrs_ = nullptr;
  std::array<OperandInfo, kMaxOperands> operands_;
  // The attributes by spec of a view the builder made (attrs_ points here).
  std::array<ResolvedAttr, kMaxResolvedAttrs> resolved_;
  // The viewed tensors of bitcast operands, which operands_ point at; a
  // view is rebound (never copied) for each instruction.
  std::array<proto::Tensor, kMaxOperands> viewed_;
};

// Resolves and checks `instr` against the tensor table and the world:
// opcode known, operand count and roles, tensor ids, memory spaces, access
// patterns in bounds, dynamic offsets well formed, attributes as the op's
// schema declares them; then the op's own check.
// The tensors themselves must already be valid (the builder makes them so;
// the interpreter's loader checks them first).
absl::Status MakeInstrView(const proto::Instruction& instr,
                           const TensorTable& tensors,
                           const proto::World& world, InstrView* view);

// The same for an instruction whose operands are held apart from `instr`
// (whose own operands are not read): `num_operands` of them, the first
// min(num_operands, kMaxOperands) at `operands`, which must outlive the
// view. `attr_specs`, when not null, gives the index in the op's specs of
// each of instr's attributes (named as the spec is): they are then checked
// without looking names up and the view reads them by spec, with the
// choice of a string's value known (InstrView::Choice), as a decoded
// stream's. The tracer checks each instruction so, from its own form,
// without making an AccessPattern message per operand; the view's
// operands then have no `ap`. The same checks and messages as above.
absl::Status MakeInstrView(const proto::Instruction& instr, int num_operands,
                           const PatternRef* operands,
                           const uint8_t* attr_specs,
                           const TensorTable& tensors,
                           const proto::World& world, InstrView* view);

// Resolves operands and the op of an instruction that already passed
// MakeInstrView (the interpreter validates a graph once, then binds views
// cheaply as it executes). Only guards against ids out of range.
absl::Status BindInstrView(const proto::Instruction& instr,
                           const TensorTable& tensors,
                           const proto::World& world, InstrView* view);

// Binds operand `i` of `instr` (absent when the instruction has fewer
// operands or names no tensor) to its declaration in `*info`, its facts
// worked out (ComputeOperandFacts); a bitcast
// view is made in the tensor `view_storage` gives, which `info->tensor`
// then points at and which must outlive it. Only guards against ids out
// of range.
absl::Status BindOperand(const proto::Instruction& instr, int i,
                         const TensorTable& tensors, OperandInfo* info,
                         absl::FunctionRef<proto::Tensor*()> view_storage);

absl::string_view SpaceName(proto::MemorySpace space);
std::string SpaceSetName(SpaceSet spaces);

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_INSTR_VIEW_H_
