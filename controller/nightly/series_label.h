#pragma once
// How a series is named where one string must do: the `series` label of the controller's
// tlbfleet_nightly_regressions_open gauge, alert texts. Header-only so that tests and tools
// name series the same way without linking the nightly unit.

#include <string>

#include "tlbfleet/v1/nightly.pb.h"

namespace tlbfleet::nightly {

// "ebizzy/Zen 3 pti-on/ceiling=33/threads=4/records_per_sec": the key's non-empty parts
// (benchmark, host class = microarchitecture and boot entry, configuration, sweep value,
// metric) joined by '/'.
inline std::string SeriesLabel(const v1::SeriesKey& key) {
  std::string host_class = key.microarch();
  if (!key.boot_entry().empty()) {
    host_class = host_class.empty() ? key.boot_entry() : host_class + " " + key.boot_entry();
  }
  std::string label;
  for (const std::string& part :
       {key.benchmark(), host_class, key.config(), key.param(), key.metric()}) {
    if (part.empty()) continue;
    if (!label.empty()) label += '/';
    label += part;
  }
  return label;
}

}  // namespace tlbfleet::nightly
