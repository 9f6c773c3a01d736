#include "controller/scheduler/host_fit.h"

#include <fnmatch.h>

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/scheduler/boot_plan.h"
#include "controller/scheduler/run_spec.h"

namespace tlbfleet::scheduler {

HostFit FitHost(const v1::RunSpec& spec, const v1::HostInfo& host, std::string* why) {
  auto fail = [&](std::string reason, HostFit fit = HostFit::kSelectorMismatch) {
    if (why != nullptr) *why = std::move(reason);
    return fit;
  };
  const v1::HostSelector& sel = spec.hosts();
  for (const auto& [key, value] : sel.labels()) {
    auto it = host.labels().find(key);
    if (it == host.labels().end() || it->second != value) {
      return fail(absl::StrCat("label ", key, "=", value, " not set"));
    }
  }
  if (!sel.microarch().empty()) {
    std::string have = absl::AsciiStrToLower(host.cpu().microarch());
    bool any = std::any_of(sel.microarch().begin(), sel.microarch().end(),
                           [&](const std::string& m) { return absl::AsciiStrToLower(m) == have; });
    if (!any) return fail(absl::StrCat("microarch ", host.cpu().microarch(), " not selected"));
  }
  if (!sel.names().empty() &&
      std::find(sel.names().begin(), sel.names().end(), host.hostname()) == sel.names().end()) {
    return fail(absl::StrCat("hostname ", host.hostname(), " not selected"));
  }
  // What the agent says it can run (older agents say nothing, and take anything).
  if (!host.workloads().empty() && std::find(host.workloads().begin(), host.workloads().end(),
                                             spec.benchmark()) == host.workloads().end()) {
    return fail(absl::StrCat("its agent has no workload ", spec.benchmark()));
  }
  if (!host.monitors().empty()) {
    for (const std::string& monitor : spec.monitors()) {
      if (std::find(host.monitors().begin(), host.monitors().end(), monitor) ==
          host.monitors().end()) {
        return fail(absl::StrCat("its agent has no monitor ", monitor));
      }
    }
  }
  const v1::CpuInfo& cpu = host.cpu();
  if (sel.has_pcid() && sel.pcid() != cpu.pcid()) {
    return fail(cpu.pcid() ? "CPU has PCID, the run selects hosts without"
                           : "CPU lacks PCID (or the agent could not read CPUID)");
  }
  if (sel.has_invpcid() && sel.invpcid() != cpu.invpcid()) {
    return fail(cpu.invpcid() ? "CPU has INVPCID, the run selects hosts without"
                              : "CPU lacks INVPCID (or the agent could not read CPUID)");
  }
  // An agent that could not read the TLB sizes reports 0, which no minimum accepts.
  if (sel.min_dtlb_entries() > 0 && cpu.dtlb_4k_entries() < sel.min_dtlb_entries()) {
    return fail(absl::StrCat("dTLB has ", cpu.dtlb_4k_entries(), " 4K entries, fewer than ",
                             sel.min_dtlb_entries()));
  }
  if (!sel.kernel_release().empty() &&
      ::fnmatch(sel.kernel_release().c_str(), host.kernel_release().c_str(), 0) != 0) {
    return fail(
        absl::StrCat("kernel ", host.kernel_release(), " does not match ", sel.kernel_release()));
  }
  bool needs_ceiling = IsCeilingSweep(spec.sweep()) ||
                       std::any_of(spec.arms().begin(), spec.arms().end(),
                                   [](const v1::ArmSpec& arm) { return !arm.ceiling().empty(); });
  if (needs_ceiling && !host.ceiling().writable()) {
    return fail(
        absl::StrCat("host ", host.hostname(), " cannot write the flush ceiling: ",
                     host.ceiling().reason().empty() ? "unknown reason" : host.ceiling().reason()),
        HostFit::kCeilingUnwritable);
  }
  for (const std::string& entry : BootEntryGroups(spec)) {
    if (entry.empty()) continue;
    if (IsKernelEntry(entry)) {
      // A kernel built from source: the host installs the artifact with its own command.
      if (host.can_install_kernels()) continue;
      return fail(absl::StrCat("host ", host.hostname(),
                               " cannot boot kernels built from source (its agent has no",
                               " --kernel-install-command)"),
                  HostFit::kBootEntryMissing);
    }
    const bool has = std::any_of(host.boot_entries().begin(), host.boot_entries().end(),
                                 [&](const v1::BootEntryInfo& e) { return e.name() == entry; });
    if (has) continue;
    std::vector<std::string> names;
    for (const v1::BootEntryInfo& e : host.boot_entries()) names.push_back(e.name());
    return fail(absl::StrCat("host ", host.hostname(), " has no boot entry ", entry, " (",
                             names.empty() ? std::string("its agent has none")
                                           : absl::StrCat("it has ", absl::StrJoin(names, ", ")),
                             ")"),
                HostFit::kBootEntryMissing);
  }
  if (RunNeedsReboots(spec) && !host.can_reboot()) {
    return fail(absl::StrCat("host ", host.hostname(), " cannot reboot (its agent has no",
                             " --reboot-command) and the run needs more than one boot"),
                HostFit::kCannotReboot);
  }
  return HostFit::kFits;
}

}  // namespace tlbfleet::scheduler
