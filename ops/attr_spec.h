#ifndef NKIGRAPH_OPS_ATTR_SPEC_H_
#define NKIGRAPH_OPS_ATTR_SPEC_H_

// An op's attribute schema: the name, type, default and allowed values of
// each attribute it takes, declared once in the op's file. The loader checks
// every instruction against it (CheckAttrs, run by MakeInstrView), the
// builder writes through it, and readers take their defaults from it.
//
// Inside an op's file attributes are named by compile-time handles
// (AttrOf), so a reader cannot name an attribute the op does not declare;
// code outside ops/ looks them up by name through the op's definition
// (ops/instr_facts.h), checked at run time.

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::ops {

enum class AttrType { kInt, kFloat, kString, kInts };
absl::string_view AttrTypeName(AttrType type);

struct AttrSpec {
  absl::string_view name;
  AttrType type = AttrType::kInt;
  absl::string_view doc;  // one line
  // An instruction without the attribute means the default, unless the
  // attribute is required (then the loader refuses it).
  bool required = false;
  int64_t int_default = 0;
  double float_default = 0.0;
  absl::string_view string_default;  // kInts: the default is the empty list
  // kInt: the values allowed, inclusive.
  int64_t min = std::numeric_limits<int64_t>::min();
  int64_t max = std::numeric_limits<int64_t>::max();
  // kString: the values allowed; empty allows any. For a long list,
  // `is_one_of` may answer faster (a hash lookup).
  absl::Span<const absl::string_view> one_of;
  bool (*is_one_of)(absl::string_view value) = nullptr;
  // The builder writes it even when it equals the default, as graph files
  // always have (dropping it would change their bytes).
  bool written_at_default = false;

  constexpr AttrSpec Range(int64_t lo, int64_t hi) const {
    AttrSpec spec = *this;
    spec.min = lo;
    spec.max = hi;
    return spec;
  }
  constexpr AttrSpec OneOf(
      absl::Span<const absl::string_view> values,
      bool (*is_one_of)(absl::string_view) = nullptr) const {
    AttrSpec spec = *this;
    spec.one_of = values;
    spec.is_one_of = is_one_of;
    return spec;
  }
  constexpr AttrSpec Required() const {
    AttrSpec spec = *this;
    spec.required = true;
    return spec;
  }
  constexpr AttrSpec WrittenAtDefault() const {
    AttrSpec spec = *this;
    spec.written_at_default = true;
    return spec;
  }
};

// A spec of `type` without a default; the builders below add theirs.
constexpr AttrSpec TypedSpec(absl::string_view name, AttrType type,
                             absl::string_view doc) {
  AttrSpec spec;
  spec.name = name;
  spec.type = type;
  spec.doc = doc;
  return spec;
}
constexpr AttrSpec IntSpec(absl::string_view name, int64_t def,
                           absl::string_view doc) {
  AttrSpec spec = TypedSpec(name, AttrType::kInt, doc);
  spec.int_default = def;
  return spec;
}
// An int that is 0 (the default) or 1.
constexpr AttrSpec FlagSpec(absl::string_view name, absl::string_view doc) {
  return IntSpec(name, 0, doc).Range(0, 1);
}
constexpr AttrSpec FloatSpec(absl::string_view name, double def,
                             absl::string_view doc) {
  AttrSpec spec = TypedSpec(name, AttrType::kFloat, doc);
  spec.float_default = def;
  return spec;
}
constexpr AttrSpec StringSpec(absl::string_view name, absl::string_view def,
                              absl::string_view doc) {
  AttrSpec spec = TypedSpec(name, AttrType::kString, doc);
  spec.string_default = def;
  return spec;
}
constexpr AttrSpec IntsSpec(absl::string_view name, absl::string_view doc) {
  return TypedSpec(name, AttrType::kInts, doc);
}

// The spec named `name` in an op's attribute table, found at compile time:
// naming an attribute the table lacks does not compile.
template <size_t N>
consteval const AttrSpec& AttrOf(const AttrSpec (&specs)[N],
                                 std::string_view name) {
  for (const AttrSpec& spec : specs) {
    if (std::string_view(spec.name.data(), spec.name.size()) == name) {
      return spec;
    }
  }
  throw std::logic_error("the op declares no attribute of that name");
}

// Whether two role, attribute or value names are equal. Names are a few
// characters long, so a loop the compiler inlines beats a call to memcmp;
// the pointer test pays off in the builder's lookups, whose names are string
// literals the linker merges with the op file's (an attribute read from a
// graph is the proto's own string and never matches by pointer).
inline bool SameName(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size()) return false;
  if (a.data() == b.data()) return true;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

// The index of the entry of `items` (roles or attribute specs) named `name`,
// or items.size(); searched from `*next`, where the previous call left off,
// which it then advances: instructions give roles and attributes in the
// def's order, so the first comparison usually hits.
template <typename T>
size_t FindByName(absl::Span<const T> items, absl::string_view name,
                  size_t* next) {
  const size_t n = items.size();
  for (size_t k = 0, i = *next; k < n; ++k, ++i) {
    if (i >= n) i = 0;
    if (SameName(items[i].name, name)) {
      *next = i + 1;
      return i;
    }
  }
  return n;
}

// Checks an instruction's attributes against `specs`: every attribute
// declared, once, with the declared type and an allowed value; every
// required one present. The message names the attribute.
absl::Status CheckAttrs(const proto::Instruction& instr,
                        absl::Span<const AttrSpec> specs);

// The attribute named `name`, or nullptr.
const proto::Attr* FindAttr(const proto::Instruction& instr,
                            absl::string_view name);

// Values of the attribute `spec` describes, on an instruction that passed
// CheckAttrs: its own value, or the spec's default when absent. (On an
// unchecked instruction a value of the wrong type also reads as the
// default.)
bool HasAttr(const proto::Instruction& instr, const AttrSpec& spec);
int64_t IntValue(const proto::Instruction& instr, const AttrSpec& spec);
double FloatValue(const proto::Instruction& instr, const AttrSpec& spec);
absl::string_view StringValue(const proto::Instruction& instr,
                              const AttrSpec& spec);
absl::Span<const int64_t> IntsValue(const proto::Instruction& instr,
                                    const AttrSpec& spec);

// The attribute `spec` describes when the instruction has it with the
// spec's type; nullptr otherwise (its value is the default).
const proto::Attr* TypedAttr(const proto::Instruction& instr,
                             const AttrSpec& spec);

// One attribute of an instruction as its op's spec reads it, found once
// (ops/decoded_stream.h) instead of by name at every read: TypedAttr, and
// for a string attribute with a set of allowed values the index of its
// value in it (-1: absent, so the default, or any value allowed).
struct ResolvedAttr {
  const proto::Attr* attr = nullptr;
  int choice = -1;
};
ResolvedAttr ResolveAttr(const proto::Instruction& instr, const AttrSpec& spec);

// CheckAttrs for attributes whose specs are already known: attribute j of
// `instr` is specs[spec_of[j]] (the builder names each through its op's
// spec, so its name is the spec's). The same checks in the same order,
// with the same messages, without looking names up; fills
// table[0, specs.size()) with what ResolveAttr answers for each spec.
absl::Status CheckAttrsOfSpecs(const proto::Instruction& instr,
                               const uint8_t* spec_of,
                               absl::Span<const AttrSpec> specs,
                               ResolvedAttr* table);

}  // namespace nkigraph::ops

#endif  // NKIGRAPH_OPS_ATTR_SPEC_H_
