#include "controller/cli/progress.h"

#include <vector>

#include "controller/cli/format.h"
#include "fmt/format.h"
#include "fmt/ranges.h"

namespace tlbfleet::cli {

namespace v1 = tlbfleet::v1;

namespace {

// "building kernels: base succeeded, tip building on vm-builder (1,204 log lines)" while a
// kernel arm's build is not done; "" once every build has succeeded (or the run has none).
std::string BuildStageText(const tlbfleet::v1::Run& run) {
  bool all_done = true;
  std::vector<std::string> parts;
  for (const v1::KernelBuild& b : run.builds()) {
    if (b.state() != "succeeded") all_done = false;
    std::string part = fmt::format("{} {}", b.arm(), b.state());
    if (b.state() == "building") {
      part += fmt::format(" on {} ({} log lines)", b.builder(), b.log_lines());
    }
    parts.push_back(std::move(part));
  }
  if (all_done) return "";
  return fmt::format("building kernels: {}", fmt::join(parts, ", "));
}

}  // namespace

std::string ProgressText(const tlbfleet::v1::Run& run) {
  const auto& jobs = run.jobs();
  const bool active = run.state() == v1::RUN_STATE_QUEUED || run.state() == v1::RUN_STATE_RUNNING;
  if (const std::string builds = BuildStageText(run); active && !builds.empty()) {
    return fmt::format("run {}: {}", run.id(), builds);
  }
  if (jobs.total() == 0) return fmt::format("run {}: {}", run.id(), RunStateName(run.state()));
  std::string text = fmt::format("run {}: {}/{} jobs done, {} running", run.id(), JobsDone(jobs),
                                 jobs.total(), jobs.running());
  if (jobs.failed() > 0) text += fmt::format(", {} failed", jobs.failed());
  if (jobs.cancelled() > 0) text += fmt::format(", {} cancelled", jobs.cancelled());
  if (run.adaptive_rows_size() > 0) {
    int decided = 0, measuring = 0;
    for (const v1::AdaptiveRow& row : run.adaptive_rows()) {
      decided += row.decided();
      measuring += row.measuring();
    }
    text += fmt::format("; rows: {}/{} decided, {} measuring", decided, run.adaptive_rows_size(),
                        measuring);
  }
  for (const v1::LostHost& wait : run.waiting_for()) text += fmt::format("; {}", wait.message());
  return text;
}

ProgressReporter::ProgressReporter(std::ostream& out, bool is_tty) : out_(out), is_tty_(is_tty) {}

void ProgressReporter::Update(const tlbfleet::v1::Run& run) { Show(ProgressText(run)); }

void ProgressReporter::Note(const std::string& text) { Show(text); }

void ProgressReporter::Show(const std::string& text) {
  if (text == last_) return;
  last_ = text;
  if (is_tty_) {
    out_ << "\r\033[K" << text << std::flush;
    line_open_ = true;
  } else {
    out_ << text << '\n' << std::flush;
  }
}

void ProgressReporter::Finish() {
  if (line_open_) out_ << '\n' << std::flush;
  line_open_ = false;
}

}  // namespace tlbfleet::cli
