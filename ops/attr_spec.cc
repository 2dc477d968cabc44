#include "ops/attr_spec.h"

#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace nkigraph::ops {
namespace {

AttrType TypeOf(const proto::Attr& attr) {
  switch (attr.value_case()) {
    case proto::Attr::kI:
      return AttrType::kInt;
    case proto::Attr::kF:
      return AttrType::kFloat;
    case proto::Attr::kS:
      return AttrType::kString;
    case proto::Attr::kInts:
      return AttrType::kInts;
    case proto::Attr::VALUE_NOT_SET:
      break;
  }
  return AttrType::kInt;  // callers check VALUE_NOT_SET first
}

// `attr` if it holds a value of the spec's type, else nullptr.
const proto::Attr* Typed(const proto::Instruction& instr,
                         const AttrSpec& spec) {
  const proto::Attr* attr = FindAttr(instr, spec.name);
  if (attr == nullptr || attr->value_case() == proto::Attr::VALUE_NOT_SET ||
      TypeOf(*attr) != spec.type) {
    return nullptr;
  }
  return attr;
}

bool Allowed(const AttrSpec& spec, absl::string_view value) {
  if (spec.one_of.empty()) return true;
  if (spec.is_one_of != nullptr) return spec.is_one_of(value);
  for (absl::string_view allowed : spec.one_of) {
    if (SameName(allowed, value)) return true;
  }
  return false;
}

// `choice`, when given, receives a string's index in spec.one_of (-1 when
// the spec allows any value), found by scanning the list instead of
// asking Allowed.
absl::Status CheckValue(const AttrSpec& spec, const proto::Attr& attr,
                        int* choice = nullptr) {
  if (attr.value_case() == proto::Attr::VALUE_NOT_SET) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute '", spec.name, "' has no value; it must be ",
                     AttrTypeName(spec.type)));
  }
  if (TypeOf(attr) != spec.type) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attribute '", spec.name, "' is ", AttrTypeName(TypeOf(attr)),
        "; it must be ", AttrTypeName(spec.type)));
  }
  if (spec.type == AttrType::kInt &&
      (attr.i() < spec.min || attr.i() > spec.max)) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute '", spec.name, "' is ", attr.i(), "; ",
                     spec.min, " to ", spec.max, " allowed"));
  }
  if (spec.type == AttrType::kString && choice != nullptr) {
    *choice = -1;
    // (Read once: the loop would read the message's string again at each
    // step, as the compiler cannot tell the list does not alias it.)
    const absl::string_view value = attr.s();
    for (size_t k = 0; k < spec.one_of.size(); ++k) {
      if (SameName(spec.one_of[k], value)) {
        *choice = static_cast<int>(k);
        break;
      }
    }
    if (*choice >= 0 || spec.one_of.empty()) return absl::OkStatus();
  }
  if (spec.type == AttrType::kString && !Allowed(spec, attr.s())) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute '", spec.name, "' is '", attr.s(), "'; one of ",
                     absl::StrJoin(spec.one_of, ", "), " allowed"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view AttrTypeName(AttrType type) {
  switch (type) {
    case AttrType::kInt:
      return "an int";
    case AttrType::kFloat:
      return "a float";
    case AttrType::kString:
      return "a string";
    case AttrType::kInts:
      return "an int list";
  }
  return "unknown";
}

absl::Status CheckAttrs(const proto::Instruction& instr,
                        absl::Span<const AttrSpec> specs) {
  // Which specs the instruction sets, to find duplicates and missing
  // required ones (an op declares far fewer than 64 attributes).
  uint64_t seen = 0;
  size_t next = 0;  // attributes mostly come in the specs' order
  for (const proto::Attr& attr : instr.attrs()) {
    const size_t k = FindByName(specs, attr.name(), &next);
    if (k == specs.size()) {
      std::vector<absl::string_view> names;
      for (const AttrSpec& spec : specs) names.push_back(spec.name);
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown attribute '", attr.name(), "' (",
          names.empty() ? "the op takes none"
                        : absl::StrCat("it takes ", absl::StrJoin(names, ", ")),
          ")"));
    }
    const uint64_t bit = uint64_t{1} << (k & 63);
    if (seen & bit) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute '", attr.name(), "' is given twice"));
    }
    seen |= bit;
    if (absl::Status s = CheckValue(specs[k], attr); !s.ok()) return s;
  }
  for (size_t k = 0; k < specs.size(); ++k) {
    if (specs[k].required && !(seen & (uint64_t{1} << (k & 63)))) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute '", specs[k].name, "' is missing"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckAttrsOfSpecs(const proto::Instruction& instr,
                               const uint8_t* spec_of,
                               absl::Span<const AttrSpec> specs,
                               ResolvedAttr* table) {
  for (size_t k = 0; k < specs.size(); ++k) table[k] = ResolvedAttr{};
  uint64_t seen = 0;
  for (int j = 0; j < instr.attrs_size(); ++j) {
    const proto::Attr& attr = instr.attrs(j);
    const size_t k = spec_of[j];
    const uint64_t bit = uint64_t{1} << (k & 63);
    if (seen & bit) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute '", attr.name(), "' is given twice"));
    }
    seen |= bit;
    int choice = -1;
    if (absl::Status s = CheckValue(specs[k], attr, &choice); !s.ok()) {
      return s;
    }
    table[k] = ResolvedAttr{&attr, choice};
  }
  for (size_t k = 0; k < specs.size(); ++k) {
    if (specs[k].required && !(seen & (uint64_t{1} << (k & 63)))) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute '", specs[k].name, "' is missing"));
    }
  }
  return absl::OkStatus();
}

const proto::Attr* FindAttr(const proto::Instruction& instr,
                            absl::string_view name) {
  for (const proto::Attr& attr : instr.attrs()) {
    if (SameName(attr.name(), name)) return &attr;
  }
  return nullptr;
}

bool HasAttr(const proto::Instruction& instr, const AttrSpec& spec) {
  return Typed(instr, spec) != nullptr;
}

int64_t IntValue(const proto::Instruction& instr, const AttrSpec& spec) {
  const proto::Attr* attr = Typed(instr, spec);
  return attr != nullptr ? attr->i() : spec.int_default;
}

double FloatValue(const proto::Instruction& instr, const AttrSpec& spec) {
  const proto::Attr* attr = Typed(instr, spec);
  return attr != nullptr ? attr->f() : spec.float_default;
}

absl::string_view StringValue(const proto::Instruction& instr,
                              const AttrSpec& spec) {
  const proto::Attr* attr = Typed(instr, spec);
  return attr != nullptr ? absl::string_view(attr->s()) : spec.string_default;
}

absl::Span<const int64_t> IntsValue(const proto::Instruction& instr,
                                    const AttrSpec& spec) {
  const proto::Attr* attr = Typed(instr, spec);
  if (attr == nullptr) return {};
  return absl::MakeConstSpan(attr->ints().values().data(),
                             attr->ints().values_size());
}

const proto::Attr* TypedAttr(const proto::Instruction& instr,
                             const AttrSpec& spec) {
  return Typed(instr, spec);
}

ResolvedAttr ResolveAttr(const proto::Instruction& instr,
                         const AttrSpec& spec) {
  ResolvedAttr resolved{Typed(instr, spec), -1};
  if (resolved.attr != nullptr && spec.type == AttrType::kString) {
    const absl::string_view value = resolved.attr->s();
    for (size_t k = 0; k < spec.one_of.size(); ++k) {
      if (SameName(spec.one_of[k], value)) {
        resolved.choice = static_cast<int>(k);
        break;
      }
    }
  }
  return resolved;
}

}  // namespace nkigraph::ops
