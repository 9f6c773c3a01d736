#pragma once
// Boot entries: the kernels (with their command lines) this agent may boot into when the
// controller asks for one by name (RebootRequest.boot_entry). The commands live here, in the
// agent's own configuration; the controller only ever names an entry (DESIGN.md).
//
// The configuration (`tlbfleet-agent --boot-entries FILE`; the `boot_entries` section of a
// future agent.yaml reads the same):
//
//   boot_entries:
//     - name: distro-6.1                 # [A-Za-z0-9._+-], unique
//       select: grub-reboot 'Advanced options for Debian GNU/Linux>...6.1.0-57-amd64'
//       reboot: kexec -e                 # optional; default: the agent's --reboot-command
//       expect:                          # at least one of release / cmdline
//         release: 6.1.0-57-amd64        # exact, or an fnmatch(3) glob ("6.1.0-*-amd64")
//         cmdline: [mitigations=auto]    # words /proc/cmdline must all contain
//
// `select` makes the NEXT boot use the entry; it runs as the agent's user with /bin/sh -c and
// must exit 0, or the reboot is not attempted. Before rebooting the agent journals the entry
// and the boot it leaves (<state-dir>/boot-entry-journal, fsync'd like the ceiling journal).
// At the next start it checks the new boot against the entry's expectations: when they hold,
// the boot is that entry; when they do not, the boot is no entry and `boot_entry_error` says
// why ("entry lab-6.12 expected release 6.12.117+deb12-amd64, booted 6.1.0-57-amd64"). A boot
// nobody selected (or a later one) is the one entry whose expectations it meets, else "".
//
//   <state-dir>/boot-entry-journal   "entry NAME\nfrom BOOT_ID\n[landed BOOT_ID\n]"
//   <state-dir>/kernel-entries       the kernels built from source this agent installed
//
// Kernels built from source (RebootRequest.kernel, docs/kernels.md) are entries too, made at
// run time rather than configured: "kernel-b<N>" expects the artifact's release and the word
// `tlbfleet.build=<first 16 hex of its build id>` on the command line (the agent's
// --kernel-install-command puts it there). They are kept in <state-dir>/kernel-entries (the
// newest kMaxKernelEntries) so the agent that starts after the reboot can verify the boot;
// they have no select command and are not listed in HostInfo.boot_entries, but a boot that is
// one sets HostInfo.boot_entry, build_id and commit.

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agent/kernel/sysroot.h"
#include "tlbfleet/v1/agent.pb.h"

namespace tlbfleet::agent {

struct BootEntry {
  std::string name;
  std::string select;   // shell command line: makes the next boot this entry
  std::string reboot;   // shell command line, or "" for the agent's --reboot-command
  std::string release;  // expected kernel release (exact or glob); "" = any
  // Words of /proc/cmdline (each item whole words: "pti=on" does not match "nopti=on").
  std::vector<std::string> cmdline;
};

// Parses the configuration. INVALID_ARGUMENT "<source>: boot_entries[1].expect: ..." (or
// "<source>:<line>:<col>: ..." for malformed YAML) naming the key.
absl::StatusOr<std::vector<BootEntry>> ParseBootEntries(absl::string_view yaml,
                                                        absl::string_view source);
// Reads and parses FILE; the error names the file.
absl::StatusOr<std::vector<BootEntry>> LoadBootEntries(const std::string& path);

// Why a boot of `release` with `cmdline` is not `entry` ("expected release X, booted Y";
// "expected 'pti=on' in the command line"), or nullopt when it meets every expectation.
std::optional<std::string> BootMismatch(const BootEntry& entry, absl::string_view release,
                                        absl::string_view cmdline);

std::string BootEntryJournalFile(absl::string_view state_dir);

// A kernel built from source that this agent installed to boot it (see the header comment).
struct KernelEntry {
  std::string name;            // the RebootRequest's boot_entry, "kernel-b7"
  std::string build_id;        // sha256 of the image (at least 16 hex digits)
  std::string kernel_release;  // exact
  std::string commit;          // the full hash it was built from; may be empty
  std::string artifact_id;
};

inline constexpr size_t kMaxKernelEntries = 8;

std::string KernelEntriesFile(absl::string_view state_dir);
// "tlbfleet.build=<the first 16 hex digits of build_id>": the command-line word a boot of the
// build must carry.
std::string BuildTag(absl::string_view build_id);
// INVALID_ARGUMENT naming the field ("kernel entry build_id: ...") when `entry` cannot be
// kept or checked: a name that is not an entry name, a build id that is not hex or shorter
// than 16, an empty release, or whitespace in a value.
absl::Status ValidateKernelEntry(const KernelEntry& entry);
// One line per entry, oldest first: "name=N build=B release=R commit=C artifact=A".
std::string FormatKernelEntries(const std::vector<KernelEntry>& entries);
absl::StatusOr<std::vector<KernelEntry>> ParseKernelEntries(absl::string_view text);
// The entries kept in `state_dir` (none when the file does not exist).
absl::StatusOr<std::vector<KernelEntry>> LoadKernelEntries(const std::string& state_dir);
// Adds `entry` as the newest (replacing one of the same name), keeps the newest
// kMaxKernelEntries, and writes the file atomically. Returns what is kept.
absl::StatusOr<std::vector<KernelEntry>> SaveKernelEntry(const std::string& state_dir,
                                                         const KernelEntry& entry);
// Why a boot of `release` with `cmdline` is not the build `entry`: "expected build
// 1a2b3c4d5e6f7a8b release 6.1.192-lab, booted 6.1.0-57-amd64 without tlbfleet.build=1a2b...";
// nullopt when the release is the entry's and the command line has its tag.
std::optional<std::string> KernelBootMismatch(const KernelEntry& entry, absl::string_view release,
                                              absl::string_view cmdline);

struct BootEntryJournal {
  std::string entry;
  std::string from_boot_id;    // the boot the agent left to boot `entry`
  std::string landed_boot_id;  // the first boot after it, once the agent has seen it
};
std::string FormatBootEntryJournal(const BootEntryJournal& journal);
absl::StatusOr<BootEntryJournal> ParseBootEntryJournal(absl::string_view text);

// The agent's boot entries and which one this boot is. Thread-safe after Load (const only).
class BootEntries {
 public:
  BootEntries() = default;

