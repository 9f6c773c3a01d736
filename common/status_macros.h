#pragma once
// Early-return helpers for absl::Status / absl::StatusOr chains.

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Returns the status of `expr` (an absl::Status) from the current function if it is an error.
#define TLB_RETURN_IF_ERROR(expr)             \
  do {                                        \
    if (absl::Status _s = (expr); !_s.ok()) { \
      return _s;                              \
    }                                         \
  } while (0)

// `lhs = value of expr` (an absl::StatusOr), or returns its error status.
#define TLB_ASSIGN_OR_RETURN(lhs, expr)                       \
  auto TLB_STATUS_CONCAT(_status_or_, __LINE__) = (expr);     \
  if (!TLB_STATUS_CONCAT(_status_or_, __LINE__).ok()) {       \
    return TLB_STATUS_CONCAT(_status_or_, __LINE__).status(); \
  }                                                           \
  lhs = std::move(*TLB_STATUS_CONCAT(_status_or_, __LINE__))
#define TLB_STATUS_CONCAT_INNER(a, b) a##b
#define TLB_STATUS_CONCAT(a, b) TLB_STATUS_CONCAT_INNER(a, b)
