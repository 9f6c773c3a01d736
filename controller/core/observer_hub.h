#pragma once
// Delivers the core's notifications to its observers (observer.h) on one thread of its own,
// in the order they were posted, so that the core never waits for an observer and never
// calls one while it holds a lock. Run events are posted by the store's event sink, which
// runs in commit order: observers see them in id order.
//
// The queue is not bounded: an observer that blocks delays only the others (and holds
// memory); observers must stay quick, as observer.h says. Thread-safe.

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "controller/core/observer.h"

namespace tlbfleet::core {

class ObserverHub {
 public:
  ~ObserverHub();

  // Before Start() only.
  void Add(FleetObserver* observer);
  bool empty() const { return observers_.empty(); }

  void Start();
  // Delivers what is queued, then stops the thread.
  void Stop();

  // Queues `call` for every observer. A no-op without observers.
  void Post(std::function<void(FleetObserver&)> call);
  // Queues `task`, which is handed the observers (for work done once for all of them, such
  // as loading a run).
  void PostTask(std::function<void(const std::vector<FleetObserver*>&)> task);

  // Delivers what is queued on the caller's thread (tests without Start()).
  void DeliverPendingForTest();

 private:
  using Task = std::function<void()>;
  void Loop();
  void Deliver(std::deque<Task>& tasks);

  std::vector<FleetObserver*> observers_;  // fixed once started

  absl::Mutex mu_;
  std::deque<Task> queue_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace tlbfleet::core
