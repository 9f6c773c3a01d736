#pragma once
// Installing a kernel built from source so that the next boot runs it (RebootRequest.kernel;
// docs/kernels.md, "Booting a built kernel"). The reboot flow calls it where it would run a
// configured entry's select command:
//
//   fetch the artifact ──► check it is the ──► keep the kernel entry ──► --kernel-install-command
//   into the staging dir   build asked for     (<state-dir>/kernel-     with /bin/sh -c and the
//   (ArtifactFetcher)      (build id, release, entries, boot_entries.h)  TLBFLEET_* environment
//                          arch)                                         below; must exit 0
//
// How a kernel is installed (copy to /boot, a bootloader entry, kexec -l...) is the agent's own
// configuration, like a boot entry's select command: the controller only names the artifact.
// The command gets:
//   TLBFLEET_KERNEL_IMAGE    <staged artifact>/files/bzImage
//   TLBFLEET_KERNEL_DIR      the staged artifact (manifest, files/)
//   TLBFLEET_ARTIFACT_ID, TLBFLEET_BUILD_ID, TLBFLEET_KERNEL_RELEASE, TLBFLEET_COMMIT
//   TLBFLEET_BUILD_TAG       tlbfleet.build=<16 hex>: the next boot's command line must carry it
//   TLBFLEET_MODULES         <staged artifact>/files/modules.tar.gz, or "" without modules
//
// Staged artifacts of kernel entries no longer kept are removed after an install.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/runner/boot_entries.h"
#include "common/artifacts/artifact_fetcher.h"
#include "tlbfleet/v1/agent.pb.h"

namespace tlbfleet::agent {

// Makes the source a fetch reads the controller's artifacts from (MakeGrpcChunkSource in
// production, a memory source in tests).
using ArtifactSourceFactory = std::function<std::unique_ptr<artifacts::ArtifactChunkSource>()>;

struct KernelInstallOptions {
  std::string command;      // --kernel-install-command; "" = this agent installs no kernels
  std::string staging_dir;  // --kernel-staging-dir: artifacts are fetched here
  std::string state_dir;    // where the kernel entries are kept
  ArtifactSourceFactory artifact_source;  // null = this agent cannot fetch artifacts
  std::string machine_arch;               // uname -m; an artifact of another arch is refused
};

// Why this agent cannot boot `kernel` as entry `boot_entry`, or OK: no install command or
// artifact source (FAILED_PRECONDITION), an entry name or artifact id that is not one, a
// build id shorter than 16 hex digits (INVALID_ARGUMENT naming the field), or a name that is
// one of `configured`'s entries (they are the operator's).
absl::Status CheckKernelInstallable(const KernelInstallOptions& options,
                                    const BootEntries& configured, const std::string& boot_entry,
                                    const v1::KernelToBoot& kernel);

// The install command's environment ("K=V"), for the artifact staged in `artifact_dir`.
std::vector<std::string> KernelInstallEnvironment(const KernelEntry& entry,
                                                  const std::string& artifact_dir,
                                                  bool has_modules);

// Fetches the artifact, checks it against `kernel`, keeps the kernel entry and runs the
// install command. Returns the entry, to be journaled before the reboot. Errors say which
// step failed: "fetching artifact <id>: ...", "artifact <id> is build X, the request says Y",
// "kernel install command for boot entry 'kernel-b7' failed: ... exited with status 1: ...".
absl::StatusOr<KernelEntry> InstallKernel(const KernelInstallOptions& options,
                                          const std::string& boot_entry,
                                          const v1::KernelToBoot& kernel);

// uname(2)'s machine: "x86_64".
std::string MachineArch();

}  // namespace tlbfleet::agent
