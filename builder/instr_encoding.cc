#include "builder/instr_encoding.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

namespace nkigraph::builder {
namespace {

// Wire types.
constexpr uint32_t kVarint = 0;
constexpr uint32_t kFixed64 = 1;
constexpr uint32_t kLengthDelimited = 2;

constexpr uint8_t Tag(uint32_t field, uint32_t wire_type) {
  return static_cast<uint8_t>((field << 3) | wire_type);  // fields < 16
}

// int64 and enum fields are written as 64-bit varints (negative values in
// ten bytes), as protobuf does.
uint64_t Signed(int64_t v) { return static_cast<uint64_t>(v); }

inline uint8_t* WriteVarint(uint64_t v, uint8_t* p) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

// A proto3 scalar: left out when zero.
inline uint8_t* WriteScalar(uint32_t field, uint64_t v, uint8_t* p) {
  if (v == 0) return p;
  *p++ = Tag(field, kVarint);
  return WriteVarint(v, p);
}

// Messages are written in one pass: a one-byte length is reserved, the body
// written after it, and the length filled in when the body is done. A body
// of 128 bytes or more (rare: its length takes more bytes) is moved up to
// make room. The caller reserves kLengthSlack spare bytes per message.
constexpr size_t kLengthSlack = 4;

inline uint8_t* BeginMessage(uint32_t field, uint8_t* p) {
  *p++ = Tag(field, kLengthDelimited);
  return p + 1;  // the length's byte
}
inline uint8_t* EndMessage(uint8_t* body, uint8_t* end) {
  const size_t size = static_cast<size_t>(end - body);
  if (size < 0x80) {
    body[-1] = static_cast<uint8_t>(size);
    return end;
  }
  uint8_t length[10];
  const size_t n = static_cast<size_t>(WriteVarint(size, length) - length);
  std::memmove(body + n - 1, body, size);
  std::memcpy(body - 1, length, n);
  return end + n - 1;
}

inline uint8_t* WriteBytes(uint32_t field, const std::string& s, uint8_t* p) {
  *p++ = Tag(field, kLengthDelimited);
  p = WriteVarint(s.size(), p);
  std::memcpy(p, s.data(), s.size());
  return p + s.size();
}

// A packed repeated int64: left out when empty.
inline uint8_t* WritePacked(uint32_t field, const int64_t* values, int n,
                            uint8_t* p) {
  if (n == 0) return p;
  uint8_t* body = BeginMessage(field, p);
  p = body;
  for (int i = 0; i < n; ++i) p = WriteVarint(Signed(values[i]), p);
  return EndMessage(body, p);
}

inline uint8_t* WritePacked(
    uint32_t field, const google::protobuf::RepeatedField<int64_t>& values,
    uint8_t* p) {
  return WritePacked(field, values.data(), values.size(), p);
}

uint8_t* WriteDynamic(const ops::DynamicRef& d, uint8_t* p) {
  p = WriteScalar(1, Signed(d.kind), p);
  p = WriteScalar(2, d.tensor_id, p);
  p = WriteScalar(3, Signed(d.offset_element), p);
  p = WriteScalar(4, Signed(d.offset_stride), p);
  p = WriteScalar(5, d.indirect_dim, p);
  return WriteScalar(6, Signed(d.oob_mode), p);
}

uint8_t* WriteOperand(const ops::PatternRef& ap, uint8_t* p) {
  p = WriteScalar(1, ap.tensor_id, p);
  p = WriteScalar(2, Signed(ap.offset), p);
  p = WritePacked(3, ap.pattern, ap.pattern_size, p);
  if (ap.has_dynamic) {
    uint8_t* body = BeginMessage(4, p);
    p = EndMessage(body, WriteDynamic(ap.dynamic, body));
  }
  return WriteScalar(5, Signed(ap.view_dtype), p);
}

uint8_t* WriteAttr(const proto::Attr& attr, uint8_t* p) {
  if (!attr.name().empty()) p = WriteBytes(1, attr.name(), p);
  switch (attr.value_case()) {
    case proto::Attr::kI:
      *p++ = Tag(2, kVarint);
      return WriteVarint(Signed(attr.i()), p);
    case proto::Attr::kF: {
      *p++ = Tag(3, kFixed64);
      const double f = attr.f();
      std::memcpy(p, &f, 8);  // little-endian, as the wire format
      return p + 8;
    }
    case proto::Attr::kS:
      return WriteBytes(4, attr.s(), p);
    case proto::Attr::kInts: {
      uint8_t* body = BeginMessage(5, p);
      return EndMessage(body, WritePacked(1, attr.ints().values(), body));
    }
    case proto::Attr::VALUE_NOT_SET:
      return p;
  }
  return p;
}

// At most the bytes WriteOperand and WriteAttr take, slack included.
constexpr size_t kMaxVarint = 10;
size_t OperandBound(const ops::PatternRef& ap) {
  return 3 * (1 + kLengthSlack) + 4 * (1 + kMaxVarint) +
         kMaxVarint * static_cast<size_t>(ap.pattern_size) +
         6 * (1 + kMaxVarint);
}
size_t AttrBound(const proto::Attr& attr) {
  size_t size = 2 * (1 + kLengthSlack) + attr.name().size() + 1 + kMaxVarint;
  if (attr.has_s()) size += attr.s().size() + kLengthSlack;
  if (attr.has_ints()) {
    size += 2 * (1 + kLengthSlack) + kMaxVarint * attr.ints().values_size();
  }
  return size;
}

// `operand(i)` gives operand i's pattern, for i < n; the instruction's own
// operands are not read.
template <typename Operand>
size_t InstructionBound(const proto::Instruction& instr, int n,
                        const Operand& operand) {
  size_t bound = 1 + kLengthSlack + 7 * (1 + kMaxVarint);
  for (int i = 0; i < n; ++i) bound += OperandBound(operand(i));
  for (const proto::Attr& attr : instr.attrs()) bound += AttrBound(attr);
  return bound;
}

template <typename Operand>
uint8_t* WriteInstruction(const proto::Instruction& instr, int n,
                          const Operand& operand, uint8_t* out) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__);
  uint8_t* body = BeginMessage(2, out);  // Stream.instructions
  uint8_t* p = body;
  p = WriteScalar(1, instr.id(), p);
  p = WriteScalar(2, Signed(instr.opcode()), p);
  for (int i = 0; i < n; ++i) {
    uint8_t* o = BeginMessage(3, p);
    p = EndMessage(o, WriteOperand(operand(i), o));
  }
  for (const proto::Attr& attr : instr.attrs()) {
    uint8_t* a = BeginMessage(4, p);
    p = EndMessage(a, WriteAttr(attr, a));
  }
  p = WriteScalar(5, instr.file(), p);
  p = WriteScalar(6, instr.line(), p);
  p = WriteScalar(7, instr.scope(), p);
  return EndMessage(body, p);
}

