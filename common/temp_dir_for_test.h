#pragma once
// Test helper (header-only, tests only): one fresh temp directory per object, for unit and
// integration tests alike, so no test writes outside a directory of its own.

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace tlbfleet {

// Makes `<$TMPDIR or /tmp>/<prefix>-XXXXXX` (mkdtemp, mode 0700) and removes it with all it
// holds on destruction, unless TLBFLEET_KEEP_TEST_DIRS is set (to look at what a failed test
// left). Throws std::runtime_error if the directory cannot be made: a test must never go on
// with an empty path, which a Sysroot would take for the real root.
//
// Not copyable; path() is fixed for the object's life. Not thread-safe (nothing to share).
class TempDir {
 public:
  explicit TempDir(std::string_view prefix = "tlbfleet-test") {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/" +
                       std::string(prefix) + "-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      throw std::runtime_error("mkdtemp " + tmpl + ": " + std::strerror(errno));
    }
    path_ = std::move(tmpl);
  }
  ~TempDir() {
    if (std::getenv("TLBFLEET_KEEP_TEST_DIRS") != nullptr) return;
    std::error_code ignored;  // a test's leftovers are not worth failing a destructor for
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // `name` inside the directory: path() + "/" + name (nothing is created).
  std::string File(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

}  // namespace tlbfleet
