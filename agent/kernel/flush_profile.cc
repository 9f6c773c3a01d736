#include "agent/kernel/flush_profile.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/kernel/tracefs_api.h"

namespace tlbfleet::agent {
namespace {

constexpr char kSystem[] = "tlb";
constexpr char kEvent[] = "tlb_flush";
// Per CPU. The reader drains every kPollInterval, so this only has to absorb bursts.
constexpr size_t kBufferKb = 2048;
constexpr absl::Duration kPollInterval = absl::Milliseconds(100);

// The initial PID namespace's inode number (the kernel's PROC_PID_INIT_INO).
constexpr char kInitialPidNamespace[] = "pid:[4026531836]";

}  // namespace

absl::Status CheckInitialPidNamespace() {
  char link[64] = {};
  const ssize_t n = ::readlink("/proc/self/ns/pid", link, sizeof link - 1);
  if (n <= 0) return absl::OkStatus();  // no /proc/self/ns: an old kernel, one namespace
  if (std::string(link, static_cast<size_t>(n)) == kInitialPidNamespace) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "the agent runs in a PID namespace of its own (", std::string(link, static_cast<size_t>(n)),
      "), but tracefs filters events by the host's pids, which it cannot see: run the agent in "
      "the host's PID namespace (e.g. hostPID: true) to record a flush profile"));
}

std::string PagesBucket(int64_t pages) {
  if (pages < 0) return "-1";
  if (pages <= 64) return absl::StrCat(pages);
  if (pages <= 128) return "65-128";
  if (pages <= 256) return "129-256";
  if (pages <= 512) return "257-512";
  return ">512";
}

const std::vector<std::string>& PagesBuckets() {
  static const auto* buckets = [] {
    auto* b = new std::vector<std::string>{"-1"};
    for (int i = 0; i <= 64; ++i) b->push_back(absl::StrCat(i));
    for (const char* s : {"65-128", "129-256", "257-512", ">512"}) b->push_back(s);
    return b;
  }();
  return *buckets;
}

void FlushHistogram::Add(int64_t pages, int64_t reason) {
  const std::string bucket = PagesBucket(pages);
  ++total;
  ++by_reason[reason];
  ++by_pages[bucket];
  ++by_reason_pages[{reason, bucket}];
}

std::vector<v1::Sample> FlushHistogram::ToSamples() const {
  constexpr char kMetric[] = "tlb_flush_events";
  constexpr char kUnit[] = "events";
  std::vector<v1::Sample> out;
  out.push_back(MonitorSample(kMetric, "total", static_cast<double>(total), kUnit));
  for (const auto& [reason, n] : by_reason) {
    if (n > 0) {
      out.push_back(MonitorSample(kMetric, absl::StrCat("reason=", reason), n, kUnit));
    }
  }
  for (const std::string& bucket : PagesBuckets()) {
    auto it = by_pages.find(bucket);
    uint64_t n = it == by_pages.end() ? 0 : it->second;
    if (n > 0 || bucket == "-1") {
      out.push_back(
          MonitorSample(kMetric, absl::StrCat("pages=", bucket), static_cast<double>(n), kUnit));
    }
  }
  for (const auto& [reason, n] : by_reason) {
    for (const std::string& bucket : PagesBuckets()) {
      auto it = by_reason_pages.find({reason, bucket});
      if (it == by_reason_pages.end() || it->second == 0) continue;
      out.push_back(MonitorSample(kMetric, absl::StrCat("reason=", reason, ",pages=", bucket),
                                  static_cast<double>(it->second), kUnit));
    }
  }
  out.push_back(MonitorSample("tlb_flush_lost", "", static_cast<double>(lost), kUnit));
  return out;
}

absl::Status CheckLostEvents(const FlushHistogram& h) {
  const double all = static_cast<double>(h.total + h.lost);
  if (h.lost == 0 || static_cast<double>(h.lost) <= kMaxLostFraction * all) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(
      absl::StrFormat("the ring buffer lost %u of %u tlb_flush events (%.1f %%, above the %.0f %% "
                      "limit): the profile would describe only what it kept",
                      h.lost, h.total + h.lost, 100.0 * static_cast<double>(h.lost) / all,
                      100.0 * kMaxLostFraction));
}

