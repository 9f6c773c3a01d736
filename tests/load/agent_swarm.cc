// A load generator that speaks the agent protocol (proto/tlbfleet/v1/agent.proto) as many
// agents from one process: one AgentService.Connect stream per agent, spread over a few
// channels, heartbeating at the interval the controller's Welcome asks for and taking tiny
// jobs (each answered at once with --samples-per-job samples and a completion). It can submit
// the runs that make the jobs, and reads the controller's CPU time and RSS from /proc.
//
//   agent_swarm --controller HOST:PORT [--agents 1000] [--seconds 60] [--channels 10]
//               [--runs 0] [--iterations 100] [--samples-per-job 100]
//               [--controller-pid PID] [--report-seconds 10] [--warmup-seconds 10]
//
// Prints one line per report interval and a summary: agents connected, jobs and samples
// acknowledged per second, dispatch latency (an idle heartbeat or completion ack to the next
// assignment) p50/p99 over the whole run and after the warm-up, the controller's CPU (% of
// one core) and RSS. Exit 0, or 1 when a
// stream was rejected or no agent connected. docs/performance.md has the command.

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tlbfleet/v1/agent.grpc.pb.h"
#include "tlbfleet/v1/fleet.grpc.pb.h"

namespace {

using Clock = std::chrono::steady_clock;
using tlbfleet::v1::AgentMessage;
using tlbfleet::v1::ControllerMessage;

struct Options {
  std::string controller;
  int agents = 1000;
  int seconds = 60;
  int channels = 10;
  int runs = 0;
  int iterations = 100;
  int samples_per_job = 100;
  int controller_pid = 0;
  int report_seconds = 10;
  // Reports ending within this many seconds of the start are the warm-up: 1,000 agents
  // connecting and the runs' jobs being created while idle agents wait for work to exist.
  // The summary gives dispatch latency with and without them.
  int warmup_seconds = 10;
};

// Counters shared by every agent; latencies in microseconds, drained at each report.
struct Stats {
  std::atomic<int> connected{0};
  std::atomic<int> rejected{0};
  std::atomic<int64_t> jobs{0};
  std::atomic<int64_t> samples_acked{0};
  std::mutex mu;
  std::vector<int64_t> dispatch_us;
  std::vector<int64_t> all_dispatch_us;
  std::vector<int64_t> steady_dispatch_us;  // after the warm-up
  std::string first_reject;
};

// A Debian kernel's release and a typical command line of its boot (a UUID root, quiet).
constexpr char kKernelRelease[] = "6.1.0-28-amd64";
constexpr char kKernelCmdline[] =
    "BOOT_IMAGE=/boot/vmlinuz-6.1.0-28-amd64 root=UUID=2c9a7f0e-1b6d-4e55-9b7a-3f4c2d1e8a90 ro "
    "quiet";

class SwarmAgent : public grpc::ClientBidiReactor<AgentMessage, ControllerMessage> {
 public:
  SwarmAgent(tlbfleet::v1::AgentService::Stub* stub, int index, const Options& options,
             Stats& stats)
      : index_(index), options_(options), stats_(stats) {
    stub->async()->Connect(&context_, this);
    AgentMessage hello;
    auto* h = hello.mutable_hello();
    h->set_protocol_version(tlbfleet::v1::PROTOCOL_VERSION_1);
    h->set_agent_id("swarm-" + std::to_string(::getpid()) + "-" + std::to_string(index));
    auto* host = h->mutable_host();
    host->set_hostname(Hostname());
    host->set_boot_id(BootId());
    host->set_kernel_release(kKernelRelease);
    host->set_kernel_cmdline(kKernelCmdline);
    host->set_logical_cpus(2);
    host->mutable_ceiling()->set_writable(false);
    host->mutable_ceiling()->set_reason("load generator");
    out_.push_back(std::move(hello));
    writing_ = true;
    StartWrite(&out_.front());
    StartRead(&in_);
    StartCall();
  }

