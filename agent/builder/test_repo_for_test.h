#pragma once
// Test helper (header-only, tests only): a real git repository in a temp directory, with
// commits made from maps of file contents, through the real `git` binary. Identity, dates and
// configuration are fixed (the user's ~/.gitconfig is not read), so hashes are the same on
// every run.

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/builder/command.h"
#include "common/temp_dir_for_test.h"
#include "gtest/gtest.h"

namespace tlbfleet::agent::builder {

// A fake kernel tree: the make targets the builder runs, each doing in a few milliseconds what
// the kernel's does, from the tree's own files (so another commit gives another image). A
// source file beginning with #error does not compile, #nospace meets a full disk, #slow takes
// 30 s. The image records ARCH and the KBUILD_BUILD_* variables it was built with.
inline constexpr char kFakeKernelMakefile[] = R"(.RECIPEPREFIX := >
OBJS := $(patsubst %.c,%.o,$(sort $(wildcard kernel/*.c)))
.PHONY: all defconfig tinyconfig olddefconfig kernelrelease modules_install
all: arch/x86/boot/bzImage System.map
%.o: %.c
> @echo "  CC      $@"
> @if grep -q '^#error' $<; then echo "$<:1:2: error: #error this does not build" >&2; exit 1; fi
> @if grep -q '^#nospace' $<; then echo "$@: No space left on device" >&2; exit 1; fi
> @if grep -q '^#slow' $<; then echo "slow: $<"; sleep 30; fi
> @cp $< $@
arch/x86/boot/bzImage: $(OBJS) .config
> @mkdir -p arch/x86/boot
> @cat $(OBJS) .config > $@
> @echo "$(ARCH) $$KBUILD_BUILD_TIMESTAMP $$KBUILD_BUILD_USER@$$KBUILD_BUILD_HOST" >> $@
> @echo "Kernel: $@ is ready"
System.map: $(OBJS)
> @for o in $(OBJS); do echo "ffffffff81000000 T $$o"; done > $@
defconfig tinyconfig:
> @cp configs/$@ .config
olddefconfig:
> @sed -i '/^CONFIG_UNMET=/d' .config
kernelrelease:
> @cat VERSION
modules_install:
> @mkdir -p $(INSTALL_MOD_PATH)/lib/modules/$$(cat VERSION)/kernel
> @for o in $(OBJS); do cp $$o $(INSTALL_MOD_PATH)/lib/modules/$$(cat VERSION)/kernel/$$(basename $$o .o).ko; done
)";

class TestRepo {
 public:
  TestRepo() : dir_("tlbfleet-builder") {
    std::filesystem::create_directories(path());
    Git({"init", "--quiet", "--initial-branch=main"});
  }

  // The temp directory (the repository is its "repo" subdirectory).
  const TempDir& temp() const { return dir_; }
  std::string path() const { return dir_.File("repo"); }

  // git in the repository; its stdout lines. Fails the test when git fails.
  std::vector<std::string> Git(std::vector<std::string> args) {
    Command command;
    command.argv = {"git", "-C", path()};
    command.argv.insert(command.argv.end(), args.begin(), args.end());
    // Each commit one minute after the previous one: the same history, the same hashes.
    const std::string date = absl::StrCat(1700000000 + 60 * commits_, " +0000");
    command.env = {"GIT_CONFIG_GLOBAL=/dev/null",     "GIT_CONFIG_NOSYSTEM=1",
                   "GIT_AUTHOR_NAME=Ada Lovelace",    "GIT_AUTHOR_EMAIL=ada@example.org",
                   "GIT_COMMITTER_NAME=Ada Lovelace", "GIT_COMMITTER_EMAIL=ada@example.org",
                   "GIT_AUTHOR_DATE=" + date,         "GIT_COMMITTER_DATE=" + date};
    absl::StatusOr<std::vector<std::string>> out = CommandOutput(command);
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *out : std::vector<std::string>{};
  }

  // Writes `files` (a nullopt content deletes the file), commits them all with `subject`, and
  // returns the new commit's hash.
  std::string Commit(const std::map<std::string, std::optional<std::string>>& files,
                     const std::string& subject) {
    for (const auto& [name, content] : files) {
      const std::filesystem::path file = std::filesystem::path(path()) / name;
      if (!content) {
        std::filesystem::remove(file);
        continue;
      }
      std::filesystem::create_directories(file.parent_path());
      std::ofstream(file, std::ios::binary | std::ios::trunc) << *content;
    }
    Git({"add", "--all"});
    Git({"commit", "--quiet", "--allow-empty", "-m", subject});
    ++commits_;
    return Git({"rev-parse", "HEAD"}).at(0);
  }

 private:
  TempDir dir_;
  int commits_ = 0;
};

}  // namespace tlbfleet::agent::builder
