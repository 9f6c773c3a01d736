// Teaches ThreadSanitizer what Debian's Abseil does not tell it: that absl::Mutex, CondVar
// and Notification synchronise threads.
//
// Debian's libabsl_synchronization.so is built without -fsanitize=thread, so the annotations
// Abseil carries for TSan are compiled out, and TSan, which sees no lock or unlock, reports
// every access to state guarded by an absl::Mutex as a race. This shared library, linked
// ahead of Abseil into every program of the `tsan` build, defines the public lock, unlock and
// wait entry points itself. The dynamic linker then binds every caller to these definitions
// (our code, gRPC, Abseil's own calls through its PLT); each annotates the operation with
// TSan's mutex interface (<sanitizer/tsan_interface.h>) and calls Abseil's real function,
// found with dlsym(RTLD_NEXT). Nothing here changes what the lock does; the `tsan` build only.
// docs/reliability.md, "Sanitizers", says what this covers and what it does not.

#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/base/options.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace {

#define TLBFLEET_STRINGIFY_INNER(x) #x
#define TLBFLEET_STRINGIFY(x) TLBFLEET_STRINGIFY_INNER(x)

// The mangled name of absl::<inline namespace>::<rest>, <rest> already mangled ("5Mutex4LockEv"
// for Mutex::Lock()); `qualifiers` is "K" for a const member function.
std::string AbslSymbol(const char* qualifiers, const char* rest) {
  const std::string inline_namespace = TLBFLEET_STRINGIFY(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  return std::string("_ZN") + qualifiers + "4absl" + std::to_string(inline_namespace.size()) +
         inline_namespace + rest;
}

// Abseil's own definition of a function this file replaces. A missing one is fatal at once:
// a silently unannotated lock would bring back the false reports this file exists to stop.
template <typename Function>
Function Real(const char* qualifiers, const char* rest) {
  const std::string name = AbslSymbol(qualifiers, rest);
  void* symbol = dlsym(RTLD_NEXT, name.c_str());
  if (symbol == nullptr) {
    std::fprintf(stderr, "tsan absl annotations: %s not found after this library\n", name.c_str());
    std::abort();
  }
  return reinterpret_cast<Function>(symbol);
}

// Abseil's public functions call one another (LockWhenWithTimeout calls LockWhenWithDeadline,
// a Notification waits with LockWhen), and those calls come back here through Abseil's PLT.
// Only the outermost call on a thread is annotated: the lock it takes is one lock.
thread_local int nesting = 0;

class Outermost {
 public:
  Outermost() : outermost_(nesting++ == 0) {}
  ~Outermost() { --nesting; }
  Outermost(const Outermost&) = delete;
  Outermost& operator=(const Outermost&) = delete;
  explicit operator bool() const { return outermost_; }

 private:
  const bool outermost_;
};

// Looked up once per function, on first use (calls may come before main, from static
// initialisers, so no global constructor is relied on). Declares `real` and `annotate`.
#define TLBFLEET_REAL(type, qualifiers, rest)            \
  static const auto real = Real<type>(qualifiers, rest); \
  const Outermost annotate

using MutexVoid = void (*)(absl::Mutex*);
using MutexBool = bool (*)(absl::Mutex*);
using MutexCondition = void (*)(absl::Mutex*, const absl::Condition&);
using MutexConditionTimeout = bool (*)(absl::Mutex*, const absl::Condition&, absl::Duration);
using MutexConditionDeadline = bool (*)(absl::Mutex*, const absl::Condition&, absl::Time);
using CondVarWait = void (*)(absl::CondVar*, absl::Mutex*);
using CondVarWaitTimeout = bool (*)(absl::CondVar*, absl::Mutex*, absl::Duration);
using CondVarWaitDeadline = bool (*)(absl::CondVar*, absl::Mutex*, absl::Time);
using NotificationVoid = void (*)(absl::Notification*);
using NotificationWait = void (*)(const absl::Notification*);
using NotificationWaitTimeout = bool (*)(const absl::Notification*, absl::Duration);
using NotificationWaitDeadline = bool (*)(const absl::Notification*, absl::Time);

// A wait on a condition (Await, CondVar::Wait) gives the mutex up and takes it back before it
// returns: to TSan, an unlock before the call and a lock after it. The unlock's annotation
// stays open across the real call, as TSan ignores memory accesses between a pre- and a
// post-annotation: Abseil evaluates other threads' conditions (our instrumented lambdas)
// while it releases the mutex inside the wait, in fact under the lock but unseen by TSan.
void AnnotateReleasedForWait(void* mu, unsigned flags) { __tsan_mutex_pre_unlock(mu, flags); }
void AnnotateRetakenAfterWait(void* mu, unsigned flags) {
  __tsan_mutex_post_unlock(mu, flags);
  __tsan_mutex_pre_lock(mu, flags);
  __tsan_mutex_post_lock(mu, flags, 0);
}

// Notification's flag, read by the inline HasBeenNotified() with an acquire load that TSan
// sees in our (instrumented) code: releasing its address in Notify() pairs with that load.
const void* NotifiedFlag(const absl::Notification* notification) {
  static_assert(sizeof(absl::Notification) == sizeof(absl::Mutex) + sizeof(std::atomic<bool>) ||
                    sizeof(absl::Notification) == 2 * sizeof(absl::Mutex),
                "absl::Notification is no longer {Mutex mutex_; atomic<bool> notified_yet_;}");
  return reinterpret_cast<const char*>(notification) + sizeof(absl::Mutex);
}

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

Mutex::~Mutex() {
  TLBFLEET_REAL(MutexVoid, "", "5MutexD2Ev");
  if (annotate) __tsan_mutex_destroy(this, 0);
  real(this);
}

void Mutex::Lock() {
  TLBFLEET_REAL(MutexVoid, "", "5Mutex4LockEv");
  if (annotate) __tsan_mutex_pre_lock(this, 0);
  real(this);
  if (annotate) __tsan_mutex_post_lock(this, 0, 0);
}

void Mutex::Unlock() {
  TLBFLEET_REAL(MutexVoid, "", "5Mutex6UnlockEv");
  if (annotate) __tsan_mutex_pre_unlock(this, 0);
  real(this);
  if (annotate) __tsan_mutex_post_unlock(this, 0);
}

bool Mutex::TryLock() {
  TLBFLEET_REAL(MutexBool, "", "5Mutex7TryLockEv");
  if (annotate) __tsan_mutex_pre_lock(this, __tsan_mutex_try_lock);
  const bool locked = real(this);
  if (annotate)
    __tsan_mutex_post_lock(
        this, locked ? __tsan_mutex_try_lock : __tsan_mutex_try_lock | __tsan_mutex_try_lock_failed,
        0);
  return locked;
}

void Mutex::ReaderLock() {
  TLBFLEET_REAL(MutexVoid, "", "5Mutex10ReaderLockEv");
  if (annotate) __tsan_mutex_pre_lock(this, __tsan_mutex_read_lock);
  real(this);
  if (annotate) __tsan_mutex_post_lock(this, __tsan_mutex_read_lock, 0);
}

void Mutex::ReaderUnlock() {
  TLBFLEET_REAL(MutexVoid, "", "5Mutex12ReaderUnlockEv");
  if (annotate) __tsan_mutex_pre_unlock(this, __tsan_mutex_read_lock);
  real(this);
  if (annotate) __tsan_mutex_post_unlock(this, __tsan_mutex_read_lock);
}

bool Mutex::ReaderTryLock() {
  TLBFLEET_REAL(MutexBool, "", "5Mutex13ReaderTryLockEv");
  if (annotate) __tsan_mutex_pre_lock(this, __tsan_mutex_try_read_lock);
  const bool locked = real(this);
  if (annotate)
    __tsan_mutex_post_lock(
        this, locked ? __tsan_mutex_try_read_lock : __tsan_mutex_try_read_lock_failed, 0);
  return locked;
}

void Mutex::LockWhen(const Condition& cond) {
  TLBFLEET_REAL(MutexCondition, "", "5Mutex8LockWhenERKNS0_9ConditionE");
  if (annotate) __tsan_mutex_pre_lock(this, 0);
  real(this, cond);
  if (annotate) __tsan_mutex_post_lock(this, 0, 0);
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  TLBFLEET_REAL(MutexCondition, "", "5Mutex14ReaderLockWhenERKNS0_9ConditionE");
  if (annotate) __tsan_mutex_pre_lock(this, __tsan_mutex_read_lock);
  real(this, cond);
  if (annotate) __tsan_mutex_post_lock(this, __tsan_mutex_read_lock, 0);
}

// The ...WithTimeout/Deadline forms return with the mutex held whatever the condition.
bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  TLBFLEET_REAL(MutexConditionTimeout, "",
                "5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  if (annotate) __tsan_mutex_pre_lock(this, 0);
  const bool met = real(this, cond, timeout);
  if (annotate) __tsan_mutex_post_lock(this, 0, 0);
  return met;
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  TLBFLEET_REAL(MutexConditionDeadline, "",
                "5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  if (annotate) __tsan_mutex_pre_lock(this, 0);
  const bool met = real(this, cond, deadline);
  if (annotate) __tsan_mutex_post_lock(this, 0, 0);
  return met;
}

bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond, Duration timeout) {
  TLBFLEET_REAL(MutexConditionTimeout, "",
                "5Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  if (annotate) __tsan_mutex_pre_lock(this, __tsan_mutex_read_lock);
  const bool met = real(this, cond, timeout);
  if (annotate) __tsan_mutex_post_lock(this, __tsan_mutex_read_lock, 0);
  return met;
}

bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, Time deadline) {
  TLBFLEET_REAL(MutexConditionDeadline, "",
                "5Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  if (annotate) __tsan_mutex_pre_lock(this, __tsan_mutex_read_lock);
  const bool met = real(this, cond, deadline);
  if (annotate) __tsan_mutex_post_lock(this, __tsan_mutex_read_lock, 0);
  return met;
}

// Await is called with the mutex held (writer or reader: it cannot tell us which, and our code
// awaits only under writer locks).
void Mutex::Await(const Condition& cond) {
  TLBFLEET_REAL(MutexCondition, "", "5Mutex5AwaitERKNS0_9ConditionE");
  if (annotate) AnnotateReleasedForWait(this, 0);
  real(this, cond);
  if (annotate) AnnotateRetakenAfterWait(this, 0);
}

bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  TLBFLEET_REAL(MutexConditionTimeout, "",
                "5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  if (annotate) AnnotateReleasedForWait(this, 0);
  const bool met = real(this, cond, timeout);
  if (annotate) AnnotateRetakenAfterWait(this, 0);
  return met;
}

bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  TLBFLEET_REAL(MutexConditionDeadline, "",
                "5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  if (annotate) AnnotateReleasedForWait(this, 0);
  const bool met = real(this, cond, deadline);
  if (annotate) AnnotateRetakenAfterWait(this, 0);
  return met;
}

void CondVar::Wait(Mutex* mu) {
  TLBFLEET_REAL(CondVarWait, "", "7CondVar4WaitEPNS0_5MutexE");
  if (annotate) AnnotateReleasedForWait(mu, 0);
  real(this, mu);
  if (annotate) AnnotateRetakenAfterWait(mu, 0);
}

bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  TLBFLEET_REAL(CondVarWaitTimeout, "", "7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  if (annotate) AnnotateReleasedForWait(mu, 0);
  const bool timed_out = real(this, mu, timeout);
  if (annotate) AnnotateRetakenAfterWait(mu, 0);
  return timed_out;
}

bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  TLBFLEET_REAL(CondVarWaitDeadline, "", "7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  if (annotate) AnnotateReleasedForWait(mu, 0);
  const bool timed_out = real(this, mu, deadline);
  if (annotate) AnnotateRetakenAfterWait(mu, 0);
  return timed_out;
}

void Notification::Notify() {
  TLBFLEET_REAL(NotificationVoid, "", "12Notification6NotifyEv");
  if (annotate) __tsan_release(this);
  if (annotate) __tsan_release(const_cast<void*>(NotifiedFlag(this)));
  real(this);
}

void Notification::WaitForNotification() const {
  TLBFLEET_REAL(NotificationWait, "K", "12Notification19WaitForNotificationEv");
  real(this);
  if (annotate) __tsan_acquire(const_cast<Notification*>(this));
}

bool Notification::WaitForNotificationWithTimeout(Duration timeout) const {
  TLBFLEET_REAL(NotificationWaitTimeout, "K",
                "12Notification30WaitForNotificationWithTimeoutENS0_8DurationE");
  const bool notified = real(this, timeout);
  if (annotate && notified) __tsan_acquire(const_cast<Notification*>(this));
  return notified;
}

bool Notification::WaitForNotificationWithDeadline(Time deadline) const {
  TLBFLEET_REAL(NotificationWaitDeadline, "K",
                "12Notification31WaitForNotificationWithDeadlineENS0_4TimeE");
  const bool notified = real(this, deadline);
  if (annotate && notified) __tsan_acquire(const_cast<Notification*>(this));
  return notified;
}

ABSL_NAMESPACE_END
}  // namespace absl