  // Called by the heartbeat thread.
  void MaybeHeartbeat(Clock::time_point now) {
    bool start = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!welcomed_ || done_ || now < next_heartbeat_) return;
      next_heartbeat_ = now + heartbeat_;
      AgentMessage m;
      m.mutable_heartbeat()->set_state(tlbfleet::v1::AGENT_STATE_IDLE);
      start = QueueLocked(std::move(m));
    }
    if (start) StartWrite(&out_.front());
  }
  void Finish() { context_.TryCancel(); }
  bool WaitDone(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return done_cv_.wait_for(lock, timeout, [this] { return done_; });
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;
    Handle(in_);
    StartRead(&in_);
  }
  void OnWriteDone(bool ok) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      writing_ = false;
      if (!ok) return;
      out_.pop_front();
      if (out_.empty()) return;
      writing_ = true;
    }
    // Only this write is in flight, and push_back keeps references: front() stays put.
    StartWrite(&out_.front());
  }
  // Agents are never destroyed (main exits with _Exit), so nothing here races a destructor.
  void OnDone(const grpc::Status& status) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (welcomed_) stats_.connected.fetch_sub(1);
    done_ = true;
    done_cv_.notify_all();
  }

 private:
  const std::string& Hostname() const { return hostname_; }
  const std::string& BootId() const { return boot_id_; }
  // Shaped like /proc/sys/kernel/random/boot_id (36 characters), one per simulated host.
  std::string MakeBootId() const {
    char id[40];
    std::snprintf(id, sizeof id, "%08x-%04x-4%03x-8%03x-%012x", static_cast<unsigned>(::getpid()),
                  static_cast<unsigned>(index_ & 0xffff), static_cast<unsigned>(index_ & 0xfff),
                  static_cast<unsigned>(index_ >> 12 & 0xfff), static_cast<unsigned>(index_));
    return id;
  }

  void Handle(const ControllerMessage& m) {
    bool start = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      start = HandleLocked(m);
    }
    if (start) StartWrite(&out_.front());
  }
  // Whether a write must be started (none was in flight).
  bool HandleLocked(const ControllerMessage& m) {
    bool start = false;
    const auto now = Clock::now();
    if (m.has_welcome()) {
      welcomed_ = true;
      heartbeat_ = std::chrono::seconds(std::max<uint32_t>(1, m.welcome().heartbeat_seconds()));
      share_origin_ = m.welcome().accepts_shared_origin();
      // Spread the heartbeats over the interval.
      next_heartbeat_ = now + heartbeat_ * (index_ % 100) / 100;
      stats_.connected.fetch_add(1);
      AgentMessage idle;
      idle.mutable_heartbeat()->set_state(tlbfleet::v1::AGENT_STATE_IDLE);
      start |= QueueLocked(std::move(idle));
      idle_since_ = now;
    } else if (m.has_reject()) {
      stats_.rejected.fetch_add(1);
      std::lock_guard<std::mutex> s(stats_.mu);
      if (stats_.first_reject.empty()) stats_.first_reject = m.reject().reason();
    } else if (m.has_assignment()) {
      const auto& a = m.assignment();
      {
        std::lock_guard<std::mutex> s(stats_.mu);
        stats_.dispatch_us.push_back(
            std::chrono::duration_cast<std::chrono::microseconds>(now - idle_since_).count());
      }
      AgentMessage batch;
      auto* b = batch.mutable_samples();
      b->set_lease_id(a.lease_id());
      b->set_job_id(a.job_id());
      for (int i = 0; i < options_.samples_per_job; ++i) {
        auto* s = b->add_samples();
        s->set_seq(static_cast<uint64_t>(i));
        s->set_metric("loops_per_sec");
        s->set_series(i == 0 ? "" : "t" + std::to_string(i));
        s->set_value(1000.0 + index_ + i);
        s->set_unit("loops/s");
        s->set_better(tlbfleet::v1::BETTER_HIGHER);
        // Where the sample was taken, as a real agent tags every sample (agent/runner/job.cc)
        // and sends it: once per batch to a controller that accepts that (ShareOrigin in
        // agent/runner/sample_batch.h), else in every sample.
        if (!share_origin_) {
          s->set_host(Hostname());
          s->set_boot_id(BootId());
          s->set_kernel_release(kKernelRelease);
          s->set_kernel_cmdline(kKernelCmdline);
          s->set_microarch("IvyBridge");
        }
      }
      if (share_origin_) {
        auto* origin = b->mutable_shared_origin();
        origin->set_host(Hostname());
        origin->set_boot_id(BootId());
        origin->set_kernel_release(kKernelRelease);
        origin->set_kernel_cmdline(kKernelCmdline);
        origin->set_microarch("IvyBridge");
      }
      start |= QueueLocked(std::move(batch));
      AgentMessage done;
      auto* c = done.mutable_complete();
      c->set_lease_id(a.lease_id());
      c->set_job_id(a.job_id());
      c->set_status(tlbfleet::v1::JOB_STATUS_SUCCEEDED);
      c->set_sample_count(static_cast<uint64_t>(options_.samples_per_job));
      c->set_elapsed_seconds(0.001);
      start |= QueueLocked(std::move(done));
    } else if (m.has_sample_ack()) {
      if (!m.sample_ack().rejected()) {
        stats_.samples_acked.fetch_add(static_cast<int64_t>(m.sample_ack().through_seq()) + 1);
      }
    } else if (m.has_completion_ack()) {
      if (!m.completion_ack().rejected()) stats_.jobs.fetch_add(1);
      idle_since_ = now;
      AgentMessage idle;
      idle.mutable_heartbeat()->set_state(tlbfleet::v1::AGENT_STATE_IDLE);
      start |= QueueLocked(std::move(idle));
    }
    return start;
  }
  // Queues `m`; true when the caller must StartWrite(&out_.front()) after unlocking.
  bool QueueLocked(AgentMessage m) {
    out_.push_back(std::move(m));
    if (writing_) return false;
    writing_ = true;
    return true;
  }

  const int index_;
  bool share_origin_ = false;  // the controller's Welcome.accepts_shared_origin
  const std::string hostname_ = "swarm-" + std::to_string(index_);
  const std::string boot_id_ = MakeBootId();
  const Options& options_;
  Stats& stats_;
  grpc::ClientContext context_;
  ControllerMessage in_;
  std::mutex mu_;
  std::condition_variable done_cv_;
  std::deque<AgentMessage> out_;  // front() is being written while writing_
  bool writing_ = false;
  bool welcomed_ = false;
  bool done_ = false;
  std::chrono::milliseconds heartbeat_{15000};
  Clock::time_point next_heartbeat_;
  Clock::time_point idle_since_ = Clock::now();
};

