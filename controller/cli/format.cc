#include "controller/cli/format.h"

#include <time.h>

#include <algorithm>
#include <charconv>
#include <utility>

#include "controller/scheduler/host_lost.h"
#include "fmt/format.h"
#include "google/protobuf/util/json_util.h"

namespace tlbfleet::cli {

using tlbfleet::v1::Run;
namespace v1 = tlbfleet::v1;

TextTable::TextTable(std::vector<std::string> headers)
    : headers_(std::move(headers)), align_(headers_.size(), Align::kLeft) {}

void TextTable::SetAlign(size_t column, Align align) {
  if (column < align_.size()) align_[column] = align;
}

void TextTable::AddRow(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
}

std::string TextTable::Render() const {
  std::vector<size_t> width(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) width[c] = headers_[c].size();
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  auto append_row = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      if (c > 0) line += "  ";
      size_t pad = width[c] - row[c].size();
      if (align_[c] == Align::kRight) line.append(pad, ' ');
      line += row[c];
      if (align_[c] == Align::kLeft) line.append(pad, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line;
    out += '\n';
  };
  append_row(headers_);
  for (const auto& row : rows_) append_row(row);
  return out;
}

std::string FormatUnixTime(int64_t unix_seconds) {
  if (unix_seconds == 0) return "-";
  time_t t = static_cast<time_t>(unix_seconds);
  struct tm tm {};
  if (gmtime_r(&t, &tm) == nullptr) return std::to_string(unix_seconds);
  char buf[32];
  size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return std::string(buf, n);
}

std::string RunStateName(tlbfleet::v1::RunState state) {
  switch (state) {
    case tlbfleet::v1::RUN_STATE_QUEUED:
      return "queued";
    case tlbfleet::v1::RUN_STATE_RUNNING:
      return "running";
    case tlbfleet::v1::RUN_STATE_SUCCEEDED:
      return "succeeded";
    case tlbfleet::v1::RUN_STATE_FAILED:
      return "failed";
    case tlbfleet::v1::RUN_STATE_CANCELLED:
      return "cancelled";
    default:
      return "unspecified";
  }
}

uint32_t JobsDone(const tlbfleet::v1::JobCounts& jobs) {
  return jobs.succeeded() + jobs.failed() + jobs.cancelled();
}

namespace {

std::string OrDash(const std::string& s) { return s.empty() ? "-" : s; }

std::string DescribeArms(const tlbfleet::v1::RunSpec& spec) {
  std::string out;
  for (const auto& arm : spec.arms()) {
    if (!out.empty()) out += ", ";
    out += arm.name();
    if (!arm.ceiling().empty()) out += fmt::format(" (ceiling {})", arm.ceiling());
    if (arm.has_kernel()) {
      out += fmt::format(" (kernel {} {})", arm.kernel().source(), arm.kernel().rev());
    }
  }
  return out;
}

std::string DescribeSweep(const tlbfleet::v1::SweepSpec& sweep) {
  if (sweep.param().empty()) return "";
  if (sweep.values_size() > 0) {
    return fmt::format("{} = {}", sweep.param(), fmt::join(sweep.values(), ","));
  }
  return fmt::format("{} = {} {}..{}", sweep.param(), sweep.policy(), sweep.min(), sweep.max());
}

}  // namespace

// The STATE cell: the state, and what a person must know about its hosts — a slot waiting for
// a silent host, work measured again after a host was lost or a boot cut short.
std::string RunStateCell(const Run& run) {
  std::string cell = RunStateName(run.state());
  std::vector<std::string> notes;
  for (const v1::LostHost& wait : run.waiting_for()) {
    notes.push_back(fmt::format("waiting for {}", wait.hostname().empty()
                                                      ? ShortAgentId(wait.agent_id())
                                                      : wait.hostname()));
  }
  int restarted = 0, repeated = 0;
  for (const v1::AbandonedWork& w : run.abandoned()) (w.boot_index() < 0 ? restarted : repeated)++;
  if (restarted > 0) {
    notes.push_back(fmt::format("{} slot{} restarted", restarted, restarted == 1 ? "" : "s"));
  }
  if (repeated > 0) {
    notes.push_back(fmt::format("{} boot{} redone", repeated, repeated == 1 ? "" : "s"));
  }
  if (!notes.empty()) cell += fmt::format(" ({})", fmt::join(notes, ", "));
  return cell;
}

std::string FormatRunsTable(const tlbfleet::v1::ListRunsResponse& runs) {
  TextTable table({"ID", "NAME", "BENCHMARK", "STATE", "JOBS", "CREATED"});
  table.SetAlign(4, TextTable::Align::kRight);
  for (const Run& run : runs.runs()) {
    table.AddRow({run.id(), OrDash(run.spec().name()), OrDash(run.spec().benchmark()),
                  RunStateCell(run), fmt::format("{}/{}", JobsDone(run.jobs()), run.jobs().total()),
                  FormatUnixTime(run.created_unix())});
  }
  return table.Render();
}

namespace {

// "verdict at level 0.95 (margin 1.00% for same, O'Brien-Fleming spending), 2 rounds so far":
// the sequential options with their defaults (report::SequentialOptionsOf's).
std::string SequentialStopText(const Run& run) {
  const v1::AdaptiveSpec& a = run.spec().adaptive();
  return fmt::format(
      "verdict at level {:g} (margin {:.2f}% for same, {} spending), {} round{} so far",
      a.level() > 0 ? a.level() : 0.95, (a.margin() > 0 ? a.margin() : 0.01) * 100,
      a.spending() == v1::AdaptiveSpec::SPENDING_POCOCK ? "Pocock" : "O'Brien-Fleming",
      run.adaptive_rounds(), run.adaptive_rounds() == 1 ? "" : "s");
}

}  // namespace

std::string AdaptiveRowLabel(const v1::AdaptiveRow& row) {
  std::string label = row.metric();
  if (!row.param_name().empty()) {
    label += fmt::format(" {}={}", row.param_name(), row.param_value());
  } else if (!row.param_value().empty()) {
    label += " " + row.param_value();
  }
  return fmt::format("{}, arm {}", label, row.arm());
}

std::string FormatAdaptiveRows(const Run& run) {
  if (run.adaptive_rows_size() == 0) return "";
  TextTable table({"ROW", "STATE", "VERDICT", "BOOTS B/A", "SAMPLES B/A", "RATIO", "P", "WHY"});
  table.SetAlign(3, TextTable::Align::kRight);
  table.SetAlign(4, TextTable::Align::kRight);
  table.SetAlign(5, TextTable::Align::kRight);
  table.SetAlign(6, TextTable::Align::kRight);
  int measuring = 0, decided = 0;
  for (const v1::AdaptiveRow& row : run.adaptive_rows()) {
    measuring += row.measuring();
    decided += row.decided();
    table.AddRow({AdaptiveRowLabel(row), row.measuring() ? "measuring" : "stopped",
                  row.decided() && !row.verdict().empty() ? row.verdict() : "-",
                  fmt::format("{}/{}", row.base_boots(), row.arm_boots()),
                  fmt::format("{}/{}", row.base_samples(), row.arm_samples()),
                  row.has_ratio() ? fmt::format("{:.4f}", row.ratio()) : "-",
                  row.has_p() ? fmt::format("{:.3g}", row.p()) : "-", OrDash(row.reason())});
  }
  return fmt::format("rows: {} of {} decided, {} measuring (B/A: baseline/arm)\n{}", decided,
                     run.adaptive_rows_size(), measuring, table.Render());
}

std::string FormatRunDetails(const Run& run) {
  const auto& jobs = run.jobs();
  std::vector<std::pair<std::string, std::string>> lines = {
      {"run", run.id()},
      {"name", OrDash(run.spec().name())},
      {"benchmark", OrDash(run.spec().benchmark())},
      {"state", RunStateName(run.state())},
      {"jobs", fmt::format("{}/{} done ({} succeeded, {} failed, {} cancelled), {} running, "
                           "{} queued",
                           JobsDone(jobs), jobs.total(), jobs.succeeded(), jobs.failed(),
                           jobs.cancelled(), jobs.running(), jobs.queued())},
      {"samples", std::to_string(run.samples())},
  };
  std::string arms = DescribeArms(run.spec());
  if (!arms.empty()) lines.emplace_back("arms", arms);
  std::string sweep = DescribeSweep(run.spec().sweep());
  if (!sweep.empty()) lines.emplace_back("sweep", sweep);
  // The plan so far (an adaptive run grows it), falling back to the spec for runs stored
  // before the controller recorded it.
  const uint32_t iterations =
      run.iterations_per_boot() > 0 ? run.iterations_per_boot() : run.spec().iterations();
  const v1::AdaptiveSpec& adaptive = run.spec().adaptive();
  if (iterations > 0) {
    std::string text = std::to_string(iterations);
    if (adaptive.iterations().max() > 0) {
      text += fmt::format(" (adaptive {}..{})", adaptive.iterations().min(),
                          adaptive.iterations().max());
    }
    lines.emplace_back("iterations", text);
  }
  const uint32_t boots = std::max(run.boots(), run.spec().boots());
  if (boots > 1 || adaptive.boots().max() > 0) {
    std::string text = std::to_string(std::max<uint32_t>(boots, 1));
    if (adaptive.boots().max() > 0) {
      text += fmt::format(" (adaptive {}..{})", adaptive.boots().min(), adaptive.boots().max());
    }
    lines.emplace_back("boots", text);
  }
  if (adaptive.stop() == v1::AdaptiveSpec::STOP_VERDICT) {
    lines.emplace_back("stop", SequentialStopText(run));
  } else if (adaptive.target_ci() > 0) {
    lines.emplace_back("target", fmt::format("ratio CI half-width {:.2f}%, {} round{} so far",
                                             adaptive.target_ci() * 100, run.adaptive_rounds(),
                                             run.adaptive_rounds() == 1 ? "" : "s"));
  }
  if (!run.on_host_lost().action().empty()) {
    const v1::HostLostPolicy& policy = run.on_host_lost();
    lines.emplace_back("on host lost",
                       policy.action() == "wait"
                           ? std::string("wait for it")
                           : fmt::format("{} after {}", policy.action(),
                                         scheduler::FormatSeconds(policy.after_seconds())));
  }
  // The build stage: one line per kernel arm, its commit once resolved, and why it failed.
  for (const v1::KernelBuild& b : run.builds()) {
    std::string text = fmt::format("{} {} config {}: {}", b.kernel().source(), b.kernel().rev(),
                                   b.kernel().config(), b.state());
    if (!b.commit().empty()) {
      text += fmt::format(", commit {} \"{}\"", b.commit().substr(0, 12), b.subject());
    }
    if (!b.builder().empty()) text += fmt::format(", builder {}", b.builder());
    if (!b.build_id().empty()) {
      text += fmt::format(", build {} ({}{})", b.build_id().substr(0, 16), b.kernel_release(),
                          b.reused() ? ", built before" : "");
    }
    if (!b.reason().empty() && b.state() != "succeeded") text += fmt::format(": {}", b.reason());
    text += fmt::format("; log: {} lines (tlbfleet build-log {})", b.log_lines(), b.task_id());
    lines.emplace_back(fmt::format("kernel {}", b.arm()), text);
  }
  for (const v1::LostHost& wait : run.waiting_for()) {
    lines.emplace_back(fmt::format("slot {}", wait.slot()), wait.message());
  }
  for (const v1::AbandonedWork& w : run.abandoned()) {
    lines.emplace_back("measured again", fmt::format("{} ({} jobs, {} samples kept, left out of "
                                                     "comparisons)",
                                                     w.reason(), w.jobs(), w.samples()));
  }
  lines.emplace_back("created", FormatUnixTime(run.created_unix()));
  lines.emplace_back("finished", FormatUnixTime(run.finished_unix()));
  if (!run.error().empty()) lines.emplace_back("error", run.error());
  if (!run.stop_reason().empty()) {
    const bool finished = run.state() == v1::RUN_STATE_SUCCEEDED ||
                          run.state() == v1::RUN_STATE_FAILED ||
                          run.state() == v1::RUN_STATE_CANCELLED;
    lines.emplace_back(finished ? "stopped" : "last decision", run.stop_reason());
  }

  size_t width = 0;
  for (const auto& line : lines) width = std::max(width, line.first.size());
  std::string out;
  for (const auto& [key, value] : lines) {
    out += fmt::format("{:<{}}{}\n", key + ":", width + 2, value);
  }
  if (run.adaptive_rows_size() > 0) out += "\n" + FormatAdaptiveRows(run);
  return out;
}

std::string CeilingCell(const tlbfleet::v1::CeilingInfo& ceiling) {
  if (!ceiling.writable()) {
    std::string reason = ceiling.reason();
    if (reason.empty() && !ceiling.lockdown().empty() && ceiling.lockdown() != "none") {
      reason = fmt::format("kernel lockdown ({})", ceiling.lockdown());
    }
    if (reason.empty() && !ceiling.readable() && !ceiling.has_value()) return "-";
    return reason.empty() ? "locked" : fmt::format("locked: {}", reason);
  }
  return ceiling.has_value() ? std::to_string(ceiling.value()) : "?";
}

std::string ShortAgentId(const std::string& agent_id) { return agent_id.substr(0, 8); }

namespace {

// A degraded host's CEILING cell: its current value, flagged; the reason has its own column.
std::string DegradedOr(const tlbfleet::v1::HostInfo& info, std::string cell) {
  if (!info.ceiling_degraded()) return cell;
  return info.ceiling().has_value() ? fmt::format("{} DEGRADED", info.ceiling().value())
                                    : "DEGRADED";
}

}  // namespace

namespace {

// "yes" / "no", and whether the host is on its way through a reboot the controller asked for
// (away, or still on the boot it was asked to leave): such a host is not lost.
std::string ConnectedCell(const tlbfleet::v1::Host& host) {
  std::string cell;
  if (!host.rebooting()) {
    cell = host.connected() ? "yes" : "no";
  } else {
    cell = host.connected() ? "yes, rebooting" : "rebooting";
  }
  // Silent hosts that runs wait for: the operator's first thing to look at.
  if (host.waited_on_by_size() > 0) {
    std::vector<std::string> runs;
    for (const v1::LostHostRun& r : host.waited_on_by()) runs.push_back(r.run_id());
    cell += fmt::format(", silent: run{} {} wait{}", runs.size() == 1 ? "" : "s",
                        fmt::join(runs, ","), runs.size() == 1 ? "s" : "");
  }
  return cell;
}

}  // namespace

std::string FormatHostsTable(const tlbfleet::v1::ListHostsResponse& hosts) {
  std::vector<std::string> header = {"HOSTNAME", "AGENT",   "MICROARCH", "CPUS",
                                     "KERNEL",   "CEILING", "CONNECTED", "LEASE"};
  // Only fleets that run netperf peers need the column.
  const bool netservers =
      std::any_of(hosts.hosts().begin(), hosts.hosts().end(),
                  [](const tlbfleet::v1::Host& h) { return !h.info().netserver().empty(); });
  // Likewise only fleets with hosts that reboot between boots (--reboot-command).
  const bool reboots =
      std::any_of(hosts.hosts().begin(), hosts.hosts().end(),
                  [](const tlbfleet::v1::Host& h) { return h.info().can_reboot(); });
  // And hosts whose flush ceiling is degraded (a failed restore): they take no ceiling jobs.
  const bool degraded =
      std::any_of(hosts.hosts().begin(), hosts.hosts().end(),
                  [](const tlbfleet::v1::Host& h) { return h.info().ceiling_degraded(); });
  if (reboots) header.push_back("REBOOTS");
  if (netservers) header.push_back("NETSERVER");
  if (degraded) header.push_back("DEGRADED");
  // And only fleets whose agents have boot entries (--boot-entries): the entry of this boot.
  const bool entries =
      std::any_of(hosts.hosts().begin(), hosts.hosts().end(),
                  [](const tlbfleet::v1::Host& h) { return h.info().boot_entries_size() > 0; });
  if (entries) header.push_back("BOOT ENTRY");
  TextTable table(header);
  table.SetAlign(3, TextTable::Align::kRight);
  for (const auto& host : hosts.hosts()) {
    const auto& info = host.info();
    std::vector<std::string> row = {OrDash(info.hostname()),
                                    OrDash(ShortAgentId(host.agent_id())),
                                    OrDash(info.cpu().microarch()),
                                    std::to_string(info.logical_cpus()),
                                    OrDash(info.kernel_release()),
                                    DegradedOr(info, CeilingCell(info.ceiling())),
                                    ConnectedCell(host),
                                    OrDash(host.current_lease())};
    if (reboots) row.push_back(info.can_reboot() ? "yes" : "no");
    if (netservers) row.push_back(OrDash(info.netserver()));
    if (degraded) row.push_back(OrDash(info.ceiling_degraded_reason()));
    if (entries) {
      row.push_back(info.boot_entry_error().empty() ? OrDash(info.boot_entry())
                                                    : "none (" + info.boot_entry_error() + ")");
    }
    table.AddRow(row);
  }
  std::string out = table.Render();
  if (!entries) return out;
  // What each entry is expected to boot: what a run's `boot_entry` may name on that host.
  out += "\nboot entries:\n";
  for (const auto& host : hosts.hosts()) {
    for (const auto& e : host.info().boot_entries()) {
      std::string expect = e.release().empty() ? "" : "release " + e.release();
      for (const std::string& word : e.cmdline()) {
        expect += (expect.empty() ? "cmdline " : ", cmdline ") + word;
      }
      out += fmt::format("  {}  {}{}  {}\n", OrDash(host.info().hostname()), e.name(),
                         e.name() == host.info().boot_entry() ? " (this boot)" : "", expect);
    }
  }
  return out;
}

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  auto status = google::protobuf::util::MessageToJsonString(message, &out, options);
  if (!status.ok()) {
    return fmt::format("{{\"error\": \"cannot convert {} to JSON\"}}\n",
                       message.GetDescriptor()->full_name());
  }
  return WithTrailingNewline(std::move(out));
}

std::string WithTrailingNewline(std::string text) {
  while (text.size() >= 2 && text[text.size() - 1] == '\n' && text[text.size() - 2] == '\n') {
    text.pop_back();
  }
  if (!text.empty() && text.back() != '\n') text += '\n';
  return text;
}

}  // namespace tlbfleet::cli
