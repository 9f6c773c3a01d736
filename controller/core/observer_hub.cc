#include "controller/core/observer_hub.h"

namespace tlbfleet::core {

ObserverHub::~ObserverHub() { Stop(); }

void ObserverHub::Add(FleetObserver* observer) { observers_.push_back(observer); }

void ObserverHub::Start() {
  {
    absl::MutexLock lock(&mu_);
    if (started_ || observers_.empty()) return;
    started_ = true;
  }
  thread_ = std::thread([this] { Loop(); });
}

void ObserverHub::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void ObserverHub::Post(std::function<void(FleetObserver&)> call) {
  if (observers_.empty()) return;
  absl::MutexLock lock(&mu_);
  queue_.push_back([this, call = std::move(call)] {
    for (FleetObserver* o : observers_) call(*o);
  });
}

void ObserverHub::PostTask(std::function<void(const std::vector<FleetObserver*>&)> task) {
  if (observers_.empty()) return;
  absl::MutexLock lock(&mu_);
  queue_.push_back([this, task = std::move(task)] { task(observers_); });
}

void ObserverHub::Loop() {
  for (;;) {
    std::deque<Task> tasks;
    bool stop = false;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !queue_.empty() || stopping_; };
      mu_.Await(absl::Condition(&ready));
      tasks.swap(queue_);
      stop = stopping_;
    }
    Deliver(tasks);
    if (stop) {
      absl::MutexLock lock(&mu_);
      if (queue_.empty()) return;
    }
  }
}

void ObserverHub::Deliver(std::deque<Task>& tasks) {
  for (Task& task : tasks) task();
}

void ObserverHub::DeliverPendingForTest() {
  std::deque<Task> tasks;
  {
    absl::MutexLock lock(&mu_);
    tasks.swap(queue_);
  }
  Deliver(tasks);
}

}  // namespace tlbfleet::core
