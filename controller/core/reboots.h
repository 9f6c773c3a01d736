#pragma once
// The reboot coordinator: which hosts the controller asked for a fresh boot, for which run,
// and whether they came back on a new boot. Pure bookkeeping: the controller sends the
// RebootRequest, fails runs, records the events and stores the records (store::RebootRecord,
// so a controller restart does not forget a host on its way down: Restore()). Records survive
// the agent's reconnect (that is how a reboot is recognised). Not thread-safe: the
// controller's mutex guards it.
//
// Two timeouts, both from the request:
//   timeout_ms         the host is still connected on the boot it was asked to leave: the
//                      reboot failed (its command lied, or it is stuck before going down);
//   return_timeout_ms  the host has not come back on another boot: it is lost (a machine that
//                      does not POST, a kernel that does not boot).
// Either fails the run; the samples already taken are kept.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "controller/store/store.h"

namespace tlbfleet::core {

class RebootCoordinator {
 public:
  RebootCoordinator(int64_t timeout_ms, int64_t return_timeout_ms)
      : timeout_ms_(timeout_ms), return_timeout_ms_(return_timeout_ms) {}

  // The records stored before a restart. A record is not pending until its host's stream
  // says so (OnRebooting) or a new request is made.
  void Restore(const std::vector<store::RebootRecord>& records);
  // The record of `agent_id` as it now stands, to store; nullopt: delete it.
  std::optional<store::RebootRecord> Get(const std::string& agent_id) const;

  struct Return {
    enum class Kind {
      kNotAsked,  // no reboot was asked of this host
      kRebooted,  // it came back on another boot: the request is done
      kSameBoot,  // it came back on the boot it was asked to leave
    };
    Kind kind = Kind::kNotAsked;
    std::string run_id;        // the run that asked
    std::string from_boot_id;  // the boot it was asked to leave
  };
  // A host registered on `boot_id`.
  Return OnRegister(const std::string& agent_id, const std::string& boot_id);

  struct Decision {
    bool ask = false;       // send the RebootRequest (the host gets no work meanwhile)
    std::string run_error;  // !ask: fail the run with this error
  };
  // An idle host on `boot_id` has work only on a fresh boot, for `run_id`. One request may
  // be lost to a crash or a restart of the agent; a second one that finds the host on the
  // same boot means the reboot does not work, and the run fails.
  Decision Request(const std::string& agent_id, const std::string& hostname,
                   const std::string& boot_id, const std::string& run_id, int64_t now_ms);

  // Asked (on this stream, or the host says it is rebooting) and not back yet: no work.
  bool Pending(const std::string& agent_id) const;
  // Asked and not seen on a new boot since (connected or not): for gauges, "rebooting".
  bool Asked(const std::string& agent_id) const { return records_.count(agent_id) > 0; }
  std::vector<std::string> AskedAgentIds() const;

  // The host's stream says it is carrying out a reboot: pending again (e.g. after a
  // controller restart). False when no reboot of it is known.
  bool OnRebooting(const std::string& agent_id);

  // The agent said it cannot carry the reboot out (its command failed): the run to fail,
  // or nullopt when no reboot was pending.
  std::optional<std::string> OnCannotReboot(const std::string& agent_id);

  struct Overdue {
    enum class Kind { kStillUp, kNotBack };
    Kind kind = Kind::kStillUp;
    std::string agent_id;
    std::string run_id;
    std::string boot_id;  // the boot it was asked to leave
  };
  // Requests past a deadline; they are forgotten. `boot_of(agent_id)` is the boot the host is
  // connected on, nullopt when it is not connected.
  std::vector<Overdue> TakeOverdue(
      int64_t now_ms, const std::function<std::optional<std::string>(const std::string&)>& boot_of);

  // The host's stream closed: whatever comes next, it is no longer pending on this stream.
  void OnDisconnect(const std::string& agent_id);

  int64_t timeout_ms() const { return timeout_ms_; }
  int64_t return_timeout_ms() const { return return_timeout_ms_; }

 private:
  const int64_t timeout_ms_;
  const int64_t return_timeout_ms_;
  std::map<std::string, store::RebootRecord> records_;  // by agent id
};

}  // namespace tlbfleet::core