  // Works out the entry of the running boot (see the header comment) from the journal in
  // `state_dir`, the kernel entries kept there and the kernel's release, command line and
  // boot_id (through `sysroot`), and records in the journal that its entry's boot has been
  // seen. Errors reading the kernel's files fail; a corrupt journal or kernel-entries file is
  // logged and treated as absent.
  static absl::StatusOr<BootEntries> Load(std::vector<BootEntry> entries,
                                          const std::string& state_dir, const Sysroot& sysroot);

  // No configured entry and no kernel entry.
  bool empty() const { return entries_.empty() && kernel_entries_.empty(); }
  // A configured entry (--boot-entries) by name; kernel entries are FindKernel's.
  const BootEntry* Find(absl::string_view name) const;
  const KernelEntry* FindKernel(absl::string_view name) const;
  const std::string& current() const { return current_; }
  const std::string& error() const { return error_; }

  // Fills HostInfo.boot_entries (names and expectations, never commands; configured entries
  // only), boot_entry and boot_entry_error, and build_id and commit when this boot is a
  // kernel entry.
  void Describe(v1::HostInfo* host) const;

  // Whether the agent can carry out a reboot into some entry, or a plain one.
  bool CanReboot(const std::string& reboot_command) const;

  // Why this agent cannot reboot into `name` (unknown entry, no reboot command), or OK.
  absl::Status CheckRebootable(const std::string& name, const std::string& reboot_command) const;

  // Records that the agent leaves boot `boot_id` to boot entry `name` (configured or a kernel
  // entry): the next start verifies the boot against it.
  absl::Status Journal(const std::string& name, const std::string& boot_id) const;

  // Runs entry `name`'s select command, then journals {name, boot_id}. Returns the command
  // that reboots into it (the entry's own `reboot`, else `reboot_command`). Errors say which
  // entry and why (the command's exit status and the end of its output).
  absl::StatusOr<std::string> Select(const std::string& name, const std::string& boot_id,
                                     const std::string& reboot_command) const;

  // Why `assignment` may not run on this boot (its boot entry is not this boot's), naming the
  // entry the job wants and what this boot is; nullopt when it may.
  std::optional<std::string> CheckJob(const v1::JobAssignment& assignment,
                                      const v1::HostInfo& host) const;

 private:
  std::vector<BootEntry> entries_;
  std::vector<KernelEntry> kernel_entries_;
  std::string journal_path_;
  std::string current_;
  std::string error_;
};

// Runs `command` with /bin/sh -c, its output captured, in the agent's environment with `env`
// ("K=V") set in it. OK on exit 0; otherwise an error with the exit status and the output's
// last lines.
absl::Status RunShellCommand(const std::string& command, const std::vector<std::string>& env = {});

}  // namespace tlbfleet::agent
