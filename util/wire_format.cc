#include "util/wire_format.h"

#include "google/protobuf/io/coded_stream.h"

namespace nkigraph {
namespace {

using google::protobuf::io::CodedOutputStream;

constexpr uint32_t kVarint = 0;
constexpr uint32_t kLengthDelimited = 2;

void AppendVarint(uint64_t value, std::string* out) {
  uint8_t buffer[10];
  uint8_t* end = CodedOutputStream::WriteVarint64ToArray(value, buffer);
  out->append(reinterpret_cast<const char*>(buffer), end - buffer);
}

}  // namespace

void AppendVarintField(int field, uint64_t value, std::string* out) {
  AppendVarint((static_cast<uint32_t>(field) << 3) | kVarint, out);
  AppendVarint(value, out);
}

void AppendLengthDelimited(int field, uint64_t size, std::string* out) {
  AppendVarint((static_cast<uint32_t>(field) << 3) | kLengthDelimited, out);
  AppendVarint(size, out);
}

}  // namespace nkigraph
