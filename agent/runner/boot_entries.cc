#include "agent/runner/boot_entries.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/files.h"
#include "common/scoped_fd.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::agent {
namespace {

constexpr size_t kMaxEntryNameLength = 128;
constexpr size_t kMaxOutputEcho = 400;

absl::Status KeyError(absl::string_view source, const std::string& path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": ", path, ": ", what));
}

bool ValidEntryName(absl::string_view name) {
  if (name.empty() || name.size() > kMaxEntryNameLength) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '+' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// A non-empty scalar; errors name `path`.
absl::StatusOr<std::string> Text(const YAML::Node& node, absl::string_view source,
                                 const std::string& path) {
  if (!node.IsDefined() || node.IsNull()) return KeyError(source, path, "value is missing");
  if (!node.IsScalar()) return KeyError(source, path, "expected a string");
  if (node.Scalar().empty()) return KeyError(source, path, "must not be empty");
  return node.Scalar();
}

absl::Status ParseExpect(const YAML::Node& node, absl::string_view source, const std::string& path,
                         BootEntry* entry) {
  if (!node.IsMap()) {
    return KeyError(source, path, "expected a map with release and/or cmdline");
  }
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    const std::string field = absl::StrCat(path, ".", key);
    if (key == "release") {
      absl::StatusOr<std::string> release = Text(kv.second, source, field);
      if (!release.ok()) return release.status();
      entry->release = *release;
    } else if (key == "cmdline") {
      if (kv.second.IsScalar()) {
        absl::StatusOr<std::string> word = Text(kv.second, source, field);
        if (!word.ok()) return word.status();
        entry->cmdline.push_back(*word);
        continue;
      }
      if (!kv.second.IsSequence()) return KeyError(source, field, "expected a list of strings");
      for (size_t i = 0; i < kv.second.size(); ++i) {
        absl::StatusOr<std::string> word =
            Text(kv.second[i], source, absl::StrCat(field, "[", i, "]"));
        if (!word.ok()) return word.status();
        entry->cmdline.push_back(*word);
      }
    } else {
      return KeyError(source, field, "unknown key (expected release or cmdline)");
    }
  }
  if (entry->release.empty() && entry->cmdline.empty()) {
    return KeyError(source, path,
                    "give release and/or cmdline: an entry whose boot cannot be verified "
                    "cannot be trusted");
  }
  return absl::OkStatus();
}

absl::StatusOr<BootEntry> ParseEntry(const YAML::Node& node, absl::string_view source,
                                     const std::string& path) {
  if (!node.IsMap()) return KeyError(source, path, "expected a map (name, select, expect)");
  BootEntry entry;
  bool has_expect = false;
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    const std::string field = absl::StrCat(path, ".", key);
    if (key == "name" || key == "select" || key == "reboot") {
      absl::StatusOr<std::string> text = Text(kv.second, source, field);
      if (!text.ok()) return text.status();
      (key == "name" ? entry.name : key == "select" ? entry.select : entry.reboot) = *text;
    } else if (key == "expect") {
      if (absl::Status s = ParseExpect(kv.second, source, field, &entry); !s.ok()) return s;
      has_expect = true;
    } else {
      return KeyError(source, field, "unknown key (expected name, select, reboot or expect)");
    }
  }
  if (entry.name.empty()) return KeyError(source, path + ".name", "required");
  if (!ValidEntryName(entry.name)) {
    return KeyError(source, path + ".name",
                    absl::StrCat("'", entry.name, "' must be 1 to ", kMaxEntryNameLength,
                                 " letters, digits, '.', '_', '+' or '-'"));
  }
  if (entry.select.empty()) {
    return KeyError(
        source, path + ".select",
        absl::StrCat("required: the command that makes the next boot entry '", entry.name, "'"));
  }
  if (!has_expect) {
    return KeyError(source, path + ".expect",
                    absl::StrCat("required for entry '", entry.name,
                                 "': the release and/or cmdline its boot must show"));
  }
  return entry;
}

