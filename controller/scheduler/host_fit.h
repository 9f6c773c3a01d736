#pragma once
// Host matching: whether a host may run jobs of a run, and if not, why.

#include <string>

#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::scheduler {

enum class HostFit {
  kFits,
  kSelectorMismatch,   // labels, microarch, names or CPU/kernel facts exclude the host
  kCeilingUnwritable,  // selected, but an arm sets the ceiling and the host cannot write it
  kCannotReboot,       // selected, but the run has several boots and the host cannot reboot
  kBootEntryMissing,   // selected, but an arm names a boot entry the host's agent does not have
};

// Whether `host` may run jobs of `spec`. When it may not, `why` (if given) says why.
HostFit FitHost(const v1::RunSpec& spec, const v1::HostInfo& host, std::string* why = nullptr);
inline bool HostMatches(const v1::RunSpec& spec, const v1::HostInfo& host) {
  return FitHost(spec, host) == HostFit::kFits;
}

}  // namespace tlbfleet::scheduler
