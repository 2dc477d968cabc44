#ifndef NKIGRAPH_UTIL_TEXT_TABLE_H_
#define NKIGRAPH_UTIL_TEXT_TABLE_H_

// Plain-text tables for the CLI's reports (`info`, `profile`).

#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace nkigraph {

// Prints `rows` as left-aligned columns with two spaces between them, each
// line starting with `indent`; the last cell of a row is not padded.
void PrintTable(const std::vector<std::vector<std::string>>& rows,
                absl::string_view indent, std::ostream& out);

}  // namespace nkigraph

#endif  // NKIGRAPH_UTIL_TEXT_TABLE_H_