// Reads up to the end of `fd`, keeping the last kMaxOutputEcho bytes.
std::string DrainTail(int fd) {
  std::string tail;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    tail.append(buf, static_cast<size_t>(n));
    if (tail.size() > 4 * kMaxOutputEcho) tail.erase(0, tail.size() - kMaxOutputEcho);
  }
  if (tail.size() > kMaxOutputEcho) tail.erase(0, tail.size() - kMaxOutputEcho);
  return Trim(tail);
}

}  // namespace

absl::StatusOr<std::vector<BootEntry>> ParseBootEntries(absl::string_view yaml,
                                                        absl::string_view source) {
  std::vector<BootEntry> entries;
  // yaml-cpp throws on malformed input; nothing escapes this function.
  try {
    const YAML::Node root = YAML::Load(std::string(yaml));
    if (!root.IsDefined() || root.IsNull()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": empty; expected boot_entries:"));
    }
    if (!root.IsMap()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": expected a map with the key boot_entries"));
    }
    YAML::Node list;
    for (const auto& kv : root) {
      const std::string key = kv.first.as<std::string>();
      if (key != "boot_entries") {
        return KeyError(source, key, "unknown key (expected boot_entries)");
      }
      list = kv.second;
    }
    if (!list.IsDefined() || list.IsNull()) return entries;
    if (!list.IsSequence()) return KeyError(source, "boot_entries", "expected a list");
    std::set<std::string> names;
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string path = absl::StrCat("boot_entries[", i, "]");
      absl::StatusOr<BootEntry> entry = ParseEntry(list[i], source, path);
      if (!entry.ok()) return entry.status();
      if (!names.insert(entry->name).second) {
        return KeyError(source, path + ".name",
                        absl::StrCat("entry '", entry->name, "' appears twice"));
      }
      entries.push_back(*std::move(entry));
    }
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) return absl::InvalidArgumentError(absl::StrCat(source, ": ", e.msg));
    return absl::InvalidArgumentError(
        absl::StrCat(source, ":", e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg));
  }
  return entries;
}

absl::StatusOr<std::vector<BootEntry>> LoadBootEntries(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--boot-entries ", path, ": ", std::string(text.status().message())));
  }
  return ParseBootEntries(*text, path);
}

std::optional<std::string> BootMismatch(const BootEntry& entry, absl::string_view release,
                                        absl::string_view cmdline) {
  std::vector<std::string> why;
  if (!entry.release.empty() &&
      ::fnmatch(entry.release.c_str(), std::string(release).c_str(), 0) != 0) {
    why.push_back(absl::StrCat("expected release ", entry.release, ", booted ", release));
  }
  // Whole words: "tlbfleet.entry=e1" must not be found inside "tlbfleet.entry=e10".
  const std::string padded = absl::StrCat(" ", cmdline, " ");
  for (const std::string& word : entry.cmdline) {
    if (padded.find(absl::StrCat(" ", word, " ")) == std::string::npos) {
      why.push_back(absl::StrCat("expected '", word, "' in the kernel command line"));
    }
  }
  if (why.empty()) return std::nullopt;
  return absl::StrJoin(why, "; ");
}

std::string BootEntryJournalFile(absl::string_view state_dir) {
  return absl::StrCat(std::string(state_dir), "/boot-entry-journal");
}

std::string KernelEntriesFile(absl::string_view state_dir) {
  return absl::StrCat(std::string(state_dir), "/kernel-entries");
}

std::string BuildTag(absl::string_view build_id) {
  return absl::StrCat("tlbfleet.build=", build_id.substr(0, 16));
}

