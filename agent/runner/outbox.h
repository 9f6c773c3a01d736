#pragma once
// The outbox: every finished job's result (its samples and its JobComplete) from the moment
// the job ends until the controller acknowledges or rejects its completion, and the queue of
// those still to be sent on the current stream.
//
// A result goes to the spool (spool.h) before it is queued, so it survives a crash; if that
// write fails (disk full) the result is kept in memory instead: still sent, lost on a crash,
// logged as an error. After each Welcome every result held is queued again, a replay the
// controller's ingest absorbs (it is idempotent on (lease_id, seq)). A CompletionAck, or a
// rejection of the samples or of the completion, drops the result from spool, memory and
// queue.
//
// Who calls what: the job thread Keep()s and Queue()s results (agent.cc), the stream's reader
// passes acks and requeues everything on Welcome, its sender pops results (connection.h), the
// reboot flow waits for the backlog to empty (reboot_flow.h).
//
// Thread-safe. The outbox's lock is a leaf: the change listener runs without it.

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "agent/runner/spool.h"
#include "tlbfleet/v1/agent.pb.h"

namespace tlbfleet::agent {

class Outbox {
 public:
  explicit Outbox(Spool spool) : spool_(std::move(spool)) {}
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  // Called (without the outbox's lock) after the queue gains a lease: the stream's sender
  // waits on it. Set once, before other threads use the outbox.
  void set_on_queued(std::function<void()> on_queued) { on_queued_ = std::move(on_queued); }

  // Holds `record` until it is acknowledged: in the spool, or in memory when the spool
  // cannot be written (logged). Does not queue it: the caller Queue()s it in the same step
  // as its own bookkeeping (the agent marks the job done), so the controller never hears of
  // a completion before the agent is idle.
  void Keep(const v1::SpooledJob& record);
  // Queues a lease already Keep()'d for sending.
  void Queue(const std::string& lease_id);
  // A repeated assignment of a finished lease: queues its result again. False when the
  // outbox holds no result for it.
  bool Requeue(const std::string& lease_id);
  // On a new stream's Welcome: the queue becomes every lease held, in lease id order.
  // Returns how many.
  size_t QueueAllForResend();

  bool HasQueued() const;
  // Takes the next queued lease and returns its result; nullopt when the queue was empty or
  // the result is gone (acked meanwhile) or unreadable (logged). Reads the spool: call it
  // without holding other locks.
  std::optional<v1::SpooledJob> PopNext();

  // Every result held, as Hello.spooled summarises it.
  std::vector<v1::SpooledLease> Summaries() const;

  // Drop the lease when the controller rejected its samples (nothing to do for an
  // acceptance: the completion's ack drops it), or acked (or rejected) its completion.
  void OnSampleAck(const v1::SampleAck& ack);
  void OnCompletionAck(const v1::CompletionAck& ack);

  // What is left to deliver. Reads the spool.
  struct Backlog {
    size_t spooled = 0;    // results in the spool
    size_t in_memory = 0;  // results whose spool write failed
    size_t queued = 0;     // leases waiting for the sender
  };
  Backlog Pending() const;
  // The spool's size on disk, without reading it (metrics).
  Spool::Usage Usage() const { return spool_.GetUsage(); }

 private:
  void Drop(const std::string& lease_id, const std::string& why);
  void NotifyQueued() const;

  const Spool spool_;
  std::function<void()> on_queued_;

  mutable absl::Mutex mu_;
  // --- guarded by mu_ ---
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);  // finished leases to (re)send
  // Results whose spool write failed (disk full?): sent from memory, lost on a crash.
  std::map<std::string, v1::SpooledJob> unspooled_ ABSL_GUARDED_BY(mu_);
};

// Keeps each SampleBatch far below gRPC's default 4 MiB message limit.
inline constexpr int kSamplesPerBatch = 1000;

// Writes `record` as the controller expects it: SampleBatches of at most kSamplesPerBatch
// samples, then the JobComplete; with `share_origin` (Welcome.accepts_shared_origin) each
// batch's common provenance goes once into its shared_origin (sample_batch.h). Stops at the
// first failed write and returns false; true (and logs it) once everything is written.
bool WriteRecord(const v1::SpooledJob& record, bool share_origin,
                 const std::function<bool(const v1::AgentMessage&)>& write);

}  // namespace tlbfleet::agent
