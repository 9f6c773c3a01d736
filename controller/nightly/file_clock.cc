#include "controller/nightly/file_clock.h"

#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "common/files.h"

namespace tlbfleet::nightly {

absl::Time FileClock::Now() const {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<std::string> text = ReadFile(path_);
  double seconds = 0;
  if (text.ok() && absl::SimpleAtod(Trim(*text), &seconds) && std::isfinite(seconds)) {
    last_ = absl::UnixEpoch() + absl::Seconds(seconds);
  }
  return last_;
}

void FileClock::SleepFor(absl::Duration d) { absl::SleepFor(d); }

}  // namespace tlbfleet::nightly