namespace {

bool IsLowerHex(absl::string_view text) {
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// A value of the kernel-entries file: printable, no whitespace (the file splits on it).
bool PlainWord(absl::string_view text) {
  for (char c : text) {
    if (c <= ' ' || c > '~') return false;
  }
  return true;
}

}  // namespace

absl::Status ValidateKernelEntry(const KernelEntry& entry) {
  const auto bad = [](absl::string_view field, absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("kernel entry ", field, ": ", why));
  };
  if (!ValidEntryName(entry.name)) {
    return bad("name", absl::StrCat("'", entry.name, "' must be 1 to ", kMaxEntryNameLength,
                                    " letters, digits, '.', '_', '+' or '-'"));
  }
  if (entry.build_id.size() < 16 || !IsLowerHex(entry.build_id)) {
    return bad("build_id", "must be at least 16 lowercase hex digits");
  }
  if (entry.kernel_release.empty()) return bad("kernel_release", "value is missing");
  if (!PlainWord(entry.kernel_release)) {
    return bad("kernel_release", "must be printable, without spaces");
  }
  if (!IsLowerHex(entry.commit)) return bad("commit", "must be a hex commit hash");
  if (!IsLowerHex(entry.artifact_id)) return bad("artifact_id", "must be hex");
  return absl::OkStatus();
}

std::string FormatKernelEntries(const std::vector<KernelEntry>& entries) {
  std::string text;
  for (const KernelEntry& e : entries) {
    absl::StrAppend(&text, "name=", e.name, " build=", e.build_id, " release=", e.kernel_release,
                    " commit=", e.commit, " artifact=", e.artifact_id, "\n");
  }
  return text;
}

absl::StatusOr<std::vector<KernelEntry>> ParseKernelEntries(absl::string_view text) {
  std::vector<KernelEntry> entries;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (line.empty()) continue;
    KernelEntry entry;
    for (absl::string_view word : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
      const size_t eq = word.find('=');
      const absl::string_view key = word.substr(0, eq);
      const std::string value(eq == absl::string_view::npos ? "" : word.substr(eq + 1));
      if (key == "name") {
        entry.name = value;
      } else if (key == "build") {
        entry.build_id = value;
      } else if (key == "release") {
        entry.kernel_release = value;
      } else if (key == "commit") {
        entry.commit = value;
      } else if (key == "artifact") {
        entry.artifact_id = value;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("kernel-entries line ", line_number, ": unknown key '", key, "'"));
      }
    }
    if (absl::Status s = ValidateKernelEntry(entry); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("kernel-entries line ", line_number, ": ", std::string(s.message())));
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

absl::StatusOr<std::vector<KernelEntry>> LoadKernelEntries(const std::string& state_dir) {
  const std::string path = KernelEntriesFile(state_dir);
  if (::access(path.c_str(), F_OK) != 0 && errno == ENOENT) return std::vector<KernelEntry>{};
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<std::vector<KernelEntry>> entries = ParseKernelEntries(*text);
  if (!entries.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", std::string(entries.status().message())));
  }
  return entries;
}

absl::StatusOr<std::vector<KernelEntry>> SaveKernelEntry(const std::string& state_dir,
                                                         const KernelEntry& entry) {
  if (absl::Status s = ValidateKernelEntry(entry); !s.ok()) return s;
  absl::StatusOr<std::vector<KernelEntry>> kept = LoadKernelEntries(state_dir);
  if (!kept.ok()) {
    // A file the agent cannot read back is no use to the next start: start it again.
    spdlog::error("{}; starting it again", std::string(kept.status().message()));
    kept = std::vector<KernelEntry>{};
  }
  std::vector<KernelEntry> entries;
  for (KernelEntry& e : *kept) {
    if (e.name != entry.name) entries.push_back(std::move(e));
  }
  entries.push_back(entry);
  if (entries.size() > kMaxKernelEntries) {
    entries.erase(entries.begin(), entries.end() - kMaxKernelEntries);
  }
  if (absl::Status s = WriteFileAtomic(KernelEntriesFile(state_dir), FormatKernelEntries(entries));
      !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("keeping kernel entry ", entry.name, ": ",
                                               std::string(s.message())));
  }
  return entries;
}

