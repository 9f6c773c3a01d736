// Checks the `tsan` build itself (tests/tsan/absl_sync_annotations.cc): that TSan sees
// absl::Mutex, CondVar and Notification as synchronisation, and still reports a race.
//
//   tsan_self_test guarded      accesses ordered only by Abseil's primitives: no report
//   tsan_self_test unguarded    two threads write one int with no lock: a report
//   tsan_self_test two-mutexes  two threads write one int, each under a mutex of its own:
//                               a report (the annotations order nothing across mutexes)
//
// CTest runs each mode and matches TSan's output (tests/tsan/CMakeLists.txt).

#include <cstdio>
#include <cstring>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace {

constexpr int kRounds = 2000;

// Plain ints, so that only the synchronisation TSan is told about orders the accesses.
struct Shared {
  absl::Mutex mu;
  absl::CondVar changed;
  int counter = 0;
  int turn = 0;         // ping-pong through CondVar
  bool ready = false;   // Await / LockWhen
  int handed_over = 0;  // written before Notify, read after the wait
};

int Guarded() {
  Shared s;
  absl::Notification handoff;
  absl::Notification polled;
  std::thread other([&] {
    for (int i = 0; i < kRounds; ++i) {
      absl::MutexLock lock(&s.mu);
      ++s.counter;
    }
    for (int i = 0; i < 100; ++i) {  // CondVar ping-pong: odd turns here
      absl::MutexLock lock(&s.mu);
      while (s.turn % 2 == 0) s.changed.Wait(&s.mu);
      ++s.turn;
      s.changed.Signal();
    }
    {
      absl::MutexLock lock(&s.mu);
      s.ready = true;
    }
    s.handed_over = 42;
    handoff.Notify();
    polled.WaitForNotification();
    s.handed_over = 7;  // after the main thread's read, ordered by `polled`
  });
  for (int i = 0; i < kRounds; ++i) {
    absl::MutexLock lock(&s.mu);
    ++s.counter;
  }
  for (int i = 0; i < 100; ++i) {  // even turns here
    absl::MutexLock lock(&s.mu);
    while (s.turn % 2 == 1) s.changed.Wait(&s.mu);
    ++s.turn;
    s.changed.Signal();
  }
  s.mu.LockWhen(absl::Condition(&s.ready));
  s.mu.Unlock();
  while (!handoff.HasBeenNotified()) std::this_thread::yield();
  const int seen = s.handed_over;
  polled.Notify();
  other.join();
  {
    absl::MutexLock lock(&s.mu);
    if (!s.mu.AwaitWithTimeout(absl::Condition(&s.ready), absl::Milliseconds(1))) return 1;
  }
  if (s.counter != 2 * kRounds || s.turn != 200 || seen != 42) {
    std::fprintf(stderr, "wrong values: counter %d turn %d seen %d\n", s.counter, s.turn, seen);
    return 1;
  }
  std::puts("guarded: done");
  return 0;
}

int Unguarded() {
  int value = 0;
  std::thread other([&] {
    for (int i = 0; i < kRounds; ++i) ++value;
  });
  for (int i = 0; i < kRounds; ++i) ++value;
  other.join();
  return value > 0 ? 0 : 1;
}

int TwoMutexes() {
  absl::Mutex first;
  absl::Mutex second;
  int value = 0;
  std::thread other([&] {
    for (int i = 0; i < kRounds; ++i) {
      absl::MutexLock lock(&first);
      ++value;
    }
  });
  for (int i = 0; i < kRounds; ++i) {
    absl::MutexLock lock(&second);
    ++value;
  }
  other.join();
  return value > 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (std::strcmp(mode, "guarded") == 0) return Guarded();
  if (std::strcmp(mode, "unguarded") == 0) return Unguarded();
  if (std::strcmp(mode, "two-mutexes") == 0) return TwoMutexes();
  std::fprintf(stderr, "usage: %s guarded|unguarded|two-mutexes\n", argv[0]);
  return 2;
}
