#ifndef NKIGRAPH_BUILDER_EMITTER_H_
#define NKIGRAPH_BUILDER_EMITTER_H_

// The one way an instruction is recorded: the typed ISA calls
// (builder/isa.h) and front-ends in other languages both go through it.

#include <array>
#include <cstdint>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "builder/tensor.h"
#include "builder/tracer.h"
#include "ops/instr_view.h"
#include "ops/op_def.h"

namespace nkigraph::builder {

// Builds one instruction through its op's definition: operands by role
// name, placed in the def's role order (absent optional ones as empty
// operands); attributes by name, checked against the op's schema and left
// out when they equal their default (unless the schema says graphs always
// carry them); then the op's checks. Naming a role or attribute the op does
// not declare, or giving a value of the wrong type, fails the trace.
class Emitter {
 public:
  Emitter(proto::Opcode opcode, const Tensor& anchor, Loc loc)
      : def_(ops::FindOp(opcode)), loc_(loc) {
    tracer_ = anchor.valid() ? anchor.tracer() : Tracer::Current();
    if (tracer_ != nullptr) instr_ = tracer_->BeginInstr(opcode, loc);
    if (def_ != nullptr) {
      const size_t n = def_->roles.size();
      fixed_ = n > 0 && def_->roles[n - 1].variadic ? n - 1 : n;
      if (fixed_ > slots_.size()) def_ = nullptr;  // no op has that many
    }
  }

  // `t` for the role named `role`; a variadic role takes one per call.
  Emitter& Operand(absl::string_view role, const Tensor& t) {
    if (!Active()) return *this;
    const size_t r = ops::FindByName(def_->roles, role, &next_role_);
    if (r == def_->roles.size()) {
      Fail("no operand role '", role, "'");
    } else if (r >= fixed_) {
      variadic_.push_back(&t);
    } else if (slots_[r] != nullptr) {
      Fail("operand '", role, "' given twice");
    } else {
      slots_[r] = &t;
    }
    return *this;
  }
  Emitter& Int(absl::string_view name, int64_t value) {
    const ops::AttrSpec* spec = Spec(name, ops::AttrType::kInt);
    if (spec != nullptr && (Keep(*spec) || value != spec->int_default)) {
      NewAttr(*spec)->set_i(value);
    }
    return *this;
  }
  Emitter& Float(absl::string_view name, double value) {
    const ops::AttrSpec* spec = Spec(name, ops::AttrType::kFloat);
    if (spec != nullptr && (Keep(*spec) || value != spec->float_default)) {
      NewAttr(*spec)->set_f(value);
    }
    return *this;
  }
  Emitter& Str(absl::string_view name, absl::string_view value) {
    const ops::AttrSpec* spec = Spec(name, ops::AttrType::kString);
    if (spec != nullptr && (Keep(*spec) || value != spec->string_default)) {
      proto::Attr* attr = NewAttr(*spec);
      // The reused attribute mostly holds this value already (the previous
      // instruction of the opcode's): no call into the library then.
      if (!attr->has_s() || attr->s() != value) {
        attr->set_s(value.data(), value.size());
      }
    }
    return *this;
  }
  Emitter& Ints(absl::string_view name, const std::vector<int64_t>& values) {
    const ops::AttrSpec* spec = Spec(name, ops::AttrType::kInts);
    if (spec != nullptr && (Keep(*spec) || !values.empty())) {
      auto* list = NewAttr(*spec)->mutable_ints()->mutable_values();
      list->Clear();  // a reused attribute's earlier list
      list->Add(values.begin(), values.end());
    }
    return *this;
  }
  Instr Finish() {
    if (tracer_ == nullptr) return Instr{};
    if (Active()) {
      static const Tensor* const kAbsent = new Tensor();
      for (size_t r = 0; r < fixed_; ++r) {
        tracer_->AddOperand(instr_,
                            slots_[r] != nullptr ? *slots_[r] : *kAbsent, loc_);
      }
      for (const Tensor* t : variadic_) tracer_->AddOperand(instr_, *t, loc_);
    }
    return tracer_->FinishInstr(instr_, loc_);
  }

 private:
  bool Active() const {
    return instr_ != nullptr && def_ != nullptr && !tracer_->failed();
  }
  // Required attributes and those graphs always carry are written as given.
  static bool Keep(const ops::AttrSpec& spec) {
    return spec.required || spec.written_at_default;
  }
  // The schema entry for `name`, or nullptr (after failing the trace when
  // the op does not declare it with this type).
  const ops::AttrSpec* Spec(absl::string_view name, ops::AttrType type) {
    if (!Active()) return nullptr;
    const size_t k = ops::FindByName(def_->attrs, name, &next_attr_);
    if (k == def_->attrs.size()) {
      Fail("no attribute '", name, "'");
      return nullptr;
    }
    const ops::AttrSpec& spec = def_->attrs[k];
    if (spec.type == type) return &spec;
    Fail("attribute '", name, "' is ", ops::AttrTypeName(spec.type), ", not ",
         ops::AttrTypeName(type));
    return nullptr;
  }
  // (By its spec: the tracer checks the attribute against the spec
  // without looking its name up again.)
  proto::Attr* NewAttr(const ops::AttrSpec& spec) {
    return tracer_->AddAttr(instr_, spec.name,
                            static_cast<int>(&spec - def_->attrs.data()));
  }
  // Out of line: builder bugs are rare, the hot paths stay small.
  [[gnu::noinline, gnu::cold]] void Fail(absl::string_view a,
                                         absl::string_view b,
                                         absl::string_view c,
                                         absl::string_view d = "",
                                         absl::string_view e = "",
                                         absl::string_view f = "") {
    tracer_->RecordError(absl::StrCat(def_->name, ": ", a, b, c, d, e, f),
                         loc_);
  }

  const ops::OpDef* def_;
  Tracer* tracer_ = nullptr;
  proto::Instruction* instr_ = nullptr;
  Loc loc_;
  size_t fixed_ = 0;  // roles before a variadic last one
  size_t next_role_ = 0;
  size_t next_attr_ = 0;
  std::array<const Tensor*, ops::kMaxOperands> slots_{};  // by fixed role
  absl::InlinedVector<const Tensor*, 2> variadic_;
};

}  // namespace nkigraph::builder

#endif  // NKIGRAPH_BUILDER_EMITTER_H_
