#include "interp/round_wire.h"

#include <cstring>
#include <optional>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace nkigraph::interp {

void WireWriter::Int(int64_t value) {
  char bytes[8];
  for (int i = 0; i < 8; ++i) {
    bytes[i] = static_cast<char>((static_cast<uint64_t>(value) >> (8 * i)));
  }
  out_.append(bytes, 8);
}

void WireWriter::Bytes(absl::string_view bytes) {
  Int(static_cast<int64_t>(bytes.size()));
  out_.append(bytes.data(), bytes.size());
}

void WireWriter::Status(const absl::Status& status) {
  Int(static_cast<int64_t>(status.code()));
  if (status.ok()) return;
  Bytes(status.message());
  std::vector<std::pair<std::string, std::string>> payloads;
  status.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    payloads.emplace_back(std::string(url), std::string(payload));
  });
  Int(static_cast<int64_t>(payloads.size()));
  for (const auto& [url, payload] : payloads) {
    Bytes(url);
    Bytes(payload);
  }
}

int64_t WireReader::Int() {
  if (!ok_ || in_.size() < 8) {
    ok_ = false;
    return 0;
  }
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) {
    value |= static_cast<uint64_t>(static_cast<uint8_t>(in_[i])) << (8 * i);
  }
  in_.remove_prefix(8);
  return static_cast<int64_t>(value);
}

absl::string_view WireReader::Bytes() {
  const int64_t size = Int();
  if (!ok_ || size < 0 || static_cast<uint64_t>(size) > in_.size()) {
    ok_ = false;
    return {};
  }
  absl::string_view bytes = in_.substr(0, size);
  in_.remove_prefix(size);
  return bytes;
}

absl::Status WireReader::Status() {
  const int64_t code = Int();
  if (!ok_ || code == 0) return absl::OkStatus();
  const absl::string_view message = Bytes();
  absl::Status status(static_cast<absl::StatusCode>(code), message);
  const int64_t payloads = Int();
  for (int64_t i = 0; ok_ && i < payloads; ++i) {
    const absl::string_view url = Bytes();
    const absl::string_view payload = Bytes();
    if (ok_) status.SetPayload(url, absl::Cord(payload));
  }
  return status;
}

absl::Status WireReader::Check(absl::string_view what) const {
  if (ok_) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat("malformed ", what, " from another process"));
}

}  // namespace nkigraph::interp
