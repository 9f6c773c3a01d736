#include "agent/runner/kernel_install.h"

#include <sys/utsname.h>

#include <filesystem>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/artifacts/manifest.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::agent {
namespace {

constexpr char kImageFile[] = "bzImage";
constexpr char kModulesFile[] = "modules.tar.gz";

// Staged artifacts whose kernel entry is no longer kept: nothing will boot them again.
void RemoveStaleStagedArtifacts(const std::string& staging_dir,
                                const std::vector<KernelEntry>& kept) {
  std::set<std::string> keep;
  for (const KernelEntry& e : kept) keep.insert(e.artifact_id);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(staging_dir, ec)) {
    const std::string name = entry.path().filename().string();
    // Only artifact directories: builds/ and partial/ are not, and are not ours to prune here.
    if (!artifacts::ValidArtifactId(name) || keep.count(name) > 0) continue;
    std::error_code remove_ec;
    std::filesystem::remove_all(entry.path(), remove_ec);
    if (remove_ec) {
      spdlog::warn("removing staged artifact {}: {}", entry.path().string(), remove_ec.message());
    } else {
      spdlog::info("removed staged artifact {}: no kernel entry boots it any more", name);
    }
  }
}

}  // namespace

std::string MachineArch() {
  struct utsname u {};
  if (::uname(&u) != 0) return "";
  return u.machine;
}

absl::Status CheckKernelInstallable(const KernelInstallOptions& options,
                                    const BootEntries& configured, const std::string& boot_entry,
                                    const v1::KernelToBoot& kernel) {
  if (options.command.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "boot entry '", boot_entry,
        "' is a kernel built from source and this agent has no --kernel-install-command"));
  }
  if (!options.artifact_source) {
    return absl::FailedPreconditionError(
        absl::StrCat("boot entry '", boot_entry,
                     "' is a kernel built from source and this agent cannot fetch artifacts"));
  }
  if (configured.Find(boot_entry) != nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("boot_entry: '", boot_entry,
                     "' is an entry of this agent's --boot-entries, not a built kernel"));
  }
  if (!artifacts::ValidArtifactId(kernel.artifact_id())) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel.artifact_id: '", kernel.artifact_id(), "' is not an artifact id"));
  }
  KernelEntry entry;
  entry.name = boot_entry;
  entry.build_id = kernel.build_id();
  entry.kernel_release = kernel.kernel_release().empty() ? "unknown" : kernel.kernel_release();
  entry.commit = kernel.commit();
  entry.artifact_id = kernel.artifact_id();
  if (absl::Status s = ValidateKernelEntry(entry); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("boot entry '", boot_entry, "': ", std::string(s.message())));
  }
  return absl::OkStatus();
}

std::vector<std::string> KernelInstallEnvironment(const KernelEntry& entry,
                                                  const std::string& artifact_dir,
                                                  bool has_modules) {
  return {
      "TLBFLEET_KERNEL_IMAGE=" + artifacts::ArtifactDataFile(artifact_dir, kImageFile),
      "TLBFLEET_KERNEL_DIR=" + artifact_dir,
      "TLBFLEET_ARTIFACT_ID=" + entry.artifact_id,
      "TLBFLEET_BUILD_ID=" + entry.build_id,
      "TLBFLEET_BUILD_TAG=" + BuildTag(entry.build_id),
      "TLBFLEET_KERNEL_RELEASE=" + entry.kernel_release,
      "TLBFLEET_COMMIT=" + entry.commit,
      "TLBFLEET_MODULES=" +
          (has_modules ? artifacts::ArtifactDataFile(artifact_dir, kModulesFile) : std::string()),
  };
}

absl::StatusOr<KernelEntry> InstallKernel(const KernelInstallOptions& options,
                                          const std::string& boot_entry,
                                          const v1::KernelToBoot& kernel) {
  const std::string& id = kernel.artifact_id();
  std::unique_ptr<artifacts::ArtifactChunkSource> source =
      options.artifact_source ? options.artifact_source() : nullptr;
  if (source == nullptr) return absl::FailedPreconditionError("this agent cannot fetch artifacts");
  artifacts::ArtifactFetcher fetcher(options.staging_dir, *source);
  absl::StatusOr<artifacts::FetchedArtifact> fetched = fetcher.Fetch(id);
  if (!fetched.ok()) {
    return absl::Status(
        fetched.status().code(),
        absl::StrCat("fetching artifact ", id, ": ", std::string(fetched.status().message())));
  }
  spdlog::info("artifact {} {} ({} bytes fetched)", id,
               fetched->already_present ? "was staged already" : "fetched", fetched->bytes_fetched);
  // The fetcher checked the manifest against the id; what it describes must be what the
  // controller means to boot.
  const artifacts::ArtifactManifest& manifest = fetched->manifest;
  const auto differs = [&](absl::string_view what, const std::string& has,
                           const std::string& asked) -> absl::Status {
    return absl::FailedPreconditionError(
        absl::StrCat("artifact ", id, " is ", what, " ", has, ", the request says ", asked));
  };
  if (!kernel.build_id().empty() && manifest.build_id != kernel.build_id()) {
    return differs("build", manifest.build_id, kernel.build_id());
  }
  if (!kernel.kernel_release().empty() && manifest.kernel_release != kernel.kernel_release()) {
    return differs("release", manifest.kernel_release, kernel.kernel_release());
  }
  if (!kernel.commit().empty() && manifest.commit != kernel.commit()) {
    return differs("commit", manifest.commit, kernel.commit());
  }
  if (!options.machine_arch.empty() && manifest.arch != options.machine_arch) {
    return absl::FailedPreconditionError(absl::StrCat(
        "artifact ", id, " is built for ", manifest.arch, ", this host is ", options.machine_arch));
  }
  if (manifest.Find(kImageFile) == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("artifact ", id, " has no ", kImageFile));
  }
  KernelEntry entry;
  entry.name = boot_entry;
  entry.build_id = manifest.build_id;
  entry.kernel_release = manifest.kernel_release;
  entry.commit = manifest.commit;
  entry.artifact_id = id;
  // Kept before the command runs: once it has made the next boot this kernel, the agent that
  // starts in it must know the entry, even if this agent dies before it reboots.
  absl::StatusOr<std::vector<KernelEntry>> kept = SaveKernelEntry(options.state_dir, entry);
  if (!kept.ok()) return kept.status();
  spdlog::info("installing boot entry {} (build {} release {} commit {}) with: {}", entry.name,
               entry.build_id.substr(0, 16), entry.kernel_release, entry.commit, options.command);
  if (absl::Status s = RunShellCommand(
          options.command,
          KernelInstallEnvironment(entry, fetched->dir, manifest.Find(kModulesFile) != nullptr));
      !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("kernel install command for boot entry '",
                                               boot_entry, "' failed: ", std::string(s.message())));
  }
  RemoveStaleStagedArtifacts(options.staging_dir, *kept);
  return entry;
}

}  // namespace tlbfleet::agent
