#ifndef NKIGRAPH_UTIL_FILE_IO_H_
#define NKIGRAPH_UTIL_FILE_IO_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace nkigraph {

// Reads a whole file, refusing files larger than `max_bytes`.
absl::StatusOr<std::string> ReadFile(const std::string& path,
                                     int64_t max_bytes = int64_t{1} << 32);

// Writes `contents` to a temporary file beside `path`, then renames it over
// `path`, so a reader never sees a half-written file.
absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view contents);
// The same for contents given in pieces, written one after the other.
absl::Status WriteFileAtomically(const std::string& path,
                                 absl::Span<const absl::string_view> pieces);

// Writes `head` at the start of the file at `path` (created, or emptied,
// when `size` >= 0, then sized to `size` bytes), then `part` at byte
// `offset`; with `size` < 0 the file must exist and only `part` is
// written. For a file several processes write parts of.
absl::Status WriteFileParts(const std::string& path, absl::string_view head,
                            int64_t size, int64_t offset,
                            absl::string_view part);

bool EndsWith(absl::string_view text, absl::string_view suffix);

// `name` made safe as a file name: characters other than letters, digits,
// '.', '_' and '-' become '_' (an empty name becomes "_").
std::string SafeFileName(absl::string_view name);

}  // namespace nkigraph

#endif  // NKIGRAPH_UTIL_FILE_IO_H_
