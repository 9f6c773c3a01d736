#include "agent/kernel/monitor.h"

#include <functional>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/kernel/flush_profile.h"
#include "agent/kernel/perf_monitor.h"
#include "agent/kernel/proc_monitors.h"

namespace tlbfleet::agent {
namespace {

using Factory = std::function<std::unique_ptr<Monitor>(const Sysroot&)>;

const std::map<std::string, Factory>& Factories() {
  static const auto* factories = new std::map<std::string, Factory>{
      {std::string(kFlushProfileMonitor), NewFlushProfileMonitor},
      {std::string(kInterruptsMonitor), NewInterruptsMonitor},
      {std::string(kVmstatMonitor), NewVmstatMonitor},
      {std::string(kPerfMonitor), NewPerfMonitor},
  };
  return *factories;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Monitor>> CreateMonitor(std::string_view name,
                                                       const Sysroot& sysroot) {
  auto it = Factories().find(std::string(name));
  if (it == Factories().end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown monitor '", std::string(name),
                     "' (known: ", absl::StrJoin(MonitorNames(), ", "), ")"));
  }
  return it->second(sysroot);
}

std::vector<std::string> MonitorNames() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : Factories()) names.push_back(name);
  return names;
}

v1::Sample MonitorSample(std::string metric, std::string series, double value, std::string unit,
                         v1::Better better) {
  v1::Sample s;
  s.set_metric(std::move(metric));
  s.set_series(std::move(series));
  s.set_value(value);
  s.set_unit(std::move(unit));
  s.set_better(better);
  return s;
}

}  // namespace tlbfleet::agent
