#pragma once
// Test helper (header-only, tests only): a Sysroot over a fresh temp directory, with
// helpers to lay out files and to inject open(2) errors that a test running as root could
// not produce with permission bits (root bypasses them; the kernel's lockdown does not),
// writes the kernel rejects, and writes whose read-back differs. Other writers (a workload
// rewriting the ceiling, a second agent) are simulated by writing the files themselves:
// two Sysroots (or two agents) over the same directory share one "host", including its
// /run/tlbfleet-ceiling.lock.

#include <fcntl.h>

#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "agent/kernel/sysroot.h"
#include "common/files.h"
#include "common/temp_dir_for_test.h"

namespace tlbfleet::agent {

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

  // Makes every later write to `abs_path` fail with `err` (the kernel rejecting a value);
  // with `only_text`, only writes of exactly that text fail.
  void FailWrite(std::string_view abs_path, int err, std::string only_text = "") {
    write_failures_[std::string(abs_path)] = {err, std::move(only_text)};
  }

  // Makes every later write of `written` to `abs_path` succeed but store `stored` instead, as
  // a kernel that clamps or rounds a tunable would: the read-back then differs from the
  // write. An empty `stored` removes the rule.
  void StoreOnWrite(std::string_view abs_path, std::string written, std::string stored) {
    if (stored.empty()) {
      stored_instead_.erase({std::string(abs_path), written});
    } else {
      stored_instead_[{std::string(abs_path), std::move(written)}] = std::move(stored);
    }
  }

  int WriteText(std::string_view abs_path, std::string_view text) const override {
    auto it = write_failures_.find(std::string(abs_path));
    if (it != write_failures_.end() && (it->second.second.empty() || it->second.second == text)) {
      return it->second.first;
    }
    auto stored = stored_instead_.find({std::string(abs_path), std::string(text)});
    if (stored != stored_instead_.end()) return Sysroot::WriteText(abs_path, stored->second);
    return Sysroot::WriteText(abs_path, text);
  }

  int OpenFd(std::string_view abs_path, int flags) const override {
    auto it = failures_.find({std::string(abs_path), flags & O_ACCMODE});
    if (it != failures_.end()) return -it->second;
    return Sysroot::OpenFd(abs_path, flags);
  }

 private:
  std::map<std::pair<std::string, int>, int> failures_;
  std::map<std::string, std::pair<int, std::string>> write_failures_;
  std::map<std::pair<std::string, std::string>, std::string> stored_instead_;
};

}  // namespace tlbfleet::agent
