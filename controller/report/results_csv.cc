#include "controller/report/results_csv.h"

#include <charconv>

#include "absl/strings/str_cat.h"

namespace tlbfleet::report {

std::string FormatDouble(double value) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  if (ec != std::errc()) return absl::StrCat(value);
  return std::string(buf, end);
}

std::string BetterName(tlbfleet::v1::Better better) {
  switch (better) {
    case tlbfleet::v1::BETTER_HIGHER:
      return "higher";
    case tlbfleet::v1::BETTER_LOWER:
      return "lower";
    default:
      return "";
  }
}

std::string ResultsCsvHeader() {
  return "run_id,job_id,arm,param_name,param_value,iteration,metric,series,value,unit,better,"
         "host,boot_id,kernel_release,ceiling_applied,ceiling,ceiling_observed,peer_host,"
         "agent_id,machine_id,slot,excluded,commit,build_id\n";
}

std::string ResultsCsvRow(const tlbfleet::v1::Sample& s) {
  return CsvRow({s.run_id(),
                 std::to_string(s.job_id()),
                 s.arm(),
                 s.param_name(),
                 s.param_value(),
                 std::to_string(s.iteration()),
                 s.metric(),
                 s.series(),
                 FormatDouble(s.value()),
                 s.unit(),
                 BetterName(s.better()),
                 s.host(),
                 s.boot_id(),
                 s.kernel_release(),
                 s.ceiling_applied() ? "true" : "false",
                 s.ceiling_applied() || s.ceiling_observed() ? std::to_string(s.ceiling()) : "",
                 s.ceiling_observed() ? "true" : "false",
                 s.peer_host(),
                 s.agent_id(),
                 s.machine_id(),
                 std::to_string(s.slot()),
                 s.excluded(),
                 s.commit(),
                 s.build_id()});
}

std::string FormatResultsCsv(const tlbfleet::v1::GetResultsResponse& results) {
  std::string out = ResultsCsvHeader();
  for (const auto& sample : results.samples()) out += ResultsCsvRow(sample);
  return out;
}

}  // namespace tlbfleet::report
