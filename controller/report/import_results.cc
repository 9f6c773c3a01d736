#include "controller/report/import_results.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "catalogue/catalogue.h"
#include "common/files.h"
#include "controller/report/import_lkp_results.h"
#include "controller/report/import_mmtests_results.h"

namespace tlbfleet::report {
namespace {

constexpr uintmax_t kMaxImportBytes = uintmax_t{64} << 20;

}  // namespace

absl::StatusOr<ImportFiles> ReadImportDirectory(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::InvalidArgumentError(absl::StrCat("DIR: ", dir, " is not a directory"));
  }
  ImportFiles files;
  uintmax_t total = 0;
  fs::recursive_directory_iterator it(dir, ec), end;
  if (ec) {
    return absl::InvalidArgumentError(absl::StrCat("DIR: cannot read ", dir, ": ", ec.message()));
  }
  for (; it != end; it.increment(ec)) {
    if (ec) {
      return absl::InvalidArgumentError(absl::StrCat("DIR: cannot read ", dir, ": ", ec.message()));
    }
    if (!it->is_regular_file(ec)) continue;
    total += it->file_size(ec);
    if (total > kMaxImportBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "DIR: ", dir, " holds more than 64 MiB; a result directory is logs, not data"));
    }
    absl::StatusOr<std::string> content = ReadFile(it->path().string());
    if (!content.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("DIR: ", content.status().message()));
    }
    files[fs::relative(it->path(), dir, ec).generic_string()] = *std::move(content);
  }
  return files;
}

std::string ImportDigestInput(const ImportFiles& files) {
  std::string out;
  for (const auto& [path, content] : files) {
    absl::StrAppend(&out, path.size(), ":", path, content.size(), ":", content);
  }
  return out;
}

absl::StatusOr<ImportedRun> ImportResults(const std::string& format, const ImportFiles& files) {
  if (format == "mmtests") return ImportMmtestsResults(files);
  if (format == "lkp") return ImportLkpResults(files);
  return absl::InvalidArgumentError(
      absl::StrCat("format: \"", format, "\" is not an import format (mmtests, lkp)"));
}

void SetMetricFacts(const std::string& benchmark, v1::Sample* sample) {
  const catalogue::WorkloadSchema* workload = catalogue::FindWorkload(benchmark);
  if (workload == nullptr) return;
  for (const catalogue::MetricSpec& m : workload->Metrics()) {
    if (m.name != sample->metric()) continue;
    sample->set_unit(m.unit);
    sample->set_better(m.better == catalogue::Better::kHigher ? v1::BETTER_HIGHER
                                                              : v1::BETTER_LOWER);
    return;
  }
}

}  // namespace tlbfleet::report