std::optional<std::string> KernelBootMismatch(const KernelEntry& entry, absl::string_view release,
                                              absl::string_view cmdline) {
  const std::string tag = BuildTag(entry.build_id);
  const bool release_ok = release == entry.kernel_release;
  const bool tag_ok =
      absl::StrCat(" ", cmdline, " ").find(absl::StrCat(" ", tag, " ")) != std::string::npos;
  if (release_ok && tag_ok) return std::nullopt;
  return absl::StrCat("expected build ", entry.build_id.substr(0, 16), " release ",
                      entry.kernel_release, ", booted ", release, tag_ok ? " with " : " without ",
                      tag);
}

std::string FormatBootEntryJournal(const BootEntryJournal& journal) {
  std::string text = absl::StrCat("entry ", journal.entry, "\nfrom ", journal.from_boot_id, "\n");
  if (!journal.landed_boot_id.empty())
    absl::StrAppend(&text, "landed ", journal.landed_boot_id, "\n");
  return text;
}

absl::StatusOr<BootEntryJournal> ParseBootEntryJournal(absl::string_view text) {
  BootEntryJournal journal;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    const size_t space = line.find(' ');
    if (space == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("boot-entry journal line '", line, "'"));
    }
    const absl::string_view key = line.substr(0, space);
    const std::string value(line.substr(space + 1));
    if (key == "entry") {
      journal.entry = value;
    } else if (key == "from") {
      journal.from_boot_id = value;
    } else if (key == "landed") {
      journal.landed_boot_id = value;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("boot-entry journal key '", key, "'"));
    }
  }
  if (journal.entry.empty() || journal.from_boot_id.empty()) {
    return absl::InvalidArgumentError("boot-entry journal without entry or from");
  }
  return journal;
}

absl::StatusOr<BootEntries> BootEntries::Load(std::vector<BootEntry> entries,
                                              const std::string& state_dir,
                                              const Sysroot& sysroot) {
  BootEntries out;
  out.entries_ = std::move(entries);
  out.journal_path_ = BootEntryJournalFile(state_dir);
  if (absl::StatusOr<std::vector<KernelEntry>> kernels = LoadKernelEntries(state_dir);
      kernels.ok()) {
    out.kernel_entries_ = *std::move(kernels);
  } else {
    spdlog::error("{}; no kernel built from source is known", kernels.status().ToString());
  }
  if (out.empty()) return out;
  absl::StatusOr<std::string> release = sysroot.ReadTrimmed("/proc/sys/kernel/osrelease");
  if (!release.ok()) return release.status();
  absl::StatusOr<std::string> cmdline = sysroot.ReadTrimmed("/proc/cmdline");
  if (!cmdline.ok()) return cmdline.status();
  absl::StatusOr<std::string> boot_id = sysroot.ReadTrimmed("/proc/sys/kernel/random/boot_id");
  if (!boot_id.ok()) return boot_id.status();

  std::optional<BootEntryJournal> journal;
  if (absl::StatusOr<std::string> text = ReadFile(out.journal_path_); text.ok()) {
    absl::StatusOr<BootEntryJournal> parsed = ParseBootEntryJournal(*text);
    if (parsed.ok()) {
      journal = *std::move(parsed);
    } else {
      spdlog::error("{}: {}; ignored", out.journal_path_, std::string(parsed.status().message()));
    }
  }
  // The journal speaks for the first boot after the one the agent left, and only for it.
  const bool selected = journal.has_value() && journal->from_boot_id != *boot_id &&
                        (journal->landed_boot_id.empty() || journal->landed_boot_id == *boot_id);
  if (selected) {
    const BootEntry* entry = out.Find(journal->entry);
    const KernelEntry* kernel = out.FindKernel(journal->entry);
    if (kernel != nullptr) {
      if (std::optional<std::string> why = KernelBootMismatch(*kernel, *release, *cmdline)) {
        out.error_ = absl::StrCat("entry ", kernel->name, " ", *why);
      } else {
        out.current_ = kernel->name;
      }
    } else if (entry == nullptr) {
      out.error_ = absl::StrCat("this boot was to be entry ", journal->entry,
                                ", which is no longer in --boot-entries");
    } else if (std::optional<std::string> why = BootMismatch(*entry, *release, *cmdline)) {
      out.error_ = absl::StrCat("entry ", entry->name, " ", *why);
    } else {
      out.current_ = entry->name;
    }
    if (journal->landed_boot_id.empty()) {
      journal->landed_boot_id = *boot_id;
      if (absl::Status s = WriteFileAtomic(out.journal_path_, FormatBootEntryJournal(*journal));
          !s.ok()) {
        spdlog::error("recording the boot of entry {}: {}", journal->entry, s.ToString());
      }
    }
    return out;
  }
  std::vector<std::string> matching;
  for (const BootEntry& e : out.entries_) {
    if (!BootMismatch(e, *release, *cmdline).has_value()) matching.push_back(e.name);
  }
  // A build's tag is its own: a boot that carries it (and its release) is that build, even
  // when nobody journaled the boot (the host was rebooted by hand into the same kernel).
  for (const KernelEntry& e : out.kernel_entries_) {
    if (!KernelBootMismatch(e, *release, *cmdline).has_value()) matching.push_back(e.name);
  }
  // Two entries may boot the same kernel; only one that the boot tells apart is named.
  if (matching.size() == 1) out.current_ = matching[0];
  if (matching.size() > 1) {
    spdlog::warn("this boot ({}) meets the expectations of entries {}; reporting none", *release,
                 absl::StrJoin(matching, ", "));
  }
  return out;
}

