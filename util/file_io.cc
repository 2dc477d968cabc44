#include "util/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace nkigraph {

absl::StatusOr<std::string> ReadFile(const std::string& path,
                                     int64_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot open '", path, "': ", std::strerror(errno)));
  }
  const std::streamoff size = in.tellg();
  if (size < 0) {
    return absl::DataLossError(absl::StrCat("cannot size '", path, "'"));
  }
  if (size > max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "'", path, "' is ", size, " bytes, over the limit of ", max_bytes));
  }
  std::string contents(static_cast<size_t>(size), '\0');
  in.seekg(0);
  if (!in.read(contents.data(), size)) {
    return absl::DataLossError(absl::StrCat("cannot read '", path, "'"));
  }
  return contents;
}

absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view contents) {
  return WriteFileAtomically(path, absl::MakeConstSpan(&contents, 1));
}

absl::Status WriteFileAtomically(const std::string& path,
                                 absl::Span<const absl::string_view> pieces) {
  const std::string temp = absl::StrCat(path, ".tmp.", getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot create '", temp, "': ", std::strerror(errno)));
    }
    for (absl::string_view piece : pieces) {
      out.write(piece.data(), static_cast<std::streamsize>(piece.size()));
    }
    out.flush();
    if (!out) {
      out.close();
      std::remove(temp.c_str());
      return absl::DataLossError(absl::StrCat("cannot write '", temp, "'"));
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(temp.c_str());
    return absl::PermissionDeniedError(absl::StrCat(
        "cannot rename '", temp, "' to '", path, "': ", std::strerror(err)));
  }
  return absl::OkStatus();
}

bool EndsWith(absl::string_view text, absl::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.substr(text.size() - suffix.size()) == suffix;
}

namespace {

absl::Status WriteAll(int fd, absl::string_view bytes, int64_t offset,
                      const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::pwrite(fd, bytes.data(), bytes.size(), offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::InternalError(
          absl::StrCat("cannot write '", path, "': ", std::strerror(errno)));
    }
    bytes.remove_prefix(n);
    offset += n;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteFileParts(const std::string& path, absl::string_view head,
                            int64_t size, int64_t offset,
                            absl::string_view part) {
  const int flags = size >= 0 ? O_WRONLY | O_CREAT | O_TRUNC : O_WRONLY;
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::NotFoundError(
        absl::StrCat("cannot open '", path, "': ", std::strerror(errno)));
  }
  absl::Status status;
  if (size >= 0 && ::ftruncate(fd, size) != 0) {
    status = absl::InternalError(
        absl::StrCat("cannot size '", path, "': ", std::strerror(errno)));
  }
  if (status.ok() && !head.empty()) status = WriteAll(fd, head, 0, path);
  if (status.ok()) status = WriteAll(fd, part, offset, path);
  if (::close(fd) != 0 && status.ok()) {
    status = absl::InternalError(
        absl::StrCat("cannot write '", path, "': ", std::strerror(errno)));
  }
  return status;
}

std::string SafeFileName(absl::string_view name) {
  std::string safe;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    safe.push_back(ok ? c : '_');
  }
  return safe.empty() ? std::string("_") : safe;
}

}  // namespace nkigraph
