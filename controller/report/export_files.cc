#include "controller/report/export_files.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "catalogue/catalogue.h"
#include "common/files.h"

namespace tlbfleet::report {

namespace v1 = tlbfleet::v1;

absl::Status WriteExportFiles(const std::string& dir, const std::vector<ExportFile>& files) {
  if (absl::Status s = MakeDirs(dir); !s.ok()) return s;
  for (const ExportFile& file : files) {
    if (file.path.empty() || file.path.front() == '/') {
      return absl::InvalidArgumentError(
          absl::StrCat("export path \"", file.path, "\": must be relative to the output dir"));
    }
    for (absl::string_view part : absl::StrSplit(file.path, '/')) {
      if (part == ".." || part.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("export path \"", file.path, "\": an empty or \"..\" component"));
      }
    }
    const std::string path = absl::StrCat(dir, "/", file.path);
    if (absl::Status s = MakeDirs(DirName(path)); !s.ok()) return s;
    if (absl::Status s = WriteFileAtomic(path, file.content); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status CheckRunFinished(const v1::Run& run) {
  switch (run.state()) {
    case v1::RUN_STATE_SUCCEEDED:
    case v1::RUN_STATE_FAILED:
    case v1::RUN_STATE_CANCELLED:
      return absl::OkStatus();
    default:
      break;
  }
  std::string state = v1::RunState_Name(run.state());
  if (state.rfind("RUN_STATE_", 0) == 0) state = state.substr(10);
  for (char& c : state) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return absl::FailedPreconditionError(absl::StrCat(
      "RUN: run ", run.id(), " is ", state, ", not finished: export it once it has finished"));
}

std::map<std::string, std::string> ArmParams(const v1::RunSpec& spec, const std::string& arm) {
  std::map<std::string, std::string> params;
  if (const catalogue::WorkloadSchema* workload = catalogue::FindWorkload(spec.benchmark())) {
    for (const catalogue::ParamSpec& p : workload->Schema()) params[p.name] = p.default_value;
  }
  for (const auto& [name, value] : spec.params()) params[name] = value;
  for (const v1::ArmSpec& a : spec.arms()) {
    if (a.name() != arm) continue;
    for (const auto& [name, value] : a.params()) params[name] = value;
  }
  return params;
}

std::vector<std::string> ExportArmOrder(const ExportRun& run) {
  std::vector<std::string> arms;
  for (const v1::ArmSpec& a : run.run.spec().arms()) arms.push_back(a.name());
  for (const v1::Sample& s : run.samples) {
    if (std::find(arms.begin(), arms.end(), s.arm()) == arms.end()) arms.push_back(s.arm());
  }
  return arms;
}

std::vector<const v1::Sample*> CountedSamples(const ExportRun& run, const std::string& arm) {
  std::vector<const v1::Sample*> out;
  for (const v1::Sample& s : run.samples) {
    if (s.arm() == arm && s.excluded().empty()) out.push_back(&s);
  }
  std::stable_sort(out.begin(), out.end(), [](const v1::Sample* a, const v1::Sample* b) {
    return std::tuple(a->job_id(), a->iteration()) < std::tuple(b->job_id(), b->iteration());
  });
  return out;
}

std::string BootKey(const v1::Sample& sample) {
  return absl::StrCat(sample.host(), "/", sample.agent_id(), "/", sample.boot_id());
}

}  // namespace tlbfleet::report
