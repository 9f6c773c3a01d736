#pragma once
// Test helper (header-only, tests only): a Sysroot over a fresh temp directory, with
// helpers to lay out files and to inject open(2) errors that a test running as root could
// not produce with permission bits (root bypasses them; the kernel's lockdown does not).

#include <fcntl.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "agent/kernel/sysroot.h"
#include "common/files.h"

namespace tlbfleet::agent {

// Makes a fresh directory under $TMPDIR (or /tmp) and removes it on destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/tlbfleet-test-XXXXXX";
    char* made = ::mkdtemp(tmpl.data());
    path_ = made != nullptr ? std::string(made) : std::string();
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class FakeSysroot : public Sysroot {
 public:
  explicit FakeSysroot(const TempDir& dir) : Sysroot(dir.path()) {}

  // Creates `abs_path` (and its parents) under the root with `contents`.
  void WriteFile(std::string_view abs_path, std::string_view contents) const {
    std::string path = Path(abs_path);
    (void)MakeDirs(path.substr(0, path.rfind('/')));
    (void)WriteFileAtomic(path, contents);
  }
  void MakeDir(std::string_view abs_path) const { (void)MakeDirs(Path(abs_path)); }

  // Makes every later open of `abs_path` whose access mode is `accmode` (O_RDONLY, O_WRONLY)
  // fail with `err`.
  void FailOpen(std::string_view abs_path, int accmode, int err) {
    failures_[{std::string(abs_path), accmode}] = err;
  }

  int OpenFd(std::string_view abs_path, int flags) const override {
    auto it = failures_.find({std::string(abs_path), flags & O_ACCMODE});
    if (it != failures_.end()) return -it->second;
    return Sysroot::OpenFd(abs_path, flags);
  }

 private:
  std::map<std::pair<std::string, int>, int> failures_;
};

}  // namespace tlbfleet::agent
