#include "controller/core/lost_hosts.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "controller/scheduler/host_lost.h"

namespace tlbfleet::core {

std::string HostLabel(const std::string& hostname, const std::string& agent_id,
                      const std::string& machine_id) {
  std::string ids = absl::StrCat("agent ", agent_id.substr(0, 8));
  if (!machine_id.empty()) absl::StrAppend(&ids, ", machine ", machine_id.substr(0, 8));
  if (hostname.empty()) return ids;
  return absl::StrCat(hostname, " (", ids, ")");
}

std::string ClockTime(int64_t unix_ms, int64_t now_ms) {
  const absl::Time t = absl::FromUnixMillis(unix_ms);
  const bool same_day =
      absl::FormatTime("%Y-%m-%d", t, absl::UTCTimeZone()) ==
      absl::FormatTime("%Y-%m-%d", absl::FromUnixMillis(now_ms), absl::UTCTimeZone());
  return absl::FormatTime(same_day ? "%H:%M:%S UTC" : "%Y-%m-%d %H:%M:%S UTC", t,
                          absl::UTCTimeZone());
}

namespace {

std::string Named(const store::ActiveRun::Holder& h) {
  return HostLabel(h.hostname, h.agent_id, h.machine_id);
}

std::string PolicyText(const v1::HostLostPolicy& policy) {
  if (policy.action() == scheduler::kHostLostWait) return "on_host_lost: wait";
  return absl::StrCat("on_host_lost: ", policy.action(), " after ",
                      scheduler::FormatSeconds(policy.after_seconds()));
}

}  // namespace

std::vector<LostHostWatch::Action> LostHostWatch::Check(const std::vector<store::ActiveRun>& runs,
                                                        const PresenceOf& presence,
                                                        int64_t now_ms) {
  std::vector<Action> out;
  std::set<Key> seen;
  for (const store::ActiveRun& run : runs) {
    for (const auto& [slot, holder] : run.holders) {
      // A slot with nothing queued needs nobody: it is done, or its host still holds the lease
      // of its last job (that lease expires into the queue if the host stays silent).
      if (run.slots_with_work.count(slot) == 0) continue;
      const Key key(run.run_id, slot);
      const Presence p = presence(holder);
      auto it = watched_.find(key);
      if (p.present) {
        if (it != watched_.end()) {
          if (it->second.holder.agent_id == holder.agent_id) {
            Action back{Action::Kind::kReturned,    run.run_id,        slot, holder,
                        it->second.silent_since_ms, it->second.policy, ""};
            back.message =
                absl::StrCat(HostLabel(holder.hostname, holder.agent_id), " is back after ",
                             scheduler::FormatSeconds((now_ms - it->second.silent_since_ms) / 1000),
                             " of silence");
            out.push_back(std::move(back));
          }
          watched_.erase(it);
        }
        continue;
      }
      seen.insert(key);
      if (it == watched_.end() || it->second.holder.agent_id != holder.agent_id) {
        Watched w;
        w.holder = holder;
        w.silent_since_ms = p.silent_since_ms;
        w.policy = scheduler::EffectiveHostLostPolicy(run.spec);
        it = watched_.insert_or_assign(key, std::move(w)).first;
        Action silent{Action::Kind::kSilent, run.run_id,        slot, holder,
                      p.silent_since_ms,     it->second.policy, ""};
        silent.message =
            absl::StrCat(Named(holder), " has work in slot ", slot, " and is silent since ",
                         ClockTime(p.silent_since_ms, now_ms), p.rebooting ? " (rebooting)" : "",
                         "; ", PolicyText(it->second.policy));
        out.push_back(std::move(silent));
      }
      Watched& w = it->second;
      w.rebooting = p.rebooting;
      if (w.acted || w.policy.action() == scheduler::kHostLostWait) continue;
      const auto lost = lost_now_.find(holder.agent_id);
      const bool bound_passed =
          now_ms - w.silent_since_ms >= static_cast<int64_t>(w.policy.after_seconds()) * 1000;
      // A host on its way through a reboot is not lost before the reboot's own deadline.
      if (lost == lost_now_.end() && (p.rebooting || !bound_passed)) continue;
      w.acted = true;
      Action act{w.policy.action() == scheduler::kHostLostFail ? Action::Kind::kFail
                                                               : Action::Kind::kRestart,
                 run.run_id,
                 slot,
                 holder,
                 w.silent_since_ms,
                 w.policy,
                 ""};
      act.message =
          absl::StrCat(Named(holder), " was lost: ",
                       lost != lost_now_.end() ? absl::StrCat(lost->second, "; last heard ")
                                               : std::string("silent since "),
                       ClockTime(w.silent_since_ms, now_ms), " (",
                       scheduler::FormatSeconds((now_ms - w.silent_since_ms) / 1000), "; ",
                       PolicyText(w.policy), ")");
      out.push_back(std::move(act));
    }
  }
  // Slots no longer waiting: restarted, done, or their run ended.
  for (auto it = watched_.begin(); it != watched_.end();) {
    it = seen.count(it->first) > 0 ? std::next(it) : watched_.erase(it);
  }
  // A lost mark is spent once no slot of that host waits any more.
  for (auto it = lost_now_.begin(); it != lost_now_.end();) {
    const bool waited_on = std::any_of(watched_.begin(), watched_.end(), [&](const auto& w) {
      return w.second.holder.agent_id == it->first;
    });
    it = waited_on ? std::next(it) : lost_now_.erase(it);
  }
  return out;
}

void LostHostWatch::MarkLost(const std::string& agent_id, const std::string& why) {
  lost_now_[agent_id] = why;
}

void LostHostWatch::ActionFailed(const std::string& run_id, int64_t slot) {
  if (auto it = watched_.find(Key(run_id, slot)); it != watched_.end()) it->second.acted = false;
}

v1::LostHost LostHostWatch::Describe(const Key& key, const Watched& w, int64_t now_ms) const {
  v1::LostHost h;
  h.set_slot(static_cast<uint32_t>(key.second));
  h.set_agent_id(w.holder.agent_id);
  h.set_hostname(w.holder.hostname);
  h.set_machine_id(w.holder.machine_id);
  h.set_silent_since_unix_ms(w.silent_since_ms);
  h.set_action(w.policy.action());
  h.set_after_seconds(w.policy.after_seconds());
  h.set_rebooting(w.rebooting);
  const int64_t silent_s = std::max<int64_t>(0, (now_ms - w.silent_since_ms) / 1000);
  const std::string who = HostLabel(w.holder.hostname, w.holder.agent_id);
  std::string how_long = scheduler::FormatSeconds(silent_s);
  if (w.policy.action() != scheduler::kHostLostWait) {
    absl::StrAppend(&how_long, " of ", scheduler::FormatSeconds(w.policy.after_seconds()),
                    ", then ", w.policy.action());
  }
  h.set_message(w.rebooting ? absl::StrCat("waiting for ", who,
                                           " to come back from a reboot, gone"
                                           " since ",
                                           ClockTime(w.silent_since_ms, now_ms), ", ", how_long)
                            : absl::StrCat("waiting for ", who, ", silent since ",
                                           ClockTime(w.silent_since_ms, now_ms), ", ", how_long));
  return h;
}

std::vector<v1::LostHost> LostHostWatch::WaitingFor(const std::string& run_id,
                                                    int64_t now_ms) const {
  std::vector<v1::LostHost> out;
  for (auto it = watched_.lower_bound(Key(run_id, INT64_MIN));
       it != watched_.end() && it->first.first == run_id; ++it) {
    out.push_back(Describe(it->first, it->second, now_ms));
  }
  return out;
}

std::vector<v1::LostHostRun> LostHostWatch::WaitingOn(const std::string& agent_id,
                                                      int64_t now_ms) const {
  std::vector<v1::LostHostRun> out;
  for (const auto& [key, w] : watched_) {
    if (w.holder.agent_id != agent_id) continue;
    v1::LostHostRun r;
    r.set_run_id(key.first);
    *r.mutable_wait() = Describe(key, w, now_ms);
    out.push_back(std::move(r));
  }
  return out;
}

uint64_t LostHostWatch::RunsWaiting() const {
  std::set<std::string> runs;
  for (const auto& [key, w] : watched_) runs.insert(key.first);
  return runs.size();
}

}  // namespace tlbfleet::core
