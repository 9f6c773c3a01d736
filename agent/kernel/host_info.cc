#include "agent/kernel/host_info.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/kernel/ceiling.h"
#include "agent/kernel/flush_profile.h"
#include "agent/kernel/microarch.h"
#include "agent/kernel/topology.h"
#include "common/files.h"
#include "common/version.h"

namespace tlbfleet::agent {
namespace {

bool ParseUint(const std::string& s, uint32_t* out) { return absl::SimpleAtoi(s, out); }

}  // namespace

absl::StatusOr<CpuInfoText> ParseCpuInfo(std::string_view text) {
  CpuInfoText out;
  bool have_vendor = false, have_family = false, have_model = false;
  // Entries are "key<tabs>: value" lines; processors are separated by blank lines. Only the
  // first processor's identity is kept (mixed-CPU hosts are not a thing on x86 sockets).
  for (absl::string_view line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    std::string key = Trim(std::string_view(line.data(), colon));
    std::string value = Trim(std::string_view(line.data() + colon + 1, line.size() - colon - 1));
    if (key == "processor") {
      ++out.logical_cpus;
      continue;
    }
    if (out.logical_cpus > 1) continue;
    if (key == "vendor_id") {
      out.cpu.set_vendor(value);
      have_vendor = true;
    } else if (key == "cpu family") {
      uint32_t v = 0;
      have_family = ParseUint(value, &v);
      out.cpu.set_family(v);
    } else if (key == "model") {
      uint32_t v = 0;
      have_model = ParseUint(value, &v);
      out.cpu.set_model(v);
    } else if (key == "stepping") {
      uint32_t v = 0;
      if (ParseUint(value, &v)) out.cpu.set_stepping(v);
    } else if (key == "model name") {
      out.cpu.set_model_name(value);
    }
  }
  if (out.logical_cpus == 0) return absl::InvalidArgumentError("cpuinfo: no processor entry");
  if (!have_vendor || !have_family || !have_model) {
    return absl::InvalidArgumentError(
        "cpuinfo: first processor lacks vendor_id, cpu family or model");
  }
  out.cpu.set_microarch(
      MicroarchName(out.cpu.vendor(), out.cpu.family(), out.cpu.model(), out.cpu.stepping()));
  return out;
}

void MergeCpuid(const v1::CpuInfo& c, v1::CpuInfo& cpu) {
  if (c.microarch() != kUnknownMicroarch || cpu.microarch().empty()) {
    cpu.set_microarch(c.microarch());
  }
  cpu.set_dtlb_4k_entries(c.dtlb_4k_entries());
  cpu.set_stlb_4k_entries(c.stlb_4k_entries());
  cpu.set_pcid(c.pcid());
  cpu.set_invpcid(c.invpcid());
  cpu.set_hypervisor(c.hypervisor());
  cpu.set_invlpgb(c.invlpgb());
  cpu.set_from_cpuid(true);
}

std::optional<int64_t> ParseBootTime(std::string_view proc_stat) {
  // Debian's Abseil has its own string_view.
  const absl::string_view text(proc_stat.data(), proc_stat.size());
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, "btime ")) continue;
    int64_t seconds = 0;
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &seconds) && seconds > 0) {
      return seconds;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

absl::StatusOr<v1::HostInfo> CollectHostInfo(const Sysroot& sysroot,
                                             const std::map<std::string, std::string>& labels,
                                             const CpuidSource* cpuid) {
  v1::HostInfo host;
  struct Required {
    const char* path;
    std::string* field;
  };
  const Required required[] = {
      {"/proc/sys/kernel/hostname", host.mutable_hostname()},
      {"/proc/sys/kernel/osrelease", host.mutable_kernel_release()},
      {"/proc/cmdline", host.mutable_kernel_cmdline()},
      {"/proc/sys/kernel/random/boot_id", host.mutable_boot_id()},
  };
  for (const Required& r : required) {
    absl::StatusOr<std::string> value = sysroot.ReadTrimmed(r.path);
    if (!value.ok()) return value.status();
    *r.field = *std::move(value);
  }
  absl::StatusOr<std::string> machine_id = sysroot.ReadTrimmed("/etc/machine-id");
  if (machine_id.ok()) host.set_machine_id(*machine_id);

  absl::StatusOr<std::string> cpuinfo = sysroot.Read("/proc/cpuinfo");
  if (!cpuinfo.ok()) return cpuinfo.status();
  absl::StatusOr<CpuInfoText> cpu = ParseCpuInfo(*cpuinfo);
  if (!cpu.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(sysroot.Path("/proc/cpuinfo"), ": ", cpu.status().message()));
  }
  *host.mutable_cpu() = cpu->cpu;
  host.set_logical_cpus(cpu->logical_cpus);
  // Listed only by kernels that know the instruction (6.15+) and have not disabled it.
  host.mutable_cpu()->set_invlpgb_in_use(CpuinfoHasFlag(*cpuinfo, "invlpgb"));
  if (cpuid != nullptr) {
    if (std::optional<v1::CpuInfo> decoded = DecodeCpuid(*cpuid)) {
      MergeCpuid(*decoded, *host.mutable_cpu());
    }
  }
  if (absl::StatusOr<std::string> stat = sysroot.Read("/proc/stat"); stat.ok()) {
    if (std::optional<int64_t> btime = ParseBootTime(*stat)) host.set_boot_time_unix(*btime);
  }
  FillCpuTopology(sysroot, &host);
  *host.mutable_ceiling() = ProbeCeiling(sysroot);
  for (const auto& [key, value] : labels) (*host.mutable_labels())[key] = value;
  host.set_agent_version(kVersion);
  return host;
}

}  // namespace tlbfleet::agent
