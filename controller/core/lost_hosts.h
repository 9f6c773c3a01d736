#pragma once
// The lost-host watch: slots whose host has gone silent, for how long, and what each run's
// on_host_lost policy (scheduler/host_lost.h) does about it. A slot belongs to one agent —
// and the machine it reported — for the whole run, so a silent host is never replaced by
// another one mid-slot: the run waits for it and says so, fails naming it, or restarts the
// slot from its first job (store::Store::RestartSlot).
//
// Pure bookkeeping, like the reboot coordinator: each tick the controller hands it the active
// runs and a way to ask whether a slot's host is there; it answers with what to record and do.
// Whatever the order in which a hung host's stream drops and its lease expires, the slot stays
// bound and its silence is counted from the last message the controller had from it. Not
// thread-safe: the controller's mutex guards it.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "controller/store/store.h"
#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::core {

class LostHostWatch {
 public:
  // How the controller sees a slot's host.
  struct Presence {
    // Connected, on the machine the slot was bound on, and heard from lately.
    bool present = false;
    int64_t silent_since_ms = 0;  // its last message (or the controller's start)
    // Asked to reboot and not back yet, within the reboot's deadlines: not lost (yet).
    bool rebooting = false;
  };
  using PresenceOf = std::function<Presence(const store::ActiveRun::Holder& holder)>;

  struct Action {
    enum class Kind {
      kSilent,    // record: the slot's host stopped talking
      kReturned,  // record: it talks again
      kFail,      // fail the run (on_host_lost: fail)
      kRestart,   // restart the slot (on_host_lost: restart)
    };
    Kind kind = Kind::kSilent;
    std::string run_id;
    int64_t slot = 0;
    store::ActiveRun::Holder holder;
    int64_t silent_since_ms = 0;
    v1::HostLostPolicy policy;
    // Why, for people: "vm1 (agent 0d60fd02, machine 4c4c4544) silent since 01:12:36 UTC
    // (30 min; on_host_lost: restart after 30 min)".
    std::string message;
  };

  // Compares what the runs need with who is there. A bound slot with queued work whose host is
  // not present is watched; it acts once its host has been silent for the policy's bound (or
  // at once after MarkLost), unless the policy is wait or the host is rebooting in time.
  std::vector<Action> Check(const std::vector<store::ActiveRun>& runs, const PresenceOf& presence,
                            int64_t now_ms);

  // The host did not come back from a reboot in time (`why`): its slots are lost now, whatever
  // their bound says; a wait policy still waits.
  void MarkLost(const std::string& agent_id, const std::string& why);
  // Carrying out an action failed (the store could not write it): it is asked for again at
  // the next Check.
  void ActionFailed(const std::string& run_id, int64_t slot);

  // The slots of `run_id` waiting for their host, as the API shows them.
  std::vector<v1::LostHost> WaitingFor(const std::string& run_id, int64_t now_ms) const;
  // The runs waiting for `agent_id`'s host.
  std::vector<v1::LostHostRun> WaitingOn(const std::string& agent_id, int64_t now_ms) const;
  // Runs with at least one slot waiting for its host (a gauge).
  uint64_t RunsWaiting() const;

 private:
  struct Watched {
    store::ActiveRun::Holder holder;
    int64_t silent_since_ms = 0;
    v1::HostLostPolicy policy;
    bool rebooting = false;
    bool acted = false;  // the failure or restart was asked for; waiting for it to show
  };
  using Key = std::pair<std::string, int64_t>;  // (run id, slot)

  v1::LostHost Describe(const Key& key, const Watched& w, int64_t now_ms) const;

  std::map<Key, Watched> watched_;
  std::map<std::string, std::string> lost_now_;  // agent id -> why (MarkLost)
};

// "vm1 (agent 0d60fd02)", or with a machine id "vm1 (agent 0d60fd02, machine 4c4c4544)": a
// host as messages name it (the ids shortened).
std::string HostLabel(const std::string& hostname, const std::string& agent_id,
                      const std::string& machine_id = "");
// "01:12:36 UTC" (with the date when it is not today's).
std::string ClockTime(int64_t unix_ms, int64_t now_ms);

}  // namespace tlbfleet::core
