#pragma once
// Integer expressions of `ncpus` for sweep bounds ("2*ncpus", "ncpus/2", "(ncpus+1)*4"):
// decimal integers, + - * /, unary minus, parentheses and the one identifier `ncpus`.
// Division truncates toward zero, as the shell's $(( )) does (mmtests configs use it).

#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"

namespace tlbfleet::scheduler {

struct NcpusExpr {
  bool uses_ncpus = false;
  // The value when the expression does not use ncpus (folded at submit time).
  std::optional<int64_t> constant;
};

// Checks the syntax. INVALID_ARGUMENT with what is wrong and where, e.g.
// `unknown identifier "ncpu" at column 3 (only ncpus is allowed)`; the caller prefixes the
// field path.
absl::StatusOr<NcpusExpr> ParseNcpusExpr(std::string_view text);

// Evaluates with `ncpus`. INVALID_ARGUMENT on a syntax error, division by zero or overflow.
absl::StatusOr<int64_t> EvaluateNcpusExpr(std::string_view text, int64_t ncpus);

}  // namespace tlbfleet::scheduler
