#include "agent/kernel/ceiling_control.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/kernel/ceiling.h"
#include "agent/kernel/ceiling_lock.h"
#include "common/files.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::agent {
namespace {

// The boot_id of a journal that does not parse as a whole, if its first line still says it.
std::string SalvageBootId(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return "";
  std::vector<std::string> f = absl::StrSplit(text->substr(0, text->find('\n')), ' ');
  if (f.size() != 2 || f[0] != "boot_id" || f[1].empty()) return "";
  return f[1];
}

}  // namespace

std::string FormatCeilingJournal(const CeilingJournal& journal) {
  return absl::StrCat("boot_id ", journal.boot_id, "\noriginal ", journal.original, "\n");
}

absl::StatusOr<CeilingJournal> ParseCeilingJournal(std::string_view text) {
  CeilingJournal journal;
  bool have_boot = false, have_original = false;
  for (absl::string_view line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.empty()) continue;
    if (f.size() != 2) return absl::InvalidArgumentError(absl::StrCat("bad line '", line, "'"));
    if (f[0] == "boot_id") {
      journal.boot_id = std::string(f[1]);
      have_boot = true;
    } else if (f[0] == "original") {
      if (!absl::SimpleAtoi(f[1], &journal.original) || journal.original < 0 ||
          journal.original > kMaxCeiling) {
        return absl::InvalidArgumentError(absl::StrCat("bad original value '", f[1], "'"));
      }
      have_original = true;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown key '", f[0], "'"));
    }
  }
  if (!have_boot || !have_original) {
    return absl::InvalidArgumentError("missing boot_id or original");
  }
  return journal;
}

absl::StatusOr<CeilingJournal> ReadCeilingJournal(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<CeilingJournal> journal = ParseCeilingJournal(*text);
  if (!journal.ok()) {
    return absl::DataLossError(absl::StrCat(path, ": ", journal.status().message()));
  }
  return journal;
}

absl::Status WriteCeilingJournal(const std::string& path, const CeilingJournal& journal) {
  return WriteFileAtomic(path, FormatCeilingJournal(journal));
}

absl::Status RemoveCeilingJournal(const std::string& path) {
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return ErrnoStatus(errno, absl::StrCat("unlink ", path));
  }
  return FsyncDirectory(DirName(path));
}

const char* CeilingRecoveryName(CeilingRecovery::Outcome outcome) {
  switch (outcome) {
    case CeilingRecovery::Outcome::kNoJournal:
      return "no journal";
    case CeilingRecovery::Outcome::kRestored:
      return "restored";
    case CeilingRecovery::Outcome::kEarlierBoot:
      return "journal from an earlier boot discarded";
    case CeilingRecovery::Outcome::kCorrupt:
      return "corrupt journal";
    case CeilingRecovery::Outcome::kRestoreFailed:
      return "restore failed";
  }
  return "?";
}

CeilingRecovery RecoverCeiling(const Sysroot& sysroot, const std::string& journal_path,
                               const std::string& boot_id) {
  CeilingRecovery r;
  absl::StatusOr<CeilingJournal> journal = ReadCeilingJournal(journal_path);
  if (absl::IsNotFound(journal.status())) {
    r.outcome = CeilingRecovery::Outcome::kNoJournal;
    r.detail = "no ceiling journal: nothing to restore";
    return r;
  }
  if (!journal.ok()) {
    // Not knowing the original, writing anything would be a guess; keep it for a human.
    std::string aside = absl::StrCat(journal_path, ".corrupt");
    std::rename(journal_path.c_str(), aside.c_str());
    (void)FsyncDirectory(DirName(journal_path));
    // Its boot_id line may still be readable: a journal of an earlier boot is harmless
    // whatever the rest says, because the reboot reset the tunable.
    std::string salvaged = SalvageBootId(aside);
    if (!salvaged.empty() && salvaged != boot_id) {
      r.outcome = CeilingRecovery::Outcome::kEarlierBoot;
      r.detail = absl::StrCat(journal.status().message(), "; moved to ", aside,
                              "; it was written in boot ", salvaged, " (now ", boot_id,
                              "), so the reboot reset the ceiling");
      return r;
    }
    r.outcome = CeilingRecovery::Outcome::kCorrupt;
    r.detail = absl::StrCat(journal.status().message(), "; moved to ", aside,
                            "; the value this boot started with is unknown");
    return r;
  }
  r.journal = *journal;
  if (journal->boot_id != boot_id) {
    r.outcome = CeilingRecovery::Outcome::kEarlierBoot;
    absl::Status removed = RemoveCeilingJournal(journal_path);
    r.detail = absl::StrCat("ceiling journal from boot ", journal->boot_id, " (now ", boot_id,
                            ") discarded: the reboot reset the ceiling", removed.ok() ? "" : "; ",
                            removed.ok() ? "" : removed.message());
    return r;
  }
  // Exclusive, so that no other agent's job measures while the value goes back.
  absl::StatusOr<std::unique_ptr<CeilingLock>> lock =
      CeilingLock::Acquire(sysroot, CeilingLock::Mode::kExclusive, journal_path, boot_id);
  if (!lock.ok()) {
    r.outcome = CeilingRecovery::Outcome::kRestoreFailed;
    r.detail = absl::StrCat("cannot restore the flush ceiling to ", journal->original,
                            " after a crash: ", lock.status().message());
    return r;
  }
  absl::StatusOr<int64_t> back = WriteCeiling(sysroot, journal->original);
  if (!back.ok()) {
    r.outcome = CeilingRecovery::Outcome::kRestoreFailed;
    r.detail = absl::StrCat("cannot restore the flush ceiling to ", journal->original,
                            " after a crash: ", back.status().message());
    return r;
  }
  r.outcome = CeilingRecovery::Outcome::kRestored;
  absl::Status removed = RemoveCeilingJournal(journal_path);
  r.detail = absl::StrCat("flush ceiling restored to ", journal->original,
                          " after an unclean stop in this boot", removed.ok() ? "" : "; ",
                          removed.ok() ? "" : removed.message());
  return r;
}

