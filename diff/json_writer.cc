#include "diff/json_writer.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "util/utf8.h"

namespace nkigraph::diff {

std::string JsonWriter::Quote(absl::string_view value) {
  std::string out = "\"";
  for (size_t i = 0; i < value.size();) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    if (c >= 0x80) {
      const size_t length = Utf8SequenceLength(value, i);
      if (length == 0) {
        out += "\\ufffd";
        ++i;
      } else {
        out.append(value.data() + i, length);
        i += length;
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += absl::StrFormat("\\u%04x", c);
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  out += '"';
  return out;
}

void JsonWriter::NewLine() {
  if (indent_ <= 0) return;
  *out_ += '\n';
  out_->append(has_element_.size() * static_cast<size_t>(indent_), ' ');
}

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!has_element_.empty()) {
    if (has_element_.back()) *out_ += ',';
    has_element_.back() = true;
    NewLine();
  }
}

void JsonWriter::Open(char bracket) {
  BeforeValue();
  *out_ += bracket;
  has_element_.push_back(false);
}

void JsonWriter::Close(char bracket) {
  const bool had_elements = !has_element_.empty() && has_element_.back();
  if (!has_element_.empty()) has_element_.pop_back();
  if (had_elements) NewLine();
  *out_ += bracket;
  if (has_element_.empty() && indent_ > 0) *out_ += '\n';
}

void JsonWriter::Key(absl::string_view key) {
  BeforeValue();
  *out_ += Quote(key);
  *out_ += indent_ > 0 ? ": " : ":";
  after_key_ = true;
}

void JsonWriter::String(absl::string_view value) {
  BeforeValue();
  *out_ += Quote(value);
}

void JsonWriter::Int(int64_t value) {
  BeforeValue();
  absl::StrAppend(out_, value);
}

void JsonWriter::Bool(bool value) {
  BeforeValue();
  *out_ += value ? "true" : "false";
}

void JsonWriter::Null() {
  BeforeValue();
  *out_ += "null";
}

}  // namespace nkigraph::diff