// utime+stime in clock ticks and RSS in KiB of `pid`, from /proc.
bool ProcessUsage(int pid, int64_t* ticks, int64_t* rss_kib) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream fields(text.substr(close + 2));
  std::string f;
  int64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::stoll(f);
    if (i == 15) stime = std::stoll(f);
  }
  *ticks = utime + stime;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) *rss_kib = std::stoll(line.substr(6));
  }
  return true;
}

int64_t Percentile(std::vector<int64_t> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

bool ParseFlags(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "agent_swarm: %s needs a value\n", flag.c_str());
      return false;
    }
    const std::string value = argv[++i];
    int* target = flag == "--agents"            ? &o->agents
                  : flag == "--seconds"         ? &o->seconds
                  : flag == "--channels"        ? &o->channels
                  : flag == "--runs"            ? &o->runs
                  : flag == "--iterations"      ? &o->iterations
                  : flag == "--samples-per-job" ? &o->samples_per_job
                  : flag == "--controller-pid"  ? &o->controller_pid
                  : flag == "--report-seconds"  ? &o->report_seconds
                  : flag == "--warmup-seconds"  ? &o->warmup_seconds
                                                : nullptr;
    if (flag == "--controller") {
      o->controller = value;
    } else if (target != nullptr) {
      char* end = nullptr;
      const long v = std::strtol(value.c_str(), &end, 10);
      if (*end != '\0' || v < 0 || v > 1'000'000) {
        std::fprintf(stderr, "agent_swarm: %s %s: expected a number 0..1000000\n", flag.c_str(),
                     value.c_str());
        return false;
      }
      *target = static_cast<int>(v);
    } else {
      std::fprintf(stderr, "agent_swarm: unknown flag %s\n", flag.c_str());
      return false;
    }
  }
  if (o->controller.empty() || o->agents < 1 || o->channels < 1 || o->report_seconds < 1 ||
      o->samples_per_job < 1 || o->warmup_seconds < 0) {
    std::fprintf(stderr,
                 "usage: agent_swarm --controller HOST:PORT [--agents N] [--seconds S] "
                 "[--channels C] [--runs R] [--iterations I] [--samples-per-job K] "
                 "[--controller-pid PID] [--report-seconds S] [--warmup-seconds S]\n");
    return false;
  }
  return true;
}

