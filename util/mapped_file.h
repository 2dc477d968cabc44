#ifndef NKIGRAPH_UTIL_MAPPED_FILE_H_
#define NKIGRAPH_UTIL_MAPPED_FILE_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace nkigraph {

// A whole file mapped read-only into memory (an empty file maps to no
// bytes): large inputs are read where the page cache holds them, without
// first copying them into a string.
class MappedFile {
 public:
  MappedFile() = default;
  static absl::StatusOr<MappedFile> Open(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  absl::string_view bytes() const { return {data_, size_}; }
  // The open file (for mapping parts of it elsewhere); -1 for an empty one.
  int fd() const { return fd_; }

 private:
  const char* data_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;
};

}  // namespace nkigraph

#endif  // NKIGRAPH_UTIL_MAPPED_FILE_H_
