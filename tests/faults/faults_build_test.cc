// Kernels built from source under faults (issue 21), with real processes on loopback: a
// controller with its artifact store (`--artifact-dir`), a builder agent (`--kernel-sources`)
// building a small fake kernel tree in a temporary git repository with real `make`, and a
// tester agent that "boots" the built kernel in a fake sysroot (its install command records
// the release and the build tag, its "reboot" writes them into the sysroot's /proc and stops
// the agent, which the test starts again as a host's init would; nothing here reboots this
// machine).
//
//   - the controller killed (kill -9) mid-build and restarted on the same database and
//     artifact directory: the build is queued again, the builder's warm tree compiles only
//     what the killed make had not finished, one artifact is published, the run succeeds;
//   - the builder's work dir on a tmpfs that is nearly full: make fails writing, the run fails
//     naming the full disk, no artifact is published or left half-written anywhere; with the
//     space back, the same commit builds and boots;
//   - a byte of the kernel image flipped on its way to the tester (a TCP proxy between the
//     tester and the controller): the fetcher refuses the file, fetches it again, and the
//     kernel booted is the one the store holds.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/faults/fault_harness.h"

namespace tlbfleet::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

void WriteText(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::trunc) << text;
}

// Lines of `text` equal to `line`.
int CountLines(const std::string& text, const std::string& line) {
  int n = 0;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) n += l == line ? 1 : 0;
  return n;
}

// Entries of a directory (0 when it does not exist).
int Entries(const std::string& dir) {
  std::error_code ec;
  int n = 0;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); ++it) ++n;
  return n;
}

// Sum of the sizes of the regular files under `dir`.
uint64_t TreeBytes(const std::string& dir) {
  uint64_t n = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); ++it) {
    if (it->is_regular_file()) n += it->file_size();
  }
  return n;
}

// A fake kernel tree's Makefile: the targets the builder runs (agent/builder/kernel_build.h),
// each doing in milliseconds what the kernel's does. Every compile appends "start X.o" and
// "done X.o" to `counter` (outside the tree), so the test sees which compiles ran, how often
// and whether they finished. A source beginning with #gate waits (30 s at most) for the file
// `gate` to exist: the controller can be killed while make is in the middle of the build. One
// beginning with #big writes 512 KiB more into its object, as a large object file would.
// `.DELETE_ON_ERROR` as in kbuild (scripts/Kbuild.include): a compile that fails leaves no
// half-written object for the next make to take as up to date.
std::string FakeMakefile(const std::string& counter, const std::string& gate) {
  return ".RECIPEPREFIX := >\n"
         ".DELETE_ON_ERROR:\n"
         "OBJS := $(patsubst %.c,%.o,$(sort $(wildcard kernel/*.c)))\n"
         "COUNTER := " +
         counter + "\nGATE := " + gate +
         "\n.PHONY: all defconfig olddefconfig kernelrelease\n"
         "all: arch/x86/boot/bzImage System.map\n"
         "%.o: %.c\n"
         "> @echo \"  CC      $@\"\n"
         "> @echo \"start $@\" >> $(COUNTER)\n"
         "> @if grep -q '^#gate' $<; then echo \"waiting for the gate: $<\"; i=0;"
         " while [ ! -e $(GATE) ] && [ $$i -lt 600 ]; do sleep 0.05; i=$$((i+1)); done; fi\n"
         "> @cp $< $@\n"
         "> @if grep -q '^#big' $<; then head -c 524288 /dev/zero >> $@; fi\n"
         "> @echo \"done $@\" >> $(COUNTER)\n"
         "arch/x86/boot/bzImage: $(OBJS) .config\n"
         "> @mkdir -p arch/x86/boot\n"
         "> @cat $(OBJS) .config > $@\n"
         "> @echo \"Kernel: $@ is ready\"\n"
         "System.map: $(OBJS)\n"
         "> @for o in $(OBJS); do echo \"ffffffff81000000 T $$o\"; done > $@\n"
         "defconfig:\n"
         "> @cp configs/$@ .config\n"
         "olddefconfig:\n"
         "> @true\n"
         "kernelrelease:\n"
         "> @cat VERSION\n";
}