const BootEntry* BootEntries::Find(absl::string_view name) const {
  for (const BootEntry& e : entries_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

const KernelEntry* BootEntries::FindKernel(absl::string_view name) const {
  for (const KernelEntry& e : kernel_entries_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

void BootEntries::Describe(v1::HostInfo* host) const {
  host->clear_boot_entries();
  for (const BootEntry& e : entries_) {
    v1::BootEntryInfo* info = host->add_boot_entries();
    info->set_name(e.name);
    info->set_release(e.release);
    for (const std::string& word : e.cmdline) info->add_cmdline(word);
  }
  host->set_boot_entry(current_);
  host->set_boot_entry_error(error_);
  const KernelEntry* kernel = FindKernel(current_);
  host->set_build_id(kernel == nullptr ? "" : kernel->build_id);
  host->set_commit(kernel == nullptr ? "" : kernel->commit);
}

bool BootEntries::CanReboot(const std::string& reboot_command) const {
  if (!reboot_command.empty()) return true;
  if (entries_.empty()) return false;
  for (const BootEntry& e : entries_) {
    if (e.reboot.empty()) return false;
  }
  return true;
}

absl::Status BootEntries::CheckRebootable(const std::string& name,
                                          const std::string& reboot_command) const {
  if (name.empty()) {
    if (reboot_command.empty()) {
      return absl::FailedPreconditionError("this agent has no --reboot-command");
    }
    return absl::OkStatus();
  }
  const BootEntry* entry = Find(name);
  if (entry == nullptr && FindKernel(name) != nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("boot entry '", name,
                     "' is a kernel built from source: a reboot into it must name its artifact"));
  }
  if (entry == nullptr) {
    std::vector<std::string> known;
    for (const BootEntry& e : entries_) known.push_back(e.name);
    return absl::NotFoundError(
        absl::StrCat("boot entry '", name, "' is not in this agent's --boot-entries (",
                     known.empty() ? std::string("it has none")
                                   : absl::StrCat("it has ", absl::StrJoin(known, ", ")),
                     ")"));
  }
  if (entry->reboot.empty() && reboot_command.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "boot entry '", name, "' has no reboot command and this agent has no --reboot-command"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> BootEntries::Select(const std::string& name, const std::string& boot_id,
                                                const std::string& reboot_command) const {
  if (absl::Status s = CheckRebootable(name, reboot_command); !s.ok()) return s;
  const BootEntry& entry = *Find(name);
  if (absl::Status s = RunShellCommand(entry.select); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("select command of boot entry '", name,
                                               "' failed: ", std::string(s.message())));
  }
  if (absl::Status s = Journal(name, boot_id); !s.ok()) return s;
  return entry.reboot.empty() ? reboot_command : entry.reboot;
}

absl::Status BootEntries::Journal(const std::string& name, const std::string& boot_id) const {
  BootEntryJournal journal;
  journal.entry = name;
  journal.from_boot_id = boot_id;
  if (absl::Status s = WriteFileAtomic(journal_path_, FormatBootEntryJournal(journal)); !s.ok()) {
    return absl::Status(
        s.code(), absl::StrCat("journaling boot entry '", name, "': ", std::string(s.message())));
  }
  return absl::OkStatus();
}

std::optional<std::string> BootEntries::CheckJob(const v1::JobAssignment& a,
                                                 const v1::HostInfo& host) const {
  if (a.boot_entry().empty() || a.boot_entry() == host.boot_entry()) return std::nullopt;
  const BootEntry* wanted = Find(a.boot_entry());
  std::string want = absl::StrCat("job needs boot entry ", a.boot_entry());
  if (wanted == nullptr) {
    absl::StrAppend(&want, " (not in this agent's --boot-entries)");
  } else if (!wanted->release.empty()) {
    absl::StrAppend(&want, " (kernel ", wanted->release, ")");
  }
  std::string is = host.boot_entry().empty()
                       ? std::string("this boot is no entry")
                       : absl::StrCat("this boot is entry ", host.boot_entry());
  absl::StrAppend(&is, " (kernel ", host.kernel_release(), ")");
  if (!host.boot_entry_error().empty()) absl::StrAppend(&is, ": ", host.boot_entry_error());
  return absl::StrCat(want, ", but ", is);
}

absl::Status RunShellCommand(const std::string& command, const std::vector<std::string>& env) {
  // Made before fork: the child of a threaded process may only call async-signal-safe
  // functions, which setenv is not.
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e) {
    const absl::string_view entry(*e);
    const absl::string_view key = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const std::string& set : env) {
      replaced = replaced || absl::string_view(set).substr(0, set.find('=')) == key;
    }
    if (!replaced) environment.emplace_back(entry);
  }
  environment.insert(environment.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (std::string& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);
  const char* const argv[] = {"sh", "-c", command.c_str(), nullptr};
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return ErrnoStatus(errno, "pipe");
  ScopedFd read_end(out[0]), write_end(out[1]);
  const pid_t pid = ::fork();
  if (pid < 0) return ErrnoStatus(errno, "fork");
  if (pid == 0) {
    // The agent blocks SIGTERM/SIGINT for its signal thread; a shell must not inherit that.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(write_end.get(), STDOUT_FILENO);
    ::dup2(write_end.get(), STDERR_FILENO);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    ::execve("/bin/sh", const_cast<char* const*>(argv), envp.data());
    ::_exit(127);
  }
  write_end.reset();  // the child's copies are the only writers left: EOF when it exits
  const std::string tail = DrainTail(read_end.get());
  read_end.reset();
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return ErrnoStatus(errno, "waitpid");
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return absl::OkStatus();
  const std::string how = WIFEXITED(status)
                              ? absl::StrCat("exited with status ", WEXITSTATUS(status))
                              : absl::StrCat("was killed by signal ", WTERMSIG(status));
  return absl::FailedPreconditionError(
      absl::StrCat("\"", command, "\" ", how, tail.empty() ? "" : ": ", tail));
}

}  // namespace tlbfleet::agent