std::vector<v1::Sample> FlushProfile::ToSamples() const {
  std::vector<v1::Sample> out = histogram.ToSamples();
  if (cost_unavailable.empty()) {
    for (v1::Sample& s : cost.ToSamples(cost_unit)) out.push_back(std::move(s));
  } else {
    out.push_back(MonitorSample("tlb_flush_cost_unavailable", cost_unavailable, 1, "flag"));
  }
  if (invlpgb_in_use) out.push_back(MonitorSample("tlb_flush_invlpgb", "", 1, "flag"));
  return out;
}

bool CpuinfoHasFlag(std::string_view cpuinfo, std::string_view flag) {
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(cpuinfo.data(), cpuinfo.size()), '\n')) {
    size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    if (absl::StripAsciiWhitespace(line.substr(0, colon)) != "flags") continue;
    for (absl::string_view f : absl::StrSplit(line.substr(colon + 1), ' ', absl::SkipEmpty())) {
      if (f == absl::string_view(flag.data(), flag.size())) return true;
    }
    return false;  // the first processor's line decides
  }
  return false;
}

absl::StatusOr<FlushEvent> ParseFlushRecord(tep_event* event, tep_record* record) {
  unsigned long long pages = 0, reason = 0;
  if (tep_get_field_val(nullptr, event, "pages", record, &pages, 0) != 0 ||
      tep_get_field_val(nullptr, event, "reason", record, &reason, 0) != 0) {
    return absl::InvalidArgumentError("tlb_flush record without pages/reason fields");
  }
  FlushEvent e;
  // `pages` is an unsigned long; TLB_FLUSH_ALL is -1UL. `reason` is an int.
  e.pages = static_cast<int64_t>(pages);
  e.reason = static_cast<int32_t>(static_cast<uint32_t>(reason));
  return e;
}

uint64_t LostEventsFromStats(const std::string& stats_text) {
  uint64_t lost = 0;
  for (absl::string_view line : absl::StrSplit(stats_text, '\n')) {
    size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    absl::string_view key = line.substr(0, colon);
    if (key != "overrun" && key != "commit overrun" && key != "dropped events") continue;
    uint64_t v = 0;
    if (absl::SimpleAtoi(line.substr(colon + 1), &v)) lost += v;
  }
  return lost;
}

int CleanStaleTraceInstances() {
  // An instance is stale when its owner's pid is gone, which only the host's PID namespace can
  // tell: from a namespace of its own, every other agent's live instance would look stale and
  // be destroyed under it (their jobs then failed with ENODEV enabling tlb:tlb_flush).
  if (!CheckInitialPidNamespace().ok()) return 0;
  // Listed by hand: libtracefs 1.6's tracefs_instances(regex) never frees its compiled regex.
  const char* tracing_dir = tracefs_tracing_dir();
  if (tracing_dir == nullptr) return 0;
  std::error_code ec;
  std::filesystem::directory_iterator it(std::string(tracing_dir) + "/instances", ec);
  if (ec) return 0;
  int removed = 0;
  for (const std::filesystem::directory_entry& entry : it) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("tlbfleet-", 0) != 0) continue;
    std::vector<std::string> parts = absl::StrSplit(name, '-');
    int pid = 0;
    if (parts.size() < 2 || !absl::SimpleAtoi(parts[1], &pid) || pid <= 0) continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // its owner still runs
    tracefs_instance* inst = tracefs_instance_alloc(nullptr, name.c_str());
    if (inst == nullptr) continue;
    tracefs_event_disable(inst, nullptr, nullptr);
    if (tracefs_instance_destroy(inst) == 0) ++removed;
    tracefs_instance_free(inst);
  }
  CleanStaleFlushProbes();  // only once no instance of a dead agent uses them
  return removed;
}