// A byte in the middle of kernel/a.c, and so of the image: the proxy flips it in transit.
constexpr char kMarker[] = "tlbfleet-fault-marker-0123456789abcdef";

// A TCP proxy on 127.0.0.1 that forwards every connection to `upstream_port` and flips one bit
// of the first occurrence of `marker` in the upstream -> client direction (gRPC over clear
// HTTP/2 carries a chunk's bytes as they are). Everything else passes unchanged.
class CorruptingProxy {
 public:
  CorruptingProxy(int upstream_port, std::string marker)
      : upstream_port_(upstream_port), marker_(std::move(marker)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(listen_fd_, 16) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }

  ~CorruptingProxy() {
    stop_.store(true);
    if (accept_thread_.joinable()) accept_thread_.join();
    std::lock_guard<std::mutex> lock(mu_);
    for (std::thread& t : pumps_) t.join();
    if (listen_fd_ >= 0) ::close(listen_fd_);
  }

  bool ok() const { return port_ > 0; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int corrupted() const { return corrupted_.load(); }

 private:
  void AcceptLoop() {
    while (!stop_.load()) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(static_cast<uint16_t>(upstream_port_));
      if (server < 0 || ::connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        ::close(client);
        if (server >= 0) ::close(server);
        continue;
      }
      std::lock_guard<std::mutex> lock(mu_);
      pumps_.emplace_back([this, client, server] { Pump(client, server); });
    }
  }

  static bool SendAll(int fd, const char* data, size_t n) {
    while (n > 0) {
      const ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
      if (w <= 0) return false;
      data += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  }

  // Copies both ways until either side closes (or the proxy stops).
  void Pump(int client, int server) {
    std::string tail;  // the last marker_.size() - 1 bytes from upstream: a marker split in two
    std::vector<char> buf(64 * 1024);
    while (!stop_.load()) {
      pollfd p[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
      if (::poll(p, 2, 100) <= 0) continue;
      if (p[0].revents != 0) {
        const ssize_t n = ::recv(client, buf.data(), buf.size(), 0);
        if (n <= 0 || !SendAll(server, buf.data(), static_cast<size_t>(n))) break;
      }
      if (p[1].revents != 0) {
        const ssize_t n = ::recv(server, buf.data(), buf.size(), 0);
        if (n <= 0) break;
        const std::string window = tail + std::string(buf.data(), static_cast<size_t>(n));
        const size_t at = window.find(marker_);
        if (at != std::string::npos && corrupted_.load() == 0) {
          // The marker's last byte is in this read (a whole marker in `tail` alone is impossible).
          buf[at + marker_.size() - 1 - tail.size()] ^= 0x01;
          corrupted_.fetch_add(1);
        }
        tail = window.substr(window.size() - std::min(window.size(), marker_.size() - 1));
        if (!SendAll(client, buf.data(), static_cast<size_t>(n))) break;
      }
    }
    ::close(client);
    ::close(server);
  }

  const int upstream_port_;
  const std::string marker_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> corrupted_{0};
  std::thread accept_thread_;
  std::mutex mu_;
  std::vector<std::thread> pumps_;  // guarded by mu_
};

class BuildFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string d = dir_.path();
    counter_ = d + "/compiles";
    gate_ = d + "/gate";
    // The fake kernel tree.
    repo_ = d + "/repo";
    WriteText(repo_ + "/Makefile", FakeMakefile(counter_, gate_));
    WriteText(repo_ + "/VERSION", "6.1.0-fault\n");
    WriteText(repo_ + "/.gitignore", "*.o\n/arch/\n/System.map\n/.config\n");
    WriteText(repo_ + "/configs/defconfig", "CONFIG_FAULT=y\n");
    WriteText(repo_ + "/kernel/a.c", std::string("int a; /* ") + kMarker + " */\n");
    WriteText(repo_ + "/kernel/b.c", "int b;\n");
    Git({"init", "--quiet", "--initial-branch=main"});
    commit_ = Commit("fake kernel 6.1");

    // The tester's fake machine: its install command records what the next boot runs, the
    // "reboot" boots it (release, command line with the build tag, a new boot_id) and stops
    // the agent.
    root_ = d + "/sysroot";
    {
      std::ifstream in("/proc/cpuinfo");  // procfs files have no size: read, not copy_file
      std::stringstream cpuinfo;
      cpuinfo << in.rdbuf();
      WriteText(root_ + "/proc/cpuinfo", cpuinfo.str());
    }
    WriteText(root_ + "/proc/sys/kernel/hostname", "tester\n");
    WriteText(root_ + "/proc/sys/kernel/osrelease", "6.1.0-57-amd64\n");
    WriteText(root_ + "/proc/cmdline", "console=ttyS0\n");
    WriteText(root_ + "/proc/sys/kernel/random/boot_id", "boot-initial\n");
    WriteText(d + "/install", "#!/bin/sh\necho \"$TLBFLEET_KERNEL_RELEASE\" > " + d +
                                  "/next-release\necho \"" + "$TLBFLEET_BUILD_TAG\" > " + d +
                                  "/next-tag\necho \"$TLBFLEET_ARTIFACT_ID\" >> " + d +
                                  "/installed\n");
    WriteText(d + "/fake-reboot",
              "#!/bin/sh\nD=" + d +
                  "\ncat $D/next-release > $D/sysroot/proc/sys/kernel/osrelease\n"
                  "echo \"console=ttyS0 $(cat $D/next-tag)\" > $D/sysroot/proc/cmdline\n"
                  "n=$(cat $D/boots 2>/dev/null || echo 0); n=$((n + 1)); echo $n > $D/boots\n"
                  "echo boot-$n > $D/sysroot/proc/sys/kernel/random/boot_id\n"
                  "kill -TERM $(cat $D/tester.pid)\n");
    fs::permissions(d + "/install", fs::perms::owner_all);
    fs::permissions(d + "/fake-reboot", fs::perms::owner_all);
  }

