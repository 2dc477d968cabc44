#ifndef NKIGRAPH_DIFF_FORMAT_H_
#define NKIGRAPH_DIFF_FORMAT_H_

// Printing a DiffResult: human-readable text (format_text.cc) or JSON
// (format_json.cc). Both end with the summary.

#include <string>

#include "diff/result.h"

namespace nkigraph::diff {

struct FormatOptions {
  std::string label_a = "A";  // how the output names the two graphs,
  std::string label_b = "B";  // usually their file names
  bool strict = false;        // recorded in the output
};

// Sections (header, tensors, one per core with differences), one line per
// change and one indented line per changed field:
//   + added, - removed, ~ changed (a:<index in A> b:<index in B>)
// and last the summary line.
std::string FormatText(const DiffResult& result, const FormatOptions& options);

// "summary: 1 added, 1 removed, 1 changed (instructions: ...; tensors:
// ...; header: ...)", or "summary: no differences (...)"; no newline.
std::string SummaryLine(const DiffResult& result);

// One JSON object; its last member is "summary".
std::string FormatJson(const DiffResult& result, const FormatOptions& options);

}  // namespace nkigraph::diff

#endif  // NKIGRAPH_DIFF_FORMAT_H_
