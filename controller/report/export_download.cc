#include "controller/report/export_download.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/report/export_bmf.h"
#include "controller/report/export_lkp.h"
#include "controller/report/export_mmtests.h"

namespace tlbfleet::report {
namespace {

constexpr size_t kTarBlock = 512;

// Writes `value` as a zero-padded octal number of width-1 digits and a NUL into `field`.
void TarOctal(char* field, size_t width, uint64_t value) {
  const std::string digits = absl::StrFormat("%0*o", static_cast<int>(width - 1), value);
  std::memcpy(field, digits.data(), std::min(digits.size(), width - 1));
  field[width - 1] = '\0';
}

absl::Status TarHeader(const std::string& path, uint64_t size, int64_t mtime, std::string* out) {
  std::string name = path, prefix;
  if (name.size() > 100) {
    // ustar keeps up to 155 bytes of directories in `prefix`, split at a '/'.
    const size_t cut = path.rfind('/', 155);
    if (cut == std::string::npos || path.size() - cut - 1 > 100 || cut == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("export path \"", path, "\": too long for a tar archive"));
    }
    prefix = path.substr(0, cut);
    name = path.substr(cut + 1);
  }
  char h[kTarBlock] = {};
  std::memcpy(h, name.data(), name.size());
  TarOctal(h + 100, 8, 0644);
  TarOctal(h + 108, 8, 0);
  TarOctal(h + 116, 8, 0);
  TarOctal(h + 124, 12, size);
  TarOctal(h + 136, 12, static_cast<uint64_t>(std::max<int64_t>(mtime, 0)));
  std::memset(h + 148, ' ', 8);  // the checksum counts its own field as blanks
  h[156] = '0';                  // a regular file
  std::memcpy(h + 257, "ustar", 6);
  std::memcpy(h + 263, "00", 2);
  std::memcpy(h + 345, prefix.data(), prefix.size());
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  const std::string checksum = absl::StrFormat("%06o", sum);
  std::memcpy(h + 148, checksum.data(), 6);
  h[154] = '\0';
  h[155] = ' ';
  out->append(h, kTarBlock);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> TarArchive(const std::vector<ExportFile>& files, const std::string& top,
                                       int64_t mtime_unix) {
  std::string out;
  for (const ExportFile& f : files) {
    if (absl::Status s =
            TarHeader(absl::StrCat(top, "/", f.path), f.content.size(), mtime_unix, &out);
        !s.ok()) {
      return s;
    }
    out += f.content;
    out.append((kTarBlock - f.content.size() % kTarBlock) % kTarBlock, '\0');
  }
  out.append(2 * kTarBlock, '\0');  // the end of the archive
  return out;
}

absl::StatusOr<ExportDownload> RunExportDownload(const std::string& format, const ExportRun& run,
                                                 const tlbfleet::v1::Report* report) {
  if (format != "mmtests" && format != "lkp" && format != "bmf") {
    return absl::InvalidArgumentError(
        absl::StrCat("format: \"", format,
                     "\" is not a run export (mmtests, lkp or bmf; otava exports "
                     "series: tlbfleet export --series ID --format otava)"));
  }
  if (absl::Status s = CheckRunFinished(run.run); !s.ok()) return s;
  const std::string base = absl::StrCat("run-", run.run.id(), "-", format);
  if (format == "bmf") {
    if (report == nullptr) return absl::InternalError("bmf export without the run's comparison");
    return ExportDownload{"application/json", base + ".json",
                          ExportBmf(*report, run.run.spec().benchmark())};
  }
  std::vector<ExportFile> files;
  if (format == "mmtests") {
    absl::StatusOr<MmtestsExport> mm = ExportMmtests(run);
    if (!mm.ok()) return mm.status();
    files = std::move(mm->files);
  } else {
    absl::StatusOr<LkpExport> lkp = ExportLkp(run);
    if (!lkp.ok()) return lkp.status();
    files = std::move(lkp->files);
  }
  absl::StatusOr<std::string> tar = TarArchive(files, base, run.run.finished_unix());
  if (!tar.ok()) return tar.status();
  return ExportDownload{"application/x-tar", base + ".tar", *std::move(tar)};
}

}  // namespace tlbfleet::report