// A proto3 string: left out when empty.
inline uint8_t* WriteString(uint32_t field, const std::string& s, uint8_t* p) {
  return s.empty() ? p : WriteBytes(field, s, p);
}

// At most the bytes WriteTensor takes, slack included: the message, ten
// scalars, two strings, the packed shape and the value range.
size_t TensorBound(const proto::Tensor& t) {
  return (1 + kLengthSlack) + 10 * (1 + kMaxVarint) + 2 * (1 + kMaxVarint) +
         t.name().size() + t.output_name().size() + (1 + kLengthSlack) +
         kMaxVarint * static_cast<size_t>(t.shape_size()) + (1 + kLengthSlack) +
         2 * (1 + kMaxVarint);
}

uint8_t* WriteTensor(const proto::Tensor& t, uint8_t* out) {
  uint8_t* body = BeginMessage(5, out);  // Graph.tensors
  uint8_t* p = body;
  p = WriteScalar(1, t.id(), p);
  p = WriteString(2, t.name(), p);
  p = WriteScalar(3, Signed(t.space()), p);
  p = WriteScalar(4, Signed(t.dtype()), p);
  p = WritePacked(5, t.shape(), p);
  p = WriteScalar(6, Signed(t.address()), p);
  p = WriteScalar(7, t.partition_offset(), p);
  p = WriteScalar(8, Signed(t.role()), p);
  p = WriteString(9, t.output_name(), p);
  p = WriteScalar(10, t.per_rank() ? 1 : 0, p);
  p = WriteScalar(11, t.core(), p);
  p = WriteScalar(12, t.live_begin(), p);
  p = WriteScalar(13, t.live_end(), p);
  if (t.has_value_range()) {
    uint8_t* range = BeginMessage(14, p);
    uint8_t* q = WriteScalar(1, Signed(t.value_range().lo()), range);
    p = EndMessage(range, WriteScalar(2, Signed(t.value_range().hi()), q));
  }
  return EndMessage(body, p);
}

}  // namespace

void AppendTensor(const proto::Tensor& tensor, StreamBuffer* out) {
  uint8_t* const first = out->Room(TensorBound(tensor));
  out->Commit(static_cast<size_t>(WriteTensor(tensor, first) - first));
}

void AppendInstruction(const proto::Instruction& instr, std::string* out) {
  const auto operand = [&](int i) { return ops::PatternOf(instr.operands(i)); };
  const int n = instr.operands_size();
  const size_t start = out->size();
  out->resize(start + InstructionBound(instr, n, operand));
  uint8_t* const first = reinterpret_cast<uint8_t*>(out->data() + start);
  const uint8_t* end = WriteInstruction(instr, n, operand, first);
  out->resize(start + static_cast<size_t>(end - first));
}

void AppendInstruction(const proto::Instruction& instr, int num_operands,
                       const ops::PatternRef* operands, StreamBuffer* out) {
  const auto operand = [&](int i) -> const ops::PatternRef& {
    return operands[i];
  };
  uint8_t* const first =
      out->Room(InstructionBound(instr, num_operands, operand));
  out->Commit(static_cast<size_t>(
      WriteInstruction(instr, num_operands, operand, first) - first));
}

}  // namespace nkigraph::builder