CeilingChanger::CeilingChanger(const Sysroot& sysroot, std::string journal_path,
                               std::string boot_id)
    : sysroot_(sysroot), journal_path_(std::move(journal_path)), boot_id_(std::move(boot_id)) {}

CeilingChanger::~CeilingChanger() {
  absl::Status s = Restore();
  if (!s.ok()) spdlog::error("{}", std::string(s.message()));
}

absl::StatusOr<int64_t> CeilingChanger::Apply(std::string_view spec_text) {
  const std::string spec(spec_text);
  absl::StatusOr<CeilingSpec> parsed = ParseCeilingSpec(spec);
  if (!parsed.ok()) return parsed.status();
  v1::CeilingInfo probe = ProbeCeiling(sysroot_);
  if (!probe.writable() || !probe.readable()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "ceiling ", spec,
        " requested but the flush ceiling is not writable on this host: ", probe.reason()));
  }
  // A journal of this boot means an earlier restore failed: its value, not the current one,
  // is what the boot started with.
  absl::StatusOr<CeilingJournal> journal = ReadCeilingJournal(journal_path_);
  if (!journal.ok() && !absl::IsNotFound(journal.status())) {
    // Journaling the current value now would record a possibly changed value as the boot's.
    return absl::DataLossError(absl::StrCat("ceiling ", spec, " requested but ",
                                            journal.status().message(),
                                            ": the value this boot started with is unknown"));
  }
  const bool journaled = journal.ok() && journal->boot_id == boot_id_;
  int64_t original = 0;
  if (journaled) {
    original = journal->original;
  } else {
    absl::StatusOr<int64_t> current = ReadCeiling(sysroot_);
    if (!current.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot read the flush ceiling before setting ", spec, ": ", current.status().message()));
    }
    original = *current;
    absl::Status written = WriteCeilingJournal(journal_path_, CeilingJournal{boot_id_, original});
    if (!written.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot journal the original flush ceiling (", original, ") before setting ",
                       spec, ": ", written.message()));
    }
  }
  original_ = original;
  const int64_t want = parsed->is_default ? original : parsed->pages;
  absl::StatusOr<int64_t> back = WriteCeiling(sysroot_, want);
  if (!back.ok()) {
    return absl::Status(back.status().code(), absl::StrCat("cannot set the flush ceiling to ", spec,
                                                           ": ", back.status().message()));
  }
  applied_ = *back;
  return *back;
}

absl::Status CeilingChanger::Restore() {
  if (!original_.has_value()) return absl::OkStatus();
  const int64_t original = *original_;
  original_.reset();
  absl::StatusOr<int64_t> back = WriteCeiling(sysroot_, original);
  if (!back.ok()) {
    return absl::Status(
        back.status().code(),
        absl::StrCat("cannot restore the flush ceiling to ", original, ": ",
                     back.status().message(), " (journal kept in ", journal_path_, ")"));
  }
  absl::Status removed = RemoveCeilingJournal(journal_path_);
  if (!removed.ok()) {
    return absl::InternalError(absl::StrCat("flush ceiling restored to ", original,
                                            " but the journal stays: ", removed.message()));
  }
  return absl::OkStatus();
}

}  // namespace tlbfleet::agent
