#include "controller/report/import_results.h"

#include <filesystem>
#include <map>
#include <optional>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
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
    if (path == kImportJoinPath) continue;  // a request about the results, not a result
    absl::StrAppend(&out, path.size(), ":", path, content.size(), ":", content);
  }
  return out;
}

absl::StatusOr<ImportedRun> ImportResults(const std::string& format, const ImportFiles& files) {
  if (format != "mmtests" && format != "lkp") {
    return absl::InvalidArgumentError(
        absl::StrCat("format: \"", format, "\" is not an import format (mmtests, lkp)"));
  }
  const ImportFiles* results = &files;
  ImportFiles without_join;
  std::optional<ImportJoin> join;
  if (auto it = files.find(kImportJoinPath); it != files.end()) {
    absl::StatusOr<ImportJoin> parsed = ParseImportJoin(it->second);
    if (!parsed.ok()) return parsed.status();
    join = *std::move(parsed);
    without_join = files;
    without_join.erase(kImportJoinPath);
    results = &without_join;
  }
  absl::StatusOr<ImportedRun> run =
      format == "mmtests" ? ImportMmtestsResults(*results) : ImportLkpResults(*results);
  if (!run.ok() || !join.has_value()) return run;
  if (absl::Status s = ApplyImportJoin(*join, &*run); !s.ok()) return s;
  return run;
}

// --- joining a series ----------------------------------------------------------------------

namespace {

// The fields of a join file, in the order they are written.
constexpr std::pair<const char*, std::string ImportJoin::*> kJoinFields[] = {
    {"series", &ImportJoin::series_id},    {"benchmark", &ImportJoin::benchmark},
    {"microarch", &ImportJoin::microarch}, {"boot_entry", &ImportJoin::boot_entry},
    {"config", &ImportJoin::config},
};

}  // namespace

std::string FormatImportJoin(const ImportJoin& join) {
  std::string out;
  for (const auto& [name, field] : kJoinFields)
    absl::StrAppend(&out, name, " :: ", join.*field, "\n");
  return out;
}

absl::StatusOr<ImportJoin> ParseImportJoin(const std::string& text) {
  ImportJoin join;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (line.empty()) continue;
    const size_t sep = line.find(" ::");
    bool known = false;
    if (sep != absl::string_view::npos) {
      const absl::string_view key = line.substr(0, sep);
      absl::string_view value = line.substr(sep + 3);
      absl::ConsumePrefix(&value, " ");
      for (const auto& [name, field] : kJoinFields) {
        if (key != name) continue;
        join.*field = std::string(value);
        known = true;
      }
    }
    if (!known) {
      return absl::InvalidArgumentError(
          absl::StrCat(kImportJoinPath, ":", line_number, ": not \"KEY :: VALUE\" of a join"));
    }
  }
  if (join.benchmark.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(kImportJoinPath, ": no benchmark"));
  }
  return join;
}

absl::Status ApplyImportJoin(const ImportJoin& join, ImportedRun* run) {
  v1::RunSpec& spec = run->spec;
  const std::string series =
      absl::StrCat("series: series ", join.series_id, " (", join.benchmark, ")");
  if (spec.benchmark() != join.benchmark) {
    return absl::InvalidArgumentError(absl::StrCat(series, " is a history of ", join.benchmark,
                                                   "; the files hold ", spec.benchmark()));
  }
  if (spec.arms_size() != 1) {
    std::vector<std::string> names;
    for (const v1::ArmSpec& a : spec.arms()) names.push_back(a.name());
    return absl::InvalidArgumentError(
        absl::StrCat(series, ": the files hold ", spec.arms_size(), " arms (",
                     absl::StrJoin(names, ", "), "), which would be ", spec.arms_size(),
                     " points of one run in one series; import one arm at a time (--arm)"));
  }
  v1::ArmSpec& arm = *spec.mutable_arms(0);
  // The configuration as series_upkeep's ArmConfig writes it: "name=value" sorted, the
  // ceiling as "ceiling=...", kernels built from source as kernel_config= / revert=.
  std::map<std::string, std::string> wanted;
  for (absl::string_view part : absl::StrSplit(join.config, ' ', absl::SkipEmpty())) {
    const std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(part, '=');
    const std::string name(kv.first);
    if (name == "kernel_config" || name == "revert") {
      return absl::InvalidArgumentError(absl::StrCat(
          series, " measures a kernel built from source; results of another tool cannot join it"));
    }
    if (name == "ceiling") {
      arm.set_ceiling(std::string(kv.second));
      continue;
    }
    if (spec.has_sweep() && name == spec.sweep().param()) {
      return absl::InvalidArgumentError(
          absl::StrCat(series, " fixes ", part, "; the files sweep ", name));
    }
    wanted[name] = std::string(kv.second);
  }
  // What the files recorded must agree with the series: the join adds, never overrides.
  std::map<std::string, std::string> have(spec.params().begin(), spec.params().end());
  for (const auto& [name, value] : arm.params()) have[name] = value;
  for (const auto& [name, value] : have) {
    auto it = wanted.find(name);
    if (it == wanted.end() || it->second != value) {
      return absl::InvalidArgumentError(absl::StrCat(
          series, ": the files record ", name, "=", value,
          it == wanted.end() ? absl::StrCat(", which its configuration does not set")
                             : absl::StrCat("; its configuration has ", name, "=", it->second)));
    }
  }
  for (const auto& [name, value] : wanted) {
    if (spec.params().count(name) == 0) (*arm.mutable_params())[name] = value;
  }
  if (!arm.boot_entry().empty() && arm.boot_entry() != join.boot_entry) {
    return absl::InvalidArgumentError(absl::StrCat(series, " boots entry \"", join.boot_entry,
                                                   "\"; the files record \"", arm.boot_entry(),
                                                   "\""));
  }
  arm.set_boot_entry(join.boot_entry);
  for (v1::Sample& s : run->samples) {
    if (!s.microarch().empty() && s.microarch() != join.microarch) {
      return absl::InvalidArgumentError(absl::StrCat(series, " was measured on ", join.microarch,
                                                     "; the files record ", s.microarch()));
    }
    if (!s.boot_entry().empty() && s.boot_entry() != join.boot_entry) {
      return absl::InvalidArgumentError(absl::StrCat(series, " boots entry \"", join.boot_entry,
                                                     "\"; the files record \"", s.boot_entry(),
                                                     "\""));
    }
    s.set_microarch(join.microarch);
    s.set_boot_entry(join.boot_entry);
  }
  run->declared =
      absl::StrCat("joined series ", join.series_id, ": microarch \"", join.microarch,
                   "\", boot entry \"", join.boot_entry, "\" and configuration \"", join.config,
                   "\" were declared at import (--series), not recorded by the files");
  return absl::OkStatus();
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
