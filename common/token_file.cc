#include "common/token_file.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tlbfleet {

absl::StatusOr<std::string> ReadTokenFile(const std::string& path, const std::string& flag,
                                          std::string* warning) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " ", path, ": no such file"));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " ", path, ": not a regular file"));
  }
  if (st.st_size > 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " ", path, ": too large for a token (", st.st_size, " bytes)"));
  }
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(flag, " ", path, ": cannot read it"));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string token(absl::StripAsciiWhitespace(ss.str()));
  if (token.empty()) return absl::InvalidArgumentError(absl::StrCat(flag, " ", path, ": empty"));
  if (token.find_first_of(" \t\r\n") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " ", path, ": holds more than one word; it must hold only the token"));
  }
  if (warning != nullptr && (st.st_mode & 077) != 0) {
    *warning = absl::StrCat(flag, " ", path, " is readable by others (mode ",
                            absl::StrFormat("%03o", st.st_mode & 0777), "); chmod 600 it");
  }
  return token;
}

}  // namespace tlbfleet
