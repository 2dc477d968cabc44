#include "util/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace nkigraph {

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
    file.fd_ = fd;
  } else {
    close(fd);
  }
  return file;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) munmap(const_cast<char*>(data_), size_);
  if (fd_ >= 0) close(fd_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      fd_(std::exchange(other.fd_, -1)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) munmap(const_cast<char*>(data_), size_);
    if (fd_ >= 0) close(fd_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

}  // namespace nkigraph
