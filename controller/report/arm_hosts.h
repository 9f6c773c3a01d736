#pragma once
// Which machines each arm's compared samples came from, and which samples were left out and
// why, for every format of `compare` (a slot is one machine; a lost host's slot measured
// again elsewhere, or a boot cut short and measured again, keeps its samples apart:
// Sample.excluded). Pure functions over samples.

#include <string>
#include <vector>

#include "controller/report/comparison.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::report {

// Fills comparison->hosts and comparison->excluded from the aggregate samples (series ""),
// in comparison->arms order then by hostname and agent id, and each ArmResult's `hosts` and
// `excluded` text (JSON and CSV).
void AttachArmHosts(const std::vector<v1::Sample>& samples, Comparison* comparison);

// "hosts per arm: base vm1 (agent 0d60fd02, machine 4c4c4544) 40 samples, 4 boots; …\n" and
// a "left out: …" line per excluded group; "" when the comparison knows no hosts. At most
// `max_hosts_per_arm` hosts are named per arm ("… and 12 more").
std::string RenderArmHostsText(const Comparison& comparison, size_t max_hosts_per_arm = 8);

// The same into the proto Report (Report.hosts, Report.excluded).
void AddArmHostsToReport(const Comparison& comparison, v1::Report* report);

}  // namespace tlbfleet::report
