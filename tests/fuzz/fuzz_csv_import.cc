// Fuzzes the CSV import of `tlbfleet compare --csv` (controller/report/comparison.h): any bytes
// must give observations or INVALID_ARGUMENT, never a crash or a hang; every observation
// carries the direction asked for (the header's promise).

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "controller/report/comparison.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto observations =
      tlbfleet::report::ParseObservationsCsv(text, tlbfleet::stats::Direction::kLowerIsBetter);
  if (!observations.ok()) {
    if (!absl::IsInvalidArgument(observations.status())) std::abort();
    return 0;
  }
  for (const tlbfleet::report::Observation& o : *observations) {
    if (o.direction != tlbfleet::stats::Direction::kLowerIsBetter) std::abort();
  }
  return 0;
}
