#include "catalogue/catalogue.h"

#include <algorithm>
#include <memory>

#include "catalogue/workloads/ebizzy.h"
#include "catalogue/workloads/hackbench.h"
#include "catalogue/workloads/netperf.h"
#include "catalogue/workloads/pft.h"
#include "catalogue/workloads/pipetest.h"
#include "catalogue/workloads/tlbflush.h"
#include "catalogue/workloads/usemem.h"
#include "catalogue/workloads/willitscale.h"

namespace tlbfleet::catalogue {
namespace {

// The one list of workloads. A new workload adds its schema (catalogue/workloads/NAME.{h,cc})
// and its line here; the agent's run loop binds to it by name (agent/workloads).
std::vector<std::unique_ptr<WorkloadSchema>>& Owned() {
  static auto* kAll = [] {
    auto* all = new std::vector<std::unique_ptr<WorkloadSchema>>();
    all->push_back(ebizzy::NewSchema());
    all->push_back(hackbench::NewSchema());
    all->push_back(netperf::NewSchema());
    all->push_back(pft::NewSchema());
    all->push_back(pipetest::NewSchema());
    all->push_back(tlbflush::NewSchema());
    all->push_back(usemem::NewSchema());
    all->push_back(willitscale::NewSchema());
    std::sort(all->begin(), all->end(),
              [](const auto& a, const auto& b) { return a->Name() < b->Name(); });
    return all;
  }();
  return *kAll;
}

std::vector<const WorkloadSchema*>& Views() {
  static auto* kAll = [] {
    auto* all = new std::vector<const WorkloadSchema*>();
    for (const auto& w : Owned()) all->push_back(w.get());
    return all;
  }();
  return *kAll;
}

}  // namespace

const std::vector<const WorkloadSchema*>& AllWorkloads() { return Views(); }

void AddWorkloadForTest(std::unique_ptr<WorkloadSchema> workload) {
  Views().push_back(workload.get());
  Owned().push_back(std::move(workload));
}

const WorkloadSchema* FindWorkload(std::string_view name) {
  for (const WorkloadSchema* w : AllWorkloads()) {
    if (w->Name() == name) return w;
  }
  return nullptr;
}

const WorkloadSchema* FindMmtestsWorkload(std::string_view mmtest) {
  for (const WorkloadSchema* w : AllWorkloads()) {
    for (const std::string& name : w->MmtestsNames()) {
      if (name == mmtest) return w;
    }
  }
  return nullptr;
}

std::vector<std::string> WorkloadNames() {
  std::vector<std::string> names;
  for (const WorkloadSchema* w : AllWorkloads()) names.emplace_back(w->Name());
  return names;
}

const std::vector<MonitorInfo>& Monitors() {
  // The one list of monitors: the agent's factories (agent/kernel/monitor.cc) must cover it,
  // run specs are validated against it, the dashboard's form offers it.
  static const auto* kMonitors = new std::vector<MonitorInfo>{
      {"flush_profile",
       "tlb:tlb_flush events of the workload's processes by size and reason, and the cost "
       "of each flush_tlb_mm_range call where the kernel has kprobes"},
      {"interrupts", "TLB shootdown interrupts per CPU (the TLB: row of /proc/interrupts)"},
      {"perf", "dTLB and iTLB load misses, instructions and cycles (perf_event_open)"},
      {"vmstat", "the /proc/vmstat counters that changed (nr_tlb_* always)"},
  };
  return *kMonitors;
}

const MonitorInfo* FindMonitor(std::string_view name) {
  for (const MonitorInfo& m : Monitors()) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

}  // namespace tlbfleet::catalogue