  void TearDown() override {
    WriteText(gate_, "");  // a make still waiting (a failed test) ends at once
    if (HasFailure()) {
      std::printf("--- controller\n%s\n--- builder\n%s\n--- tester\n%s\n--- compiles\n%s\n",
                  controller_ ? controller_->Log().c_str() : "",
                  builder_ ? builder_->Log().c_str() : "", tester_ ? tester_->Log().c_str() : "",
                  ReadWholeFile(counter_).c_str());
    }
    // Agents before the controller, the proxy before both.
    proxy_.reset();
    tester_.reset();
    builder_.reset();
    controller_.reset();
    disk_.reset();  // unmounted once nothing builds on it
  }

  void Git(std::vector<std::string> args) {
    std::vector<std::string> argv = {"/usr/bin/git",
                                     "-C",
                                     repo_,
                                     "-c",
                                     "user.name=Ada Lovelace",
                                     "-c",
                                     "user.email=ada@example.org"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string out;
    ASSERT_EQ(RunTool(argv, &out), 0) << out;
  }

  std::string Commit(const std::string& subject) {
    Git({"add", "--all"});
    Git({"commit", "--quiet", "-m", subject});
    std::string out;
    RunTool({"/usr/bin/git", "-C", repo_, "rev-parse", "HEAD"}, &out);
    return out.substr(0, 40);
  }

  // The controller with its artifact store in <dir>/artifacts.
  void StartController() {
    controller_ = std::make_unique<FaultController>(
        dir_.path(), std::vector<std::string>{"--artifact-dir", Artifacts()});
    ASSERT_TRUE(controller_->Start()) << controller_->Log();
  }
  std::string Artifacts() const { return dir_.path() + "/artifacts"; }

  // The builder, its build trees in `work_dir`.
  void StartBuilder(const std::string& work_dir) {
    WriteText(dir_.path() + "/sources.yaml", "sources:\n  linux:\n    repository: " + repo_ +
                                                 "\n    work_dir: " + work_dir +
                                                 "\nconfigs:\n  lab: {base: defconfig}\n");
    builder_ = std::make_unique<FaultAgent>(
        dir_.path(), "builder",
        std::vector<std::string>{"--kernel-sources", dir_.path() + "/sources.yaml", "--label",
                                 "role=builder"});
    builder_->Start(controller_->address());
  }

  // The tester, dialling `address` (the controller's, or a proxy's).
  void StartTester(const std::string& address) {
    tester_address_ = address;
    tester_ = std::make_unique<FaultAgent>(
        dir_.path(), "tester",
        std::vector<std::string>{"--sysroot", root_, "--label", "role=tester",
                                 "--kernel-install-command", dir_.path() + "/install",
                                 "--reboot-command", dir_.path() + "/fake-reboot"});
    RestartTester();
  }
  void RestartTester() {
    tester_->Start(tester_address_);
    WriteText(dir_.path() + "/tester.pid", std::to_string(tester_->process().pid()) + "\n");
  }

  // Waits for the run to end, starting the tester again whenever a "reboot" stopped it.
  v1::Run RunToEnd(const std::string& run_id, std::chrono::seconds timeout) {
    v1::Run run;
    WaitFor(
        [&] {
          if (!tester_->Running()) RestartTester();
          run = controller_->GetRun(run_id);
          return run.state() == v1::RUN_STATE_SUCCEEDED || run.state() == v1::RUN_STATE_FAILED ||
                 run.state() == v1::RUN_STATE_CANCELLED;
        },
        timeout);
    return run;
  }

  std::string SubmitKernelRun() {
    std::string run_id;
    grpc::Status s = controller_->Submit(
        "name: fault-build\nbenchmark: pipetest\nparams: {loops: 2000}\niterations: 2\n"
        "hosts: {labels: {role: tester}}\n"
        "arms:\n  - {name: k, kernel: {source: linux, rev: main, config: lab}}\n",
        &run_id);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return run_id;
  }

  v1::GetResultsResponse Results(const std::string& run_id) {
    v1::GetResultsRequest request;
    request.set_run_id(run_id);
    v1::GetResultsResponse results;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    EXPECT_TRUE(controller_->fleet().GetResults(&ctx, request, &results).ok());
    return results;
  }

  // Every sample of the run ran on the build's kernel and says so.
  void ExpectSamplesOn(const std::string& run_id, const v1::KernelBuild& build) {
    v1::GetResultsResponse results = Results(run_id);
    ASSERT_GT(results.samples_size(), 0);
    for (const v1::Sample& s : results.samples()) {
      EXPECT_EQ(s.commit(), commit_) << s.ShortDebugString();
      EXPECT_EQ(s.build_id(), build.build_id()) << s.ShortDebugString();
      EXPECT_EQ(s.kernel_release(), "6.1.0-fault") << s.ShortDebugString();
      EXPECT_NE(s.kernel_cmdline().find("tlbfleet.build=" + build.build_id().substr(0, 16)),
                std::string::npos)
          << s.kernel_cmdline();
    }
  }

  int64_t Q(const std::string& sql) { return controller_->Q(sql); }
  std::string Compiles() const { return ReadWholeFile(counter_); }

  TempDir dir_;
  std::string repo_, counter_, gate_, root_, commit_, tester_address_;
  std::unique_ptr<FaultController> controller_;
  std::unique_ptr<FaultAgent> builder_, tester_;
  std::unique_ptr<CorruptingProxy> proxy_;
  std::unique_ptr<Tmpfs> disk_;
};

TEST_F(BuildFaultTest, ControllerKilledMidBuildResumesAndCompilesNothingTwice) {
  WriteText(repo_ + "/kernel/slow.c", "#gate\nint slow;\n");
  commit_ = Commit("slow: takes its time");
  StartController();
  StartBuilder(dir_.path() + "/build");
  StartTester(controller_->address());
  ASSERT_TRUE(WaitFor([&] { return controller_->ConnectedHosts() == 2; }, 30s));
  const std::string run_id = SubmitKernelRun();
  ASSERT_FALSE(run_id.empty());

  // Mid-make, with part of its log at the controller: a.o and b.o compiled, slow.o waiting.
  ASSERT_TRUE(WaitFor(
      [&] {
        return Q("SELECT COUNT(*) FROM build_log WHERE line LIKE 'waiting for the gate%'") == 1 &&
               CountLines(Compiles(), "done kernel/b.o") == 1 &&
               CountLines(Compiles(), "done kernel/a.o") == 1;
      },
      20s));
  ASSERT_EQ(Q("SELECT attempts FROM builds WHERE run_id = " + run_id), 1);
  controller_->Kill9();
  ASSERT_TRUE(controller_->Start()) << controller_->Log();
  EXPECT_NE(controller_->Log().find(
                "1 build(s) in progress when the controller stopped are queued again"),
            std::string::npos);

  // The builder lost its stream and stopped its make; given the build again, it compiles in
  // its warm tree only what the killed make had not finished.
  ASSERT_TRUE(WaitFor([&] { return CountLines(Compiles(), "start kernel/slow.o") == 2; }, 30s));
  WriteText(gate_, "");
  const v1::Run run = RunToEnd(run_id, 60s);
  ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error();
  ASSERT_EQ(run.builds_size(), 1);
  const v1::KernelBuild& build = run.builds(0);
  EXPECT_EQ(build.state(), "succeeded");
  EXPECT_EQ(build.commit(), commit_);
  EXPECT_FALSE(build.reused());
  EXPECT_EQ(Q("SELECT attempts FROM builds WHERE run_id = " + run_id), 2);

  const std::string compiles = Compiles();
  EXPECT_EQ(CountLines(compiles, "start kernel/a.o"), 1) << compiles;
  EXPECT_EQ(CountLines(compiles, "start kernel/b.o"), 1) << compiles;
  EXPECT_EQ(CountLines(compiles, "start kernel/slow.o"), 2) << compiles;
  // The killed compile never finished: the first make was stopped, not left running.
  EXPECT_EQ(CountLines(compiles, "done kernel/slow.o"), 1) << compiles;

  // One artifact published, the one the build names; nothing left uploading; the log of both
  // attempts kept.
  EXPECT_EQ(Entries(Artifacts() + "/objects"), 1);
  EXPECT_TRUE(fs::exists(Artifacts() + "/objects/" + build.artifact_id()));
  EXPECT_EQ(Entries(Artifacts() + "/incoming"), 0);
  EXPECT_EQ(Q("SELECT COUNT(*) FROM build_log WHERE line LIKE 'waiting for the gate%'"), 2);
  EXPECT_EQ(Q("SELECT COUNT(*) FROM build_log"), static_cast<int64_t>(build.log_lines()));
  EXPECT_EQ(Entries(builder_->state_dir() + "/kernels/builds"), 0);
  ExpectSamplesOn(run_id, build);

  // The same commit again is not built again: the artifact serves it, make is not run.
  const std::string again = SubmitKernelRun();
  const v1::Run second = RunToEnd(again, 60s);
  ASSERT_EQ(second.state(), v1::RUN_STATE_SUCCEEDED) << second.error();
  EXPECT_TRUE(second.builds(0).reused());
  EXPECT_EQ(second.builds(0).artifact_id(), build.artifact_id());
  EXPECT_EQ(Compiles(), compiles);
  EXPECT_EQ(Entries(Artifacts() + "/objects"), 1);
}

TEST_F(BuildFaultTest, DiskFullDuringABuildFailsItNamingTheReasonAndPublishesNothing) {
  disk_ = std::make_unique<Tmpfs>(dir_.path(), "4m");
  ASSERT_TRUE(disk_->ok()) << "cannot mount a tmpfs (root needed)";
  const Tmpfs& disk = *disk_;
  // A large object the nearly full disk has no room for.
  WriteText(repo_ + "/kernel/big.c", "#big\nint big[131072];\n");
  commit_ = Commit("big: a large object");
  // All but 256 KiB taken: the checkout and the small objects fit, the 512 KiB one does not
  // (the whole build, with the image, needs about 1.1 MiB).
  const std::string filler = disk.path() + "/filler";
  {
    std::ofstream out(filler, std::ios::binary);
    out << std::string(4 * 1024 * 1024 - 256 * 1024, '\0');
  }
  StartController();
  StartBuilder(disk.path() + "/build");
  StartTester(controller_->address());
  ASSERT_TRUE(WaitFor([&] { return controller_->ConnectedHosts() == 2; }, 30s));
  const std::string run_id = SubmitKernelRun();
  ASSERT_FALSE(run_id.empty());

  const v1::Run run = controller_->WaitForRunEnd(run_id, 60s);
  ASSERT_EQ(run.state(), v1::RUN_STATE_FAILED) << run.ShortDebugString();
  EXPECT_NE(run.error().find("disk full (No space left on device) during make"), std::string::npos)
      << run.error();
  ASSERT_EQ(run.builds_size(), 1);
  const v1::KernelBuild& build = run.builds(0);
  EXPECT_EQ(build.state(), "failed");
  EXPECT_NE(build.reason().find("No space left on device"), std::string::npos) << build.reason();
  EXPECT_NE(build.reason().find("(3 attempts)"), std::string::npos) << build.reason();
  EXPECT_TRUE(build.artifact_id().empty());
  EXPECT_EQ(Q("SELECT COUNT(*) FROM build_log WHERE line LIKE '%No space left on device%'"), 3);
  // Nothing half-written is published or kept: no artifact in the store, no upload begun, no
  // artifact directory (nor a partial one) on the builder.
  EXPECT_EQ(Entries(Artifacts() + "/objects"), 0);
  EXPECT_EQ(Entries(Artifacts() + "/incoming"), 0);
  EXPECT_EQ(Entries(builder_->state_dir() + "/kernels/builds"), 0);
  EXPECT_TRUE(tester_->Running());  // never asked to boot anything
  EXPECT_FALSE(fs::exists(dir_.path() + "/installed"));

  // With the space back, the same commit builds in full and boots.
  fs::remove(filler);
  const std::string again = SubmitKernelRun();
  const v1::Run second = RunToEnd(again, 60s);
  ASSERT_EQ(second.state(), v1::RUN_STATE_SUCCEEDED) << second.error();
  const v1::KernelBuild& built = second.builds(0);
  EXPECT_FALSE(built.reused());
  EXPECT_EQ(Entries(Artifacts() + "/objects"), 1);
  // The image holds the whole large object (512 KiB of it and more), not a cut one.
  const std::string image = Artifacts() + "/objects/" + built.artifact_id() + "/files/bzImage";
  EXPECT_GT(fs::file_size(image), 512u * 1024u);
  ExpectSamplesOn(again, built);
}

TEST_F(BuildFaultTest, AnImageCorruptedInTransitIsRefusedAndFetchedAgain) {
  StartController();
  proxy_ = std::make_unique<CorruptingProxy>(
      std::stoi(controller_->address().substr(controller_->address().rfind(':') + 1)), kMarker);
  ASSERT_TRUE(proxy_->ok());
  StartBuilder(dir_.path() + "/build");
  StartTester(proxy_->address());  // its stream and its artifact fetches go through the proxy
  ASSERT_TRUE(WaitFor([&] { return controller_->ConnectedHosts() == 2; }, 30s));
  const std::string run_id = SubmitKernelRun();
  ASSERT_FALSE(run_id.empty());

  const v1::Run run = RunToEnd(run_id, 60s);
  ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error();
  const v1::KernelBuild& build = run.builds(0);
  EXPECT_EQ(proxy_->corrupted(), 1);  // the flip did happen, once

  // The tester fetched the image twice (the corrupted copy refused), the other files once...
  const std::string object = Artifacts() + "/objects/" + build.artifact_id();
  const uint64_t files = TreeBytes(object + "/files");
  const uint64_t image = fs::file_size(object + "/files/bzImage");
  std::smatch m;
  const std::string tester_log = tester_->Log();
  ASSERT_TRUE(std::regex_search(
      tester_log, m, std::regex("artifact " + build.artifact_id() + " fetched \\((\\d+) bytes")))
      << tester_log;
  EXPECT_EQ(std::stoull(m[1]), files + image);
  // ...installed it once, and what it staged is the store's image byte for byte.
  EXPECT_EQ(CountLines(ReadWholeFile(dir_.path() + "/installed"), build.artifact_id()), 1);
  const std::string staged =
      tester_->state_dir() + "/kernels/" + build.artifact_id() + "/files/bzImage";
  EXPECT_EQ(ReadWholeFile(staged), ReadWholeFile(object + "/files/bzImage"));
  EXPECT_NE(ReadWholeFile(staged).find(kMarker), std::string::npos);
  ExpectSamplesOn(run_id, build);
}

}  // namespace
}  // namespace tlbfleet::testing
