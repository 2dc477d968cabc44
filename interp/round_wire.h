#ifndef NKIGRAPH_INTERP_ROUND_WIRE_H_
#define NKIGRAPH_INTERP_ROUND_WIRE_H_

// The bytes processes exchange about a round (interp/transport.h): plain
// little-endian integers, length-prefixed strings and whole absl::Status
// values (code, message and every payload, so a diagnostic arrives as it
// left). Both ends are this build, so the form needs no versioning.

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace nkigraph::interp {

class WireWriter {
 public:
  void Int(int64_t value);
  void Bytes(absl::string_view bytes);
  void Status(const absl::Status& status);
  const std::string& bytes() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads what a WireWriter wrote, in the same order; after a read past the
// end or a malformed field, ok() is false and reads return zeros.
class WireReader {
 public:
  explicit WireReader(absl::string_view bytes) : in_(bytes) {}
  int64_t Int();
  absl::string_view Bytes();
  absl::Status Status();
  bool ok() const { return ok_; }
  bool at_end() const { return in_.empty(); }
  // An internal error naming `what` when the bytes did not parse.
  absl::Status Check(absl::string_view what) const;

 private:
  absl::string_view in_;
  bool ok_ = true;
};

}  // namespace nkigraph::interp

#endif  // NKIGRAPH_INTERP_ROUND_WIRE_H_
