#include "agent/kernel/proc_monitors.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tlbfleet::agent {

absl::StatusOr<std::vector<uint64_t>> ParseTlbInterrupts(std::string_view text_in) {
  absl::string_view text(text_in.data(), text_in.size());
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  if (lines.empty()) return absl::NotFoundError("/proc/interrupts is empty");
  // The header names one column per online CPU: "CPU0 CPU1 ...".
  size_t cpus = 0;
  for (absl::string_view col : absl::StrSplit(lines[0], ' ', absl::SkipEmpty())) {
    if (absl::StartsWith(col, "CPU")) ++cpus;
  }
  for (absl::string_view line : lines) {
    std::vector<absl::string_view> f =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (f.empty() || f[0] != "TLB:") continue;
    std::vector<uint64_t> counts;
    for (size_t i = 1; i < f.size() && counts.size() < cpus; ++i) {
      uint64_t v = 0;
      if (!absl::SimpleAtoi(f[i], &v)) break;
      counts.push_back(v);
    }
    return counts;
  }
  return absl::NotFoundError("no TLB: row in /proc/interrupts (not x86?)");
}

std::map<std::string, int64_t> ParseVmstat(std::string_view text) {
  std::map<std::string, int64_t> out;
  for (absl::string_view line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    int64_t v = 0;
    if (f.size() == 2 && absl::SimpleAtoi(f[1], &v)) out[std::string(f[0])] = v;
  }
  return out;
}

std::vector<v1::Sample> InterruptDeltaSamples(const std::vector<uint64_t>& before,
                                              const std::vector<uint64_t>& after) {
  constexpr char kMetric[] = "tlb_shootdown_interrupts";
  std::vector<v1::Sample> out;
  uint64_t total = 0;
  for (size_t cpu = 0; cpu < after.size(); ++cpu) {
    // A CPU that came online meanwhile has no "before": count from 0.
    uint64_t b = cpu < before.size() ? before[cpu] : 0;
    uint64_t d = after[cpu] >= b ? after[cpu] - b : 0;
    total += d;
    out.push_back(
        MonitorSample(kMetric, absl::StrCat("cpu", cpu), static_cast<double>(d), "interrupts"));
  }
  out.push_back(MonitorSample(kMetric, "total", static_cast<double>(total), "interrupts"));
  return out;
}

std::vector<v1::Sample> VmstatDeltaSamples(const std::map<std::string, int64_t>& before,
                                           const std::map<std::string, int64_t>& after) {
  std::vector<v1::Sample> out;
  for (const auto& [name, value] : after) {
    auto it = before.find(name);
    int64_t d = value - (it == before.end() ? 0 : it->second);
    if (d == 0 && !absl::StartsWith(name, "nr_tlb_")) continue;
    out.push_back(
        MonitorSample(absl::StrCat("vmstat_", name), "", static_cast<double>(d), "count"));
  }
  return out;
}

namespace {

class InterruptsMonitor : public Monitor {
 public:
  explicit InterruptsMonitor(const Sysroot& sysroot) : sysroot_(sysroot) {}
  std::string_view name() const override { return kInterruptsMonitor; }
  absl::Status Start() override {
    absl::StatusOr<std::vector<uint64_t>> v = Read();
    if (!v.ok()) return v.status();
    before_ = *std::move(v);
    return absl::OkStatus();
  }
  absl::Status Stop(MonitorOutput* out) override {
    absl::StatusOr<std::vector<uint64_t>> after = Read();
    if (!after.ok()) return after.status();
    for (v1::Sample& s : InterruptDeltaSamples(before_, *after)) out->samples.push_back(s);
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<std::vector<uint64_t>> Read() const {
    absl::StatusOr<std::string> text = sysroot_.Read("/proc/interrupts");
    if (!text.ok()) return text.status();
    absl::StatusOr<std::vector<uint64_t>> v = ParseTlbInterrupts(*text);
    if (!v.ok()) {
      return absl::Status(v.status().code(), absl::StrCat("interrupts: ", v.status().message()));
    }
    return v;
  }

  const Sysroot& sysroot_;
  std::vector<uint64_t> before_;
};

class VmstatMonitor : public Monitor {
 public:
  explicit VmstatMonitor(const Sysroot& sysroot) : sysroot_(sysroot) {}
  std::string_view name() const override { return kVmstatMonitor; }
  absl::Status Start() override {
    absl::StatusOr<std::string> text = sysroot_.Read("/proc/vmstat");
    if (!text.ok()) return text.status();
    before_ = ParseVmstat(*text);
    return absl::OkStatus();
  }
  absl::Status Stop(MonitorOutput* out) override {
    absl::StatusOr<std::string> text = sysroot_.Read("/proc/vmstat");
    if (!text.ok()) return text.status();
    for (v1::Sample& s : VmstatDeltaSamples(before_, ParseVmstat(*text))) {
      out->samples.push_back(s);
    }
    return absl::OkStatus();
  }

 private:
  const Sysroot& sysroot_;
  std::map<std::string, int64_t> before_;
};

}  // namespace

std::unique_ptr<Monitor> NewInterruptsMonitor(const Sysroot& sysroot) {
  return std::make_unique<InterruptsMonitor>(sysroot);
}
std::unique_ptr<Monitor> NewVmstatMonitor(const Sysroot& sysroot) {
  return std::make_unique<VmstatMonitor>(sysroot);
}

}  // namespace tlbfleet::agent