class FlushProfileRecorder::Impl {
 public:
  explicit Impl(Options options) : options_(options) {}
  ~Impl() {
    StopReader();
    if (instance_ != nullptr) {
      tracefs_trace_off(instance_);
      tracefs_event_disable(instance_, nullptr, nullptr);
      probes_.reset();  // before the instance: the probes cannot go while it uses them
      tracefs_instance_destroy(instance_);
      tracefs_instance_free(instance_);
    }
    if (tep_ != nullptr) tep_free(tep_);
  }

  absl::Status Start() {
    static std::atomic<int> counter{0};
    const int n = counter.fetch_add(1);
    name_ = absl::StrCat(kTraceInstancePrefix, ::getpid(), "-", n);
    const char* dir = tracefs_tracing_dir();
    if (dir == nullptr) return absl::UnavailableError("tracefs is not mounted and cannot be");
    CleanStaleTraceInstances();
    instance_ = tracefs_instance_create(name_.c_str());
    if (instance_ == nullptr) {
      return absl::UnavailableError(absl::StrCat("cannot create tracefs instance ", name_, " in ",
                                                 dir, ": ", std::strerror(errno)));
    }
    // A new instance records at once; nothing may go in before the workload is followed.
    if (tracefs_trace_off(instance_) != 0) {
      return absl::UnavailableError(
          absl::StrCat("cannot stop tracing in instance ", name_, ": ", std::strerror(errno)));
    }
    if (tracefs_instance_set_buffer_size(instance_, kBufferKb, -1) != 0) {
      return absl::UnavailableError(absl::StrCat("cannot give instance ", name_, " a ", kBufferKb,
                                                 " KiB buffer per CPU: ", std::strerror(errno)));
    }
    if (options_.time_calls) {
      probes_ = FlushCostProbes::Create(instance_, absl::StrCat("tlbfleet_", ::getpid(), "_", n));
    }
    // After the probes exist, so that their formats load too.
    std::vector<const char*> systems = {kSystem};
    if (probes_ != nullptr && probes_->available()) systems.push_back(probes_->group().c_str());
    systems.push_back(nullptr);
    tep_ = tracefs_local_events_system(dir, systems.data());
    if (tep_ == nullptr) {
      return absl::UnavailableError(absl::StrCat("cannot load tracepoint formats from ", dir));
    }
    event_ = tep_find_event_by_name(tep_, kSystem, kEvent);
    if (event_ == nullptr) {
      return absl::UnavailableError(absl::StrCat("tracepoint tlb:tlb_flush not found under ", dir,
                                                 " (kernel without it, or not x86)"));
    }
    if (tracefs_event_enable(instance_, kSystem, kEvent) != 0) {
      return absl::UnavailableError(absl::StrCat("cannot enable tlb:tlb_flush in instance ", name_,
                                                 ": ", std::strerror(errno)));
    }
    if (probes_ != nullptr && probes_->available()) {
      enter_ = tep_find_event_by_name(tep_, probes_->group().c_str(), "flush_enter");
      exit_ = tep_find_event_by_name(tep_, probes_->group().c_str(), "flush_exit");
      if (enter_ == nullptr || exit_ == nullptr) {
        probes_.reset();
        cost_unavailable_ = "the cost probes were created but their formats did not load";
      } else {
        (void)probes_->Enable();  // a failure makes them unavailable, with the reason
      }
    }
    if (probes_ != nullptr && !probes_->available()) cost_unavailable_ = probes_->why();
    if (!options_.time_calls) cost_unavailable_ = "not asked for";
    return absl::OkStatus();
  }

