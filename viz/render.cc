#include "viz/render.h"

#include <graphviz/gvc.h>

#include <mutex>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "viz/cgraph_builder.h"

namespace nkigraph::viz {
namespace {

// Graphviz's messages during one call (warnings and errors).
std::string* Messages() {
  static std::string* messages = new std::string();
  return messages;
}

int CollectMessage(char* text) {
  Messages()->append(text);
  return 0;
}

// The process's Graphviz context; caller holds the mutex.
GVC_t* Context() {
  static GVC_t* context = gvContext();
  return context;
}

// Installs the message collector for the duration of one call.
class MessageScope {
 public:
  MessageScope() : previous_(agseterrf(CollectMessage)) { Messages()->clear(); }
  ~MessageScope() { agseterrf(previous_); }
  MessageScope(const MessageScope&) = delete;
  MessageScope& operator=(const MessageScope&) = delete;

  std::string text() const {
    std::string text(absl::StripAsciiWhitespace(*Messages()));
    for (char& c : text) {
      if (c == '\n') c = ' ';
    }
    return text;
  }

 private:
  agusererrf previous_;
};

}  // namespace

absl::StatusOr<Format> FormatForPath(absl::string_view path) {
  const std::string lower = absl::AsciiStrToLower(path);
  if (absl::EndsWith(lower, ".dot") || absl::EndsWith(lower, ".gv")) {
    return Format::kDot;
  }
  if (absl::EndsWith(lower, ".svg")) return Format::kSvg;
  if (absl::EndsWith(lower, ".png")) return Format::kPng;
  return absl::InvalidArgumentError(
      absl::StrCat("cannot tell the format of '", path,
                   "': the name must end in .dot, .gv, .svg or .png"));
}

absl::string_view FormatName(Format format) {
  switch (format) {
    case Format::kDot:
      return "dot";
    case Format::kSvg:
      return "svg";
    case Format::kPng:
      return "png";
  }
  return "dot";
}

absl::StatusOr<std::string> Render(const VizGraph& graph, Format format) {
  std::lock_guard<std::mutex> lock(GraphvizMutex());
  MessageScope messages;
  AgraphPtr g = BuildAgraph(graph);
  if (g == nullptr) {
    return absl::InternalError(
        absl::StrCat("Graphviz could not build the graph: ", messages.text()));
  }
  if (format == Format::kDot) return WriteDot(g.get());

  GVC_t* gvc = Context();
  if (gvc == nullptr) {
    return absl::InternalError("Graphviz could not create a context");
  }
  if (format == Format::kPng && agget(g.get(), const_cast<char*>("size")) ==
                                    nullptr) {
    // Cairo bitmaps stop at 32767 pixels a side; past that Graphviz
    // shrinks the picture itself, with a message on stderr. Ask for at
    // most 340 inches (32640 pixels at 96 dpi) instead; smaller drawings
    // are not scaled.
    agsafeset(g.get(), const_cast<char*>("size"),
              const_cast<char*>("340,340"), const_cast<char*>(""));
  }
  if (gvLayout(gvc, g.get(), "dot") != 0) {
    return absl::InternalError(
        absl::StrCat("Graphviz dot layout failed: ", messages.text()));
  }
  char* data = nullptr;
  unsigned int length = 0;
  const std::string name(FormatName(format));
  const int rc = gvRenderData(gvc, g.get(), name.c_str(), &data, &length);
  std::string out;
  if (rc == 0 && data != nullptr) out.assign(data, length);
  if (data != nullptr) gvFreeRenderData(data);
  gvFreeLayout(gvc, g.get());
  if (rc != 0 || out.empty()) {
    return absl::InternalError(absl::StrCat("Graphviz could not render ", name,
                                            ": ", messages.text()));
  }
  return out;
}

}  // namespace nkigraph::viz
