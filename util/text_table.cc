#include "util/text_table.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace nkigraph {

void PrintTable(const std::vector<std::vector<std::string>>& rows,
                absl::string_view indent, std::ostream& out) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    if (row.size() > widths.size()) widths.resize(row.size(), 0);
    for (size_t c = 0; c < row.size(); ++c) {
      widths[c] = std::max(widths[c], row[c].size());
    }
  }
  for (const auto& row : rows) {
    std::string line(indent);
    for (size_t c = 0; c < row.size(); ++c) {
      if (c + 1 == row.size()) {
        line += row[c];
      } else {
        absl::StrAppend(&line, absl::StrFormat("%-*s  ", widths[c], row[c]));
      }
    }
    out << line << "\n";
  }
}

}  // namespace nkigraph
