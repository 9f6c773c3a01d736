#pragma once
// Microarchitecture names from the CPUID signature that /proc/cpuinfo shows. The names are
// what run specs select on (HostSelector.microarch, case-insensitive), so they are stable
// identifiers: "IvyBridge", "Skylake", "CascadeLake", "Zen 2", ... or "unknown".

#include <cstdint>
#include <string>
#include <string_view>

namespace tlbfleet::agent {

inline constexpr char kUnknownMicroarch[] = "unknown";

// `family` and `model` are the display values (base + extended), as /proc/cpuinfo prints them
// in decimal. `stepping` separates parts that share a model (0x55: Skylake-SP, Cascade Lake,
// Cooper Lake; 0x8E/0x9E: Kaby Lake vs Coffee Lake). Unknown combinations give "unknown".
std::string MicroarchName(std::string_view vendor, uint32_t family, uint32_t model,
                          uint32_t stepping);

}  // namespace tlbfleet::agent
