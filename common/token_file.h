#pragma once
// Reading a credential from a file (tlbfleet-agent --token-file, tlbfleet --token-file), so
// that it never appears on a command line (ps) or in the environment of every child.

#include <string>

#include "absl/status/statusor.h"

namespace tlbfleet {

// The token in `path`: the file's text without surrounding whitespace. INVALID_ARGUMENT
// naming `flag` when the file is missing, unreadable, empty, or holds more than one line.
// `warning` (if given) is set when the file is readable by group or others.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path, const std::string& flag,
                                          std::string* warning = nullptr);

}  // namespace tlbfleet
