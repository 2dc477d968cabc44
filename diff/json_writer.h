#ifndef NKIGRAPH_DIFF_JSON_WRITER_H_
#define NKIGRAPH_DIFF_JSON_WRITER_H_

// A small streaming JSON writer: commas, indentation and string escaping
// (RFC 8259; invalid UTF-8 becomes U+FFFD), nothing else.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace nkigraph::diff {

class JsonWriter {
 public:
  // Appends to `out`; `indent` spaces per level, 0 for one line.
  explicit JsonWriter(std::string* out, int indent = 2)
      : out_(out), indent_(indent) {}

  void BeginObject() { Open('{'); }
  void EndObject() { Close('}'); }
  void BeginArray() { Open('['); }
  void EndArray() { Close(']'); }
  // Inside an object: the next value's key.
  void Key(absl::string_view key);

  void String(absl::string_view value);
  void Int(int64_t value);
  void Bool(bool value);
  void Null();
  // Key(key), then the value.
  void StringMember(absl::string_view key, absl::string_view value) {
    Key(key);
    String(value);
  }
  void IntMember(absl::string_view key, int64_t value) {
    Key(key);
    Int(value);
  }
  void BoolMember(absl::string_view key, bool value) {
    Key(key);
    Bool(value);
  }

  // `value` as a JSON string literal, quotes included.
  static std::string Quote(absl::string_view value);

 private:
  void Open(char bracket);
  void Close(char bracket);
  void BeforeValue();
  void NewLine();

  std::string* out_;
  int indent_;
  // Per open container: whether it has an element yet.
  std::vector<bool> has_element_;
  bool after_key_ = false;
};

}  // namespace nkigraph::diff

#endif  // NKIGRAPH_DIFF_JSON_WRITER_H_
