#include "controller/report/arm_hosts.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tlbfleet::report {
std::string HostWho(const std::string& hostname, const std::string& agent_id,
                    const std::string& machine_id) {
  std::string out = hostname.empty() ? std::string("?") : hostname;
  absl::StrAppend(&out, " (agent ", agent_id.substr(0, 8));
  if (!machine_id.empty()) absl::StrAppend(&out, ", machine ", machine_id.substr(0, 8));
  return absl::StrCat(out, ")");
}

std::string CountOf(uint64_t n, const char* what) {
  return absl::StrCat(n, " ", what, n == 1 ? "" : "s");
}

void AttachArmHosts(const std::vector<v1::Sample>& samples, Comparison* comparison) {
  using Key = std::tuple<std::string, std::string, std::string>;  // arm, hostname, agent
  std::map<Key, Comparison::HostUse> used;
  std::map<Key, std::set<std::string>> boots;
  std::map<std::tuple<std::string, std::string, std::string, std::string>, Comparison::Excluded>
      excluded;  // arm, hostname, agent, reason
  for (const v1::Sample& s : samples) {
    if (!s.series().empty()) continue;
    if (!s.excluded().empty()) {
      Comparison::Excluded& e = excluded[{s.arm(), s.host(), s.agent_id(), s.excluded()}];
      e = {s.arm(), s.agent_id(), s.host(), s.machine_id(), s.excluded(), e.samples + 1};
      continue;
    }
    const Key key{s.arm(), s.host(), s.agent_id()};
    Comparison::HostUse& u = used[key];
    u.arm = s.arm();
    u.agent_id = s.agent_id();
    u.hostname = s.host();
    if (u.machine_id.empty()) u.machine_id = s.machine_id();
    ++u.samples;
    boots[key].insert(s.boot_id());
  }
  auto arm_rank = [&](const std::string& arm) {
    auto it = std::find(comparison->arms.begin(), comparison->arms.end(), arm);
    return static_cast<size_t>(it - comparison->arms.begin());
  };
  comparison->hosts.clear();
  comparison->excluded.clear();
  for (auto& [key, u] : used) {
    if (u.agent_id.empty() && u.hostname.empty()) continue;  // samples that name no host
    u.boots = static_cast<uint32_t>(boots[key].size());
    comparison->hosts.push_back(u);
  }
  for (const auto& [key, e] : excluded) comparison->excluded.push_back(e);
  std::stable_sort(comparison->hosts.begin(), comparison->hosts.end(),
                   [&](const Comparison::HostUse& a, const Comparison::HostUse& b) {
                     return arm_rank(a.arm) < arm_rank(b.arm);
                   });
  std::stable_sort(comparison->excluded.begin(), comparison->excluded.end(),
                   [&](const Comparison::Excluded& a, const Comparison::Excluded& b) {
                     return arm_rank(a.arm) < arm_rank(b.arm);
                   });
  for (GroupResult& group : comparison->groups) {
    for (ArmResult& arm : group.arms) {
      std::vector<std::string> hosts, left_out;
      for (const Comparison::HostUse& u : comparison->hosts) {
        if (u.arm != arm.arm) continue;
        hosts.push_back(absl::StrCat(HostWho(u.hostname, u.agent_id, u.machine_id), " ",
                                     CountOf(u.samples, "sample"), ", ", CountOf(u.boots, "boot")));
      }
      for (const Comparison::Excluded& e : comparison->excluded) {
        if (e.arm != arm.arm) continue;
        left_out.push_back(absl::StrCat(CountOf(e.samples, "sample"), " of ",
                                        HostWho(e.hostname, e.agent_id, e.machine_id), ": ",
                                        e.reason));
      }
      arm.hosts = absl::StrJoin(hosts, "; ");
      arm.excluded = absl::StrJoin(left_out, "; ");
    }
  }
}

void AddArmHostsToReport(const Comparison& comparison, v1::Report* report) {
  for (const Comparison::HostUse& u : comparison.hosts) {
    v1::Report::ArmHost* h = report->add_hosts();
    h->set_arm(u.arm);
    h->set_agent_id(u.agent_id);
    h->set_hostname(u.hostname);
    h->set_machine_id(u.machine_id);
    h->set_samples(u.samples);
    h->set_boots(u.boots);
  }
  // Merged over arms, as the text shows them.
  std::map<std::tuple<std::string, std::string, std::string>, v1::Report::Excluded*> by_key;
  for (const Comparison::Excluded& e : comparison.excluded) {
    const auto key = std::make_tuple(e.hostname, e.agent_id, e.reason);
    auto it = by_key.find(key);
    if (it == by_key.end()) {
      v1::Report::Excluded* x = report->add_excluded();
      x->set_agent_id(e.agent_id);
      x->set_hostname(e.hostname);
      x->set_machine_id(e.machine_id);
      x->set_reason(e.reason);
      it = by_key.emplace(key, x).first;
    }
    it->second->set_samples(it->second->samples() + e.samples);
  }
}

}  // namespace tlbfleet::report
