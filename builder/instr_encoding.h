#ifndef NKIGRAPH_BUILDER_INSTR_ENCODING_H_
#define NKIGRAPH_BUILDER_INSTR_ENCODING_H_

#include <string>

#include "builder/stream_buffer.h"
#include "ops/access_pattern.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::builder {

// Appends `instr` as one element of a Stream's `instructions` field (field
// 2): the bytes protobuf's deterministic serialization writes for it, but
// several times faster on the tracer's hot path (no size cache, no
// reflection, no calls into the library per field). For messages the
// tracer builds: no unknown fields. tests/schema_test.cc holds it to
// protobuf's bytes, and fails when the schema gains a field this does not
// write.
void AppendInstruction(const proto::Instruction& instr, std::string* out);
// The same at the end of a traced stream (the tracer's hot path), with the
// operands held apart from `instr` (whose own operands are not read):
// `num_operands` patterns at `operands`, written as AccessPattern
// messages; an operand with tensor_id 0 and nothing else set is an empty
// one.
void AppendInstruction(const proto::Instruction& instr, int num_operands,
                       const ops::PatternRef* operands, StreamBuffer* out);

// Appends `tensor` as one element of a Graph's `tensors` field (field 5):
// the bytes protobuf's deterministic serialization writes for it (no
// unknown fields), without its size pass. A big trace declares hundreds
// of thousands of tensors; the tracer writes its table with this.
void AppendTensor(const proto::Tensor& tensor, StreamBuffer* out);

}  // namespace nkigraph::builder

#endif  // NKIGRAPH_BUILDER_INSTR_ENCODING_H_
