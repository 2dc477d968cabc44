#ifndef NKIGRAPH_UTIL_UTF8_H_
#define NKIGRAPH_UTIL_UTF8_H_

// UTF-8 validity for text that came from a file: names, scopes and
// messages of a hostile graph may hold any bytes, while protobuf's string
// fields and JSON hold only valid UTF-8.

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace nkigraph {

// Length of the valid UTF-8 sequence starting at text[i] (1 for ASCII), or
// 0 where none starts (a stray continuation byte, an overlong or truncated
// sequence, a surrogate, a code point above U+10FFFF). i < text.size().
size_t Utf8SequenceLength(absl::string_view text, size_t i);

// `text` with every byte that starts no valid sequence replaced by U+FFFD
// (the replacement character): `text` itself when it is valid.
std::string ToValidUtf8(absl::string_view text);

}  // namespace nkigraph

#endif  // NKIGRAPH_UTIL_UTF8_H_