  absl::Status FollowProcess(pid_t pid) {
    if (instance_ == nullptr) return absl::FailedPreconditionError("not started");
    if (absl::Status s = CheckInitialPidNamespace(); !s.ok()) return s;
    if (tracefs_instance_file_write(instance_, "set_event_pid", absl::StrCat(pid).c_str()) <= 0) {
      return absl::UnavailableError(absl::StrCat("cannot restrict instance ", name_, " to pid ",
                                                 pid, " (set_event_pid): ", std::strerror(errno)));
    }
    if (tracefs_instance_file_write(instance_, "options/event-fork", "1") <= 0) {
      return absl::UnavailableError(absl::StrCat("cannot follow the children of pid ", pid,
                                                 " (options/event-fork): ", std::strerror(errno)));
    }
    if (tracefs_trace_on(instance_) != 0) {
      return absl::UnavailableError(
          absl::StrCat("cannot start tracing in instance ", name_, ": ", std::strerror(errno)));
    }
    following_ = true;
    reader_ = std::thread([this] { ReaderLoop(); });
    return absl::OkStatus();
  }

  absl::StatusOr<FlushProfile> Stop() {
    if (instance_ == nullptr) return absl::FailedPreconditionError("not recording");
    if (!following_) return absl::FailedPreconditionError("no process was followed");
    tracefs_trace_off(instance_);
    tracefs_event_disable(instance_, nullptr, nullptr);
    StopReader();
    Drain();  // what arrived between the reader's last pass and the stop
    for (int cpu = 0;; ++cpu) {
      std::string file = absl::StrCat("per_cpu/cpu", cpu, "/stats");
      char* text = tracefs_instance_file_read(instance_, file.c_str(), nullptr);
      if (text == nullptr) break;
      profile_.histogram.lost += LostEventsFromStats(text);
      std::free(text);
    }
    if (!parse_error_.empty()) return absl::InternalError(parse_error_);
    if (probes_ != nullptr && probes_->available()) {
      profile_.cost_unit = probes_->unit();
    } else {
      profile_.cost_unavailable = cost_unavailable_.empty() ? "unknown" : cost_unavailable_;
    }
    return profile_;
  }

  const std::string& name() const { return name_; }

 private:
  static int OnRecord(tep_event* event, tep_record* record, int cpu, void* ctx) {
    auto* self = static_cast<Impl*>(ctx);
    if (event == nullptr) return 0;
    const int tid = tep_data_pid(self->tep_, record);
    if (event->id == self->event_->id) {
      absl::StatusOr<FlushEvent> e = ParseFlushRecord(event, record);
      if (!e.ok()) {
        self->parse_error_ = std::string(e.status().message());
        return 0;
      }
      self->profile_.histogram.Add(e->pages, e->reason);
      self->profile_.cost.TlbFlush(tid, e->pages, e->reason);
    } else if (self->enter_ != nullptr && event->id == self->enter_->id) {
      unsigned long long start = 0, end = 0, shift = 0;
      tep_get_field_val(nullptr, event, "start", record, &start, 0);
      tep_get_field_val(nullptr, event, "end", record, &end, 0);
      tep_get_field_val(nullptr, event, "shift", record, &shift, 0);
      self->profile_.cost.Enter(tid, record->ts,
                                RequestedPages(start, end, static_cast<uint32_t>(shift)));
    } else if (self->exit_ != nullptr && event->id == self->exit_->id) {
      self->profile_.cost.Exit(tid, record->ts);
    }
    return 0;
  }

  void Drain() { tracefs_iterate_raw_events(tep_, instance_, nullptr, 0, &Impl::OnRecord, this); }

  void ReaderLoop() {
    absl::MutexLock lock(&mu_);
    while (!stop_) {
      mu_.Unlock();
      Drain();
      mu_.Lock();
      cv_.WaitWithTimeout(&mu_, kPollInterval);
    }
  }

