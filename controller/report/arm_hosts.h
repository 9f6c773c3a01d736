#pragma once
// Which machines each arm's compared samples came from, and which samples were left out and
// why, for every format of `compare` (a slot is one machine; a lost host's slot measured
// again elsewhere, or a boot cut short and measured again, keeps its samples apart:
// Sample.excluded). Pure functions over samples.

#include <cstdint>
#include <string>
#include <vector>

#include "controller/report/comparison.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::report {

// "vm1 (agent 0d60fd02, machine 4c4c4544)": a host as the reports name it (ids shortened).
std::string HostWho(const std::string& hostname, const std::string& agent_id,
                    const std::string& machine_id);
// "1 sample", "3 boots".
std::string CountOf(uint64_t n, const char* what);

// Fills comparison->hosts and comparison->excluded from the aggregate samples (series ""),
// in comparison->arms order then by hostname and agent id, and each ArmResult's `hosts` and
// `excluded` text (JSON and CSV).
void AttachArmHosts(const std::vector<v1::Sample>& samples, Comparison* comparison);

// The same into the proto Report (Report.hosts, Report.excluded; the excluded merged over
// arms, one entry per reason and host), which every format renders (render.h).
void AddArmHostsToReport(const Comparison& comparison, v1::Report* report);

}  // namespace tlbfleet::report
