#pragma once
// A bisection's report, in the manner of the kernel test robot's mails: the headline
// ("-12.3% regression of ebizzy.records_per_sec (threads=4) between A and B; first bad: X"),
// the last good vs first bad table, and every step's comparison, so that a person can re-check
// each decision from the numbers behind it.

#include <string>

#include "tlbfleet/v1/nightly.pb.h"

namespace tlbfleet::bisect {

std::string RenderReport(const v1::BisectState& state);

}  // namespace tlbfleet::bisect
