#include "util/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <utility>

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

absl::StatusOr<MappedFile> MappedFile::Open(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(
        absl::StrCat("cannot open '", path, "': ", std::strerror(errno)));
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return absl::DataLossError(
        absl::StrCat("cannot size '", path, "': not a regular file"));
  }
  MappedFile file;
  if (st.st_size > 0) {
    void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ,
                   MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int error = errno;
      close(fd);
      return absl::DataLossError(
          absl::StrCat("cannot map '", path, "': ", std::strerror(error)));
    }
    // Read front to back, once.
    madvise(p, static_cast<size_t>(st.st_size), MADV_SEQUENTIAL);
    file.data_ = static_cast<const char*>(p);
    file.size_ = static_cast<size_t>(st.st_size);
  }
  close(fd);
  return file;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) munmap(const_cast<char*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) munmap(const_cast<char*>(data_), size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
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

}  // namespace nkigraph
