#ifndef NKIGRAPH_UTIL_STATUS_MACROS_H_
#define NKIGRAPH_UTIL_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Propagates a non-OK absl::Status to the caller.
#define NKI_RETURN_IF_ERROR(expr)                               \
  do {                                                          \
    if (absl::Status _nki_status = (expr); !_nki_status.ok()) { \
      return _nki_status;                                       \
    }                                                           \
  } while (0)

#define NKI_CONCAT_INNER(a, b) a##b
#define NKI_CONCAT(a, b) NKI_CONCAT_INNER(a, b)

// `NKI_ASSIGN_OR_RETURN(auto x, MaybeX());` binds the value or returns the
// error.
#define NKI_ASSIGN_OR_RETURN(lhs, expr) \
  NKI_ASSIGN_OR_RETURN_IMPL(NKI_CONCAT(_nki_statusor_, __LINE__), lhs, expr)

#define NKI_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

#endif  // NKIGRAPH_UTIL_STATUS_MACROS_H_
