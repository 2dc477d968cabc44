#include "viz/render.h"

#include <fcntl.h>
#include <graphviz/gvc.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
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

// Lays out and renders `g` in this process.
absl::StatusOr<std::string> LayOutAndRender(Agraph_t* g, Format format,
                                            const MessageScope& messages) {
  GVC_t* gvc = Context();
  if (gvc == nullptr) {
    return absl::InternalError("Graphviz could not create a context");
  }
  if (gvLayout(gvc, g, "dot") != 0) {
    return absl::InternalError(
        absl::StrCat("Graphviz dot layout failed: ", messages.text()));
  }
  char* data = nullptr;
  unsigned int length = 0;
  const std::string name(FormatName(format));
  const int rc = gvRenderData(gvc, g, name.c_str(), &data, &length);
  std::string out;
  if (rc == 0 && data != nullptr) out.assign(data, length);
  if (data != nullptr) gvFreeRenderData(data);
  gvFreeLayout(gvc, g);
  if (rc != 0 || out.empty()) {
    return absl::InternalError(absl::StrCat("Graphviz could not render ", name,
                                            ": ", messages.text()));
  }
  return out;
}

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// LayOutAndRender in a child process. Graphviz's dot layout has known
// crashes (double frees routing some labelled edges among clusters); one
// must cost the caller an error, not the process. The child sends one
// status byte ('+' output, '-' error message) and the bytes.
absl::StatusOr<std::string> LayOutAndRenderIsolated(
    Agraph_t* g, Format format, const MessageScope& messages) {
  int fds[2];
  if (pipe(fds) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot create a pipe: ", std::strerror(errno)));
  }
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return absl::InternalError(
        absl::StrCat("cannot fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    close(fds[0]);
    // Graphviz's path router prints its internal complaints straight to
    // stderr; what matters reaches the parent as the error message.
    const int null_fd = open("/dev/null", O_WRONLY);
    if (null_fd >= 0) dup2(null_fd, STDERR_FILENO);
    absl::StatusOr<std::string> out = LayOutAndRender(g, format, messages);
    const char tag = out.ok() ? '+' : '-';
    const std::string body =
        out.ok() ? *std::move(out) : std::string(out.status().message());
    const bool sent =
        WriteAll(fds[1], &tag, 1) && WriteAll(fds[1], body.data(), body.size());
    close(fds[1]);
    _exit(sent ? 0 : 1);
  }
  close(fds[1]);
  std::string received;
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = read(fds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    received.append(buffer, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    return absl::InternalError(
        absl::StrCat("Graphviz crashed laying out this picture (signal ",
                     WTERMSIG(status), ", ", strsignal(WTERMSIG(status)), ")"));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || received.empty()) {
    return absl::InternalError("Graphviz's layout process failed");
  }
  if (received[0] == '-') return absl::InternalError(received.substr(1));
  return received.substr(1);
}

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

  if (format == Format::kPng &&
      agget(g.get(), const_cast<char*>("size")) == nullptr) {
    // Common image tools refuse bitmaps much past 16,000 pixels a side
    // (and cairo stops at 32767). Ask for at most 166 inches (15,936
    // pixels at 96 dpi): bigger drawings are scaled down to fit, smaller
    // ones are not scaled. SVG keeps the full size.
    agsafeset(g.get(), const_cast<char*>("size"), const_cast<char*>("166,166"),
              const_cast<char*>(""));
    agsafeset(g.get(), const_cast<char*>("dpi"), const_cast<char*>("96"),
              const_cast<char*>(""));
  }
  return LayOutAndRenderIsolated(g.get(), format, messages);
}

}  // namespace nkigraph::viz