// Submits `runs` runs of tiny pipetest jobs, each over min(agents, 1000) hosts.
bool SubmitRuns(const Options& o) {
  auto stub = tlbfleet::v1::FleetService::NewStub(
      grpc::CreateChannel(o.controller, grpc::InsecureChannelCredentials()));
  for (int r = 0; r < o.runs; ++r) {
    tlbfleet::v1::SubmitRunRequest request;
    request.set_spec_yaml("name: swarm-" + std::to_string(r) +
                          "\nbenchmark: pipetest\nparams: {loops: 1000}\niterations: " +
                          std::to_string(o.iterations) + "\narms: [{name: a}, {name: b}]\n" +
                          "hosts: {count: " + std::to_string(std::min(o.agents, 1000)) + "}\n");
    request.set_source_name("agent_swarm");
    tlbfleet::v1::SubmitRunResponse response;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    const grpc::Status s = stub->SubmitRun(&ctx, request, &response);
    if (!s.ok()) {
      std::fprintf(stderr, "agent_swarm: SubmitRun: %s\n", s.error_message().c_str());
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseFlags(argc, argv, &o)) return 2;
  Stats stats;
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<tlbfleet::v1::AgentService::Stub>> stubs;
  for (int c = 0; c < o.channels; ++c) {
    grpc::ChannelArguments args;
    args.SetInt("tlbfleet.swarm_channel", c);  // distinct args: one connection per channel
    channels.push_back(
        grpc::CreateCustomChannel(o.controller, grpc::InsecureChannelCredentials(), args));
    stubs.push_back(tlbfleet::v1::AgentService::NewStub(channels.back()));
  }
  std::vector<std::unique_ptr<SwarmAgent>> agents;
  for (int i = 0; i < o.agents; ++i) {
    agents.push_back(std::make_unique<SwarmAgent>(stubs[i % o.channels].get(), i, o, stats));
  }
  if (o.runs > 0 && !SubmitRuns(o)) return 1;

  std::atomic<bool> stop{false};
  std::thread heartbeats([&] {
    while (!stop.load()) {
      const auto now = Clock::now();
      for (auto& a : agents) a->MaybeHeartbeat(now);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });

  const long hz = ::sysconf(_SC_CLK_TCK);
  const auto start = Clock::now();
  auto last = start;
  int64_t last_jobs = 0, last_samples = 0, last_ticks = 0, rss = 0;
  if (o.controller_pid > 0) ProcessUsage(o.controller_pid, &last_ticks, &rss);
  double max_cpu = 0;
  int64_t max_rss = 0;
  std::printf("%8s %9s %9s %12s %10s %10s %8s %9s\n", "time_s", "connected", "jobs/s", "samples/s",
              "disp_p50ms", "disp_p99ms", "ctl_cpu%", "ctl_rssMB");
  while (Clock::now() - start < std::chrono::seconds(o.seconds)) {
    std::this_thread::sleep_for(std::chrono::seconds(o.report_seconds));
    const auto now = Clock::now();
    const double dt = std::chrono::duration<double>(now - last).count();
    const auto interval_start = last;
    last = now;
    std::vector<int64_t> latencies;
    {
      std::lock_guard<std::mutex> lock(stats.mu);
      latencies.swap(stats.dispatch_us);
      stats.all_dispatch_us.insert(stats.all_dispatch_us.end(), latencies.begin(), latencies.end());
      if (interval_start - start >= std::chrono::seconds(o.warmup_seconds)) {
        stats.steady_dispatch_us.insert(stats.steady_dispatch_us.end(), latencies.begin(),
                                        latencies.end());
      }
    }
    const int64_t jobs = stats.jobs.load(), samples = stats.samples_acked.load();
    double cpu = -1;
    if (o.controller_pid > 0) {
      int64_t ticks = 0;
      if (ProcessUsage(o.controller_pid, &ticks, &rss)) {
        cpu = 100.0 * static_cast<double>(ticks - last_ticks) / static_cast<double>(hz) / dt;
        last_ticks = ticks;
        max_cpu = std::max(max_cpu, cpu);
        max_rss = std::max(max_rss, rss);
      }
    }
    std::printf("%8.0f %9d %9.1f %12.0f %10.1f %10.1f %8.1f %9.1f\n",
                std::chrono::duration<double>(now - start).count(), stats.connected.load(),
                static_cast<double>(jobs - last_jobs) / dt,
                static_cast<double>(samples - last_samples) / dt,
                static_cast<double>(Percentile(latencies, 0.5)) / 1000.0,
                static_cast<double>(Percentile(latencies, 0.99)) / 1000.0, cpu,
                static_cast<double>(rss) / 1024.0);
    std::fflush(stdout);
    last_jobs = jobs;
    last_samples = samples;
  }
  stop.store(true);
  heartbeats.join();
  const int connected = stats.connected.load();
  for (auto& a : agents) a->Finish();
  for (auto& a : agents) a->WaitDone(std::chrono::seconds(10));
  std::printf(
      "summary: agents %d connected at the end %d, jobs %lld, samples acked %lld, dispatch "
      "p50 %.1f ms p99 %.1f ms (after the first %d s: p50 %.1f ms p99 %.1f ms), controller max "
      "cpu %.1f%% max rss %.1f MB\n",
      o.agents, connected, static_cast<long long>(stats.jobs.load()),
      static_cast<long long>(stats.samples_acked.load()),
      static_cast<double>(Percentile(stats.all_dispatch_us, 0.5)) / 1000.0,
      static_cast<double>(Percentile(stats.all_dispatch_us, 0.99)) / 1000.0, o.warmup_seconds,
      static_cast<double>(Percentile(stats.steady_dispatch_us, 0.5)) / 1000.0,
      static_cast<double>(Percentile(stats.steady_dispatch_us, 0.99)) / 1000.0, max_cpu,
      static_cast<double>(max_rss) / 1024.0);
  if (stats.rejected.load() > 0) {
    std::fprintf(stderr, "agent_swarm: %d stream(s) rejected, first: %s\n", stats.rejected.load(),
                 stats.first_reject.c_str());
    std::fflush(stdout);
    std::_Exit(1);
  }
  std::fflush(stdout);
  // The agents' reactors are left to the exiting process (see OnDone).
  std::_Exit(connected > 0 ? 0 : 1);
}
