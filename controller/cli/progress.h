#pragma once
// Progress display for `tlbfleet wait`, written to stderr.

#include <ostream>
#include <string>

#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::cli {

// "run 7: 5/12 jobs done, 1 running", with ", N failed" / ", N cancelled" appended when
// non-zero and "queued" instead of the counts while the run has no jobs yet; an adaptive run
// with stop: verdict adds "; rows: 3/8 decided, 5 measuring" (Run.adaptive_rows).
std::string ProgressText(const tlbfleet::v1::Run& run);

// On a terminal: one line rewritten in place ("\r" + clear to end of line). Otherwise: a new
// line each time the text changes, so logs of CI jobs stay short. Not thread-safe.
class ProgressReporter {
 public:
  // `out` must outlive the reporter.
  ProgressReporter(std::ostream& out, bool is_tty);

  void Update(const tlbfleet::v1::Run& run);
  // A one-off message (e.g. "controller unreachable, retrying"), shown like an update.
  void Note(const std::string& text);
  // Ends the in-place line on a terminal so later output starts on a fresh line.
  void Finish();

 private:
  void Show(const std::string& text);

  std::ostream& out_;
  const bool is_tty_;
  std::string last_;
  bool line_open_ = false;  // a terminal line without its '\n' yet
};

}  // namespace tlbfleet::cli
