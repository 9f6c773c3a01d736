#include "agent/kernel/flush_profile.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
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

}  // namespace

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
  ++total;
  ++by_reason[reason];
  ++by_pages[PagesBucket(pages)];
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
  out.push_back(MonitorSample("tlb_flush_lost", "", static_cast<double>(lost), kUnit));
  return out;
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
  return removed;
}

class FlushProfileRecorder::Impl {
 public:
  ~Impl() {
    StopReader();
    if (instance_ != nullptr) {
      tracefs_event_disable(instance_, kSystem, kEvent);
      tracefs_trace_off(instance_);
      tracefs_instance_destroy(instance_);
      tracefs_instance_free(instance_);
    }
    if (tep_ != nullptr) tep_free(tep_);
  }

  absl::Status Start() {
    static std::atomic<int> counter{0};
    name_ = absl::StrCat(kTraceInstancePrefix, ::getpid(), "-", counter.fetch_add(1));
    const char* dir = tracefs_tracing_dir();
    if (dir == nullptr) return absl::UnavailableError("tracefs is not mounted and cannot be");
    CleanStaleTraceInstances();
    const char* systems[] = {kSystem, nullptr};
    tep_ = tracefs_local_events_system(dir, systems);
    if (tep_ == nullptr) {
      return absl::UnavailableError(absl::StrCat("cannot load tracepoint formats from ", dir));
    }
    event_ = tep_find_event_by_name(tep_, kSystem, kEvent);
    if (event_ == nullptr) {
      return absl::UnavailableError(absl::StrCat("tracepoint tlb:tlb_flush not found under ", dir,
                                                 " (kernel without it, or not x86)"));
    }
    instance_ = tracefs_instance_create(name_.c_str());
    if (instance_ == nullptr) {
      return absl::UnavailableError(absl::StrCat("cannot create tracefs instance ", name_, " in ",
                                                 dir, ": ", std::strerror(errno)));
    }
    tracefs_instance_set_buffer_size(instance_, kBufferKb, -1);
    if (tracefs_event_enable(instance_, kSystem, kEvent) != 0) {
      return absl::UnavailableError(absl::StrCat("cannot enable tlb:tlb_flush in instance ", name_,
                                                 ": ", std::strerror(errno)));
    }
    tracefs_trace_on(instance_);
    reader_ = std::thread([this] { ReaderLoop(); });
    return absl::OkStatus();
  }

  absl::StatusOr<FlushHistogram> Stop() {
    if (instance_ == nullptr) return absl::FailedPreconditionError("not recording");
    tracefs_event_disable(instance_, kSystem, kEvent);
    StopReader();
    Drain();  // what arrived between the reader's last pass and the disable
    tracefs_trace_off(instance_);
    for (int cpu = 0;; ++cpu) {
      std::string file = absl::StrCat("per_cpu/cpu", cpu, "/stats");
      char* text = tracefs_instance_file_read(instance_, file.c_str(), nullptr);
      if (text == nullptr) break;
      histogram_.lost += LostEventsFromStats(text);
      std::free(text);
    }
    if (!parse_error_.empty()) return absl::InternalError(parse_error_);
    return histogram_;
  }

  const std::string& name() const { return name_; }

 private:
  static int OnRecord(tep_event* event, tep_record* record, int cpu, void* ctx) {
    auto* self = static_cast<Impl*>(ctx);
    if (event == nullptr || event->id != self->event_->id) return 0;
    absl::StatusOr<FlushEvent> e = ParseFlushRecord(event, record);
    if (!e.ok()) {
      self->parse_error_ = std::string(e.status().message());
      return 0;
    }
    self->histogram_.Add(e->pages, e->reason);
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
    if (instance_ != nullptr) tracefs_iterate_stop(instance_);
    if (reader_.joinable()) reader_.join();
  }

  std::string name_;
  tep_handle* tep_ = nullptr;
  tep_event* event_ = nullptr;
  tracefs_instance* instance_ = nullptr;
  std::thread reader_;
  // Written by the reader thread until it is joined, then by Stop().
  FlushHistogram histogram_;
  std::string parse_error_;
  absl::Mutex mu_;
  absl::CondVar cv_;
  bool stop_ = false;  // guarded by mu_
};

FlushProfileRecorder::FlushProfileRecorder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FlushProfileRecorder::~FlushProfileRecorder() = default;

absl::StatusOr<std::unique_ptr<FlushProfileRecorder>> FlushProfileRecorder::Start() {
  auto impl = std::make_unique<Impl>();
  if (absl::Status s = impl->Start(); !s.ok()) return s;
  return std::unique_ptr<FlushProfileRecorder>(new FlushProfileRecorder(std::move(impl)));
}

absl::StatusOr<FlushHistogram> FlushProfileRecorder::Stop() { return impl_->Stop(); }
const std::string& FlushProfileRecorder::instance_name() const { return impl_->name(); }

namespace {

class FlushProfileMonitor : public Monitor {
 public:
  std::string_view name() const override { return kFlushProfileMonitor; }
  absl::Status Start() override {
    absl::StatusOr<std::unique_ptr<FlushProfileRecorder>> r = FlushProfileRecorder::Start();
    if (!r.ok()) {
      return absl::Status(r.status().code(), absl::StrCat("flush_profile: ", r.status().message()));
    }
    recorder_ = *std::move(r);
    return absl::OkStatus();
  }
  absl::Status Stop(MonitorOutput* out) override {
    if (recorder_ == nullptr) return absl::FailedPreconditionError("flush_profile: not started");
    absl::StatusOr<FlushHistogram> h = recorder_->Stop();
    recorder_.reset();  // removes the instance
    if (!h.ok()) return h.status();
    for (v1::Sample& s : h->ToSamples()) out->samples.push_back(std::move(s));
    if (h->lost > 0) {
      out->notes.push_back(
          absl::StrCat("flush_profile: ", h->lost, " tlb_flush events lost (ring buffer full)"));
    }
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<FlushProfileRecorder> recorder_;
};

}  // namespace

std::unique_ptr<Monitor> NewFlushProfileMonitor(const Sysroot&) {
  return std::make_unique<FlushProfileMonitor>();
}

}  // namespace tlbfleet::agent