  void StopReader() {
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
      cv_.SignalAll();
    }
    // No tracefs_iterate_stop(): it ends a pass in the middle of a page that has already been
    // consumed from trace_pipe_raw, and the rest of that page's events would be lost. A pass
    // returns by itself once the buffer is empty.
    if (reader_.joinable()) reader_.join();
  }

  const Options options_;
  std::string name_;
  tep_handle* tep_ = nullptr;
  tep_event* event_ = nullptr;
  tep_event* enter_ = nullptr;
  tep_event* exit_ = nullptr;
  tracefs_instance* instance_ = nullptr;
  std::unique_ptr<FlushCostProbes> probes_;
  std::string cost_unavailable_;
  bool following_ = false;
  std::thread reader_;
  // Written by the reader thread until it is joined, then by Stop().
  FlushProfile profile_;
  std::string parse_error_;
  absl::Mutex mu_;
  absl::CondVar cv_;
  bool stop_ = false;  // guarded by mu_
};

FlushProfileRecorder::FlushProfileRecorder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FlushProfileRecorder::~FlushProfileRecorder() = default;

absl::StatusOr<std::unique_ptr<FlushProfileRecorder>> FlushProfileRecorder::Start(Options options) {
  auto impl = std::make_unique<Impl>(options);
  if (absl::Status s = impl->Start(); !s.ok()) return s;
  return std::unique_ptr<FlushProfileRecorder>(new FlushProfileRecorder(std::move(impl)));
}

absl::Status FlushProfileRecorder::FollowProcess(pid_t pid) { return impl_->FollowProcess(pid); }
absl::StatusOr<FlushProfile> FlushProfileRecorder::Stop() { return impl_->Stop(); }
const std::string& FlushProfileRecorder::instance_name() const { return impl_->name(); }

namespace {

class FlushProfileMonitor : public Monitor {
 public:
  explicit FlushProfileMonitor(const Sysroot& sysroot) : sysroot_(sysroot) {}
  std::string_view name() const override { return kFlushProfileMonitor; }
  absl::Status Start() override {
    absl::StatusOr<std::unique_ptr<FlushProfileRecorder>> r = FlushProfileRecorder::Start();
    if (!r.ok()) {
      return absl::Status(r.status().code(), absl::StrCat("flush_profile: ", r.status().message()));
    }
    recorder_ = *std::move(r);
    return absl::OkStatus();
  }
  void OnChildForked(pid_t pid) override {
    if (recorder_ == nullptr) return;
    follow_error_ = recorder_->FollowProcess(pid);
  }
  absl::Status Stop(MonitorOutput* out) override {
    if (recorder_ == nullptr) return absl::FailedPreconditionError("flush_profile: not started");
    if (!follow_error_.ok()) {
      recorder_.reset();
      return follow_error_;
    }
    absl::StatusOr<FlushProfile> p = recorder_->Stop();
    recorder_.reset();  // removes the instance and the probes
    if (!p.ok()) return p.status();
    absl::StatusOr<std::string> cpuinfo = sysroot_.Read("/proc/cpuinfo");
    p->invlpgb_in_use = cpuinfo.ok() && CpuinfoHasFlag(*cpuinfo, "invlpgb");
    for (v1::Sample& s : p->ToSamples()) out->samples.push_back(std::move(s));
    const FlushHistogram& h = p->histogram;
    if (h.lost > 0) {
      out->notes.push_back(absl::StrCat("flush_profile: ", h.lost, " of ", h.total + h.lost,
                                        " tlb_flush events lost (ring buffer full)"));
    }
    if (p->invlpgb_in_use) {
      out->notes.push_back(
          "flush_profile: this kernel may flush by INVLPGB broadcast (cpuinfo flag invlpgb), "
          "which bypasses the tlb:tlb_flush tracepoint: the counts are incomplete");
    }
    if (!p->cost_unavailable.empty()) {
      out->notes.push_back(absl::StrCat("flush_profile: no cost per flush: ", p->cost_unavailable));
    }
    return CheckLostEvents(h);
  }

 private:
  const Sysroot& sysroot_;
  std::unique_ptr<FlushProfileRecorder> recorder_;
  absl::Status follow_error_;
};

}  // namespace

std::unique_ptr<Monitor> NewFlushProfileMonitor(const Sysroot& sysroot) {
  return std::make_unique<FlushProfileMonitor>(sysroot);
}

}  // namespace tlbfleet::agent
