#ifndef NKIGRAPH_UTIL_WIRE_FORMAT_H_
#define NKIGRAPH_UTIL_WIRE_FORMAT_H_

// Pieces of the protobuf binary format, for assembling a message from
// parts serialized separately (the tracer writes a graph's streams from
// their instructions' bytes) with the bytes protobuf writes for the whole.

#include <cstdint>
#include <string>

namespace nkigraph {

// Field `field` as a varint (uint32/uint64/enum fields of non-negative
// values).
void AppendVarintField(int field, uint64_t value, std::string* out);

// The tag and length of a length-delimited field `field` of `size` bytes;
// the caller appends the bytes.
void AppendLengthDelimited(int field, uint64_t size, std::string* out);

}  // namespace nkigraph

#endif  // NKIGRAPH_UTIL_WIRE_FORMAT_H_
