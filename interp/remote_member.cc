#include "interp/remote_member.h"

#include "absl/strings/str_cat.h"
#include "ops/op_def.h"
#include "util/dtype.h"
#include "util/status_macros.h"

namespace nkigraph::interp {
namespace {

bool Reads(const ops::InstrView& view, int i) {
  const ops::OperandRole* role = ops::OperandRoleOf(view.def(), i);
  return view.operand(i).present() && role != nullptr &&
         role->access != ops::Access::kWrite;
}

}  // namespace

absl::Status WriteContribution(ProgramState& p, WireWriter& out) {
  const absl::Status bound = p.Bind(p.current());
  out.Status(bound);
  if (!bound.ok()) return bound;
  const ops::InstrView& view = p.view();
  out.Int(view.num_operands());
  for (int i = 0; i < view.num_operands(); ++i) {
    if (!Reads(view, i)) {
      out.Status(absl::OkStatus());
      out.Bytes({});
      continue;
    }
    absl::StatusOr<absl::Span<const uint8_t>> raw = p.ReadRaw(i);
    out.Status(raw.status());
    if (raw.ok()) {
      out.Bytes({reinterpret_cast<const char*>(raw->data()), raw->size()});
    } else {
      out.Bytes({});
    }
  }
  return absl::OkStatus();
}

MemberContribution ReadContribution(WireReader& in) {
  MemberContribution c;
  c.bind = in.Status();
  if (!c.bind.ok()) return c;
  const int64_t n = in.Int();
  if (n < 0 || n > ops::kMaxOperands) return c;
  c.read.resize(n);
  c.raw.resize(n);
  for (int64_t i = 0; i < n && in.ok(); ++i) {
    c.read[i] = in.Status();
    c.raw[i] = std::string(in.Bytes());
  }
  return c;
}

absl::StatusOr<absl::Span<const uint8_t>> RemoteMember::Raw(int i) const {
  if (i < 0 || i >= static_cast<int>(contribution_.read.size())) {
    return absl::InternalError(
        absl::StrCat("operand ", i, " of rank ", rank_,
                     " was not sent by the process holding it"));
  }
  NKI_RETURN_IF_ERROR(contribution_.read[i]);
  const std::string& raw = contribution_.raw[i];
  const int64_t expected =
      view_.operand(i).elements() * DTypeSize(view_.operand(i).dtype());
  if (static_cast<int64_t>(raw.size()) != expected) {
    return absl::InternalError(absl::StrCat("operand ", i, " of rank ", rank_,
                                            " arrived with ", raw.size(),
                                            " bytes, not ", expected));
  }
  return absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(raw.data()),
                                   raw.size());
}

absl::StatusOr<absl::Span<const uint8_t>> RemoteMember::ReadRaw(int i) {
  return Raw(i);
}

absl::StatusOr<absl::Span<const float>> RemoteMember::ReadFloat(int i) {
  NKI_ASSIGN_OR_RETURN(absl::Span<const uint8_t> raw, Raw(i));
  // As ProgramState converts: rows skipped by an OOB_SKIP offset arrive as
  // zero bytes, which read as +0 in every dtype.
  const ops::OperandInfo& op = view_.operand(i);
  std::vector<float>& out = floats_[i];
  out.resize(op.elements());
  LoadRowAsFloat(op.dtype(), raw.data(), op.elements(), out.data());
  return absl::MakeConstSpan(out);
}

absl::StatusOr<absl::Span<const int64_t>> RemoteMember::ReadInt(int i) {
  NKI_ASSIGN_OR_RETURN(absl::Span<const uint8_t> raw, Raw(i));
  const ops::OperandInfo& op = view_.operand(i);
  const int64_t esize = DTypeSize(op.dtype());
  std::vector<int64_t>& out = ints_[i];
  out.resize(op.elements());
  for (int64_t e = 0; e < op.elements(); ++e) {
    out[e] = LoadAsInt(op.dtype(), raw.data() + e * esize);
  }
  return absl::MakeConstSpan(out);
}

absl::StatusOr<ops::ExecContext::Rows> RemoteMember::ReadRows(int i) {
  NKI_RETURN_IF_ERROR(Raw(i).status());
  // Not laid out in device memory here: the op falls back to ReadRaw.
  return Rows{};
}

}  // namespace nkigraph::interp
