#ifndef NKIGRAPH_VIZ_RENDER_H_
#define NKIGRAPH_VIZ_RENDER_H_

// Output of a picture: DOT text (the graph as built, no layout), or SVG /
// PNG laid out by dot and rendered by libgvc. One Graphviz context for
// the process, used by one thread at a time (Graphviz is not
// thread-safe).

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "viz/view_model.h"

namespace nkigraph::viz {

enum class Format { kDot, kSvg, kPng };

// By extension: .dot / .gv, .svg, .png.
absl::StatusOr<Format> FormatForPath(absl::string_view path);
absl::string_view FormatName(Format format);

// The rendered bytes. Layout or rendering failures (Graphviz's own
// messages) come back as errors; layout runs in a child process, so a
// Graphviz crash is an error too.
absl::StatusOr<std::string> Render(const VizGraph& graph, Format format);

}  // namespace nkigraph::viz

#endif  // NKIGRAPH_VIZ_RENDER_H_
