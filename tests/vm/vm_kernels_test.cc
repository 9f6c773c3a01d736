// Real kernels in the microVM lab (CTest label "vm"): a catalogue of two boot entries on two
// real Debian 12 kernels (the newest 6.1 and the newest 6.12 the archive has), one guest
// started on the first, and a reboot into the second chosen by the guest itself.
//
//   1. `lab catalogue FILE` (kernels cached in <build>/vm-lab, shared with the other vm test);
//   2. a controller on 127.0.0.1:0; `lab up 1 --catalogue FILE --entry old`;
//   3. the agent reports entry old's kernel release, and its command line carries
//      tlbfleet.entry=old and the entry's own words;
//   4. Ctrl-Alt-Del through the QEMU monitor: the guest runs /sbin/tlbfleet-boot-entry new
//      (the entry's tlbfleet.ctrlaltdel_entry=new asks it to) and reboots; QEMU exits
//      (-no-reboot) and the lab's supervisor starts entry new's kernel;
//   5. the agent comes back with the same agent id, a new boot_id, entry new's release and
//      command line; the supervisor's log and the console show both boots.
//
// Two TCG boots of about 10 s each. The guest's console and the supervisor's log are printed
// on failure.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace tlbfleet::testing {
namespace {

using namespace std::chrono_literals;

std::string LabScript() { return std::string(TLBFLEET_SOURCE_DIR) + "/deploy/vm-lab/lab"; }
std::string LabDir() { return TLBFLEET_VM_KERNELS_DIR; }

int Lab(std::vector<std::string> args, std::string* output) {
  std::vector<std::string> argv = {"/bin/bash", LabScript()};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--out", LabDir(), "--cache", TLBFLEET_VM_LAB_CACHE, "--agent",
                           BinPath("tlbfleet-agent")});
  return RunCommand(argv, output, /*merge_stderr=*/true);
}

struct LabGuard {
  ~LabGuard() {
    std::string out;
    Lab({"down"}, &out);
  }
};

// Sends one command to a QEMU human monitor socket.
bool MonitorCommand(const std::string& socket_path, const std::string& command) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", socket_path.c_str());
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  if (ok) {
    // The monitor greets first; read its banner so the command is not lost before it.
    char buffer[512];
    WaitFor([&] { return ::recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT) > 0; }, 5s);
    const std::string line = command + "\n";
    ok = ::send(fd, line.data(), line.size(), 0) == static_cast<ssize_t>(line.size());
    WaitFor([&] { return ::recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT) > 0; }, 5s);
  }
  ::close(fd);
  return ok;
}

// `name release boot image cmdline...` lines of the lab's resolved catalogue.
std::map<std::string, std::string> Releases() {
  std::map<std::string, std::string> releases;
  std::istringstream in(ReadWholeFile(LabDir() + "/catalogue"));
  std::string name, release, rest;
  while (in >> name >> release) {
    releases[name] = release;
    std::getline(in, rest);
  }
  return releases;
}

std::optional<v1::Host> ConnectedHost(v1::FleetService::Stub& fleet, const std::string& hostname) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 5s);
  v1::ListHostsResponse response;
  if (!fleet.ListHosts(&ctx, v1::ListHostsRequest(), &response).ok()) return std::nullopt;
  for (const v1::Host& h : response.hosts()) {
    if (h.connected() && h.info().hostname() == hostname) return h;
  }
  return std::nullopt;
}

constexpr char kCatalogue[] = R"(# two real kernels; entry old asks for new on Ctrl-Alt-Del
old   linux-image-6.1.0-*-amd64        tlbfleet.ctrlaltdel_entry=new
new   linux-image-6.12.*+deb12-amd64
)";

TEST(VmKernels, AGuestRebootsIntoTheEntryItAskedFor) {
  TempDir dir;
  const std::string catalogue = dir.path() + "/test.catalogue";
  std::ofstream(catalogue) << kCatalogue;
  const std::string run = LabDir() + "/run";
  auto diagnostics = [&] {
    return "\n--- supervisor log ---\n" + ReadWholeFile(run + "/vm1.supervisor.log") +
           "\n--- console (last 3000 chars) ---\n" + [](const std::string& s) {
             return s.size() > 3000 ? s.substr(s.size() - 3000) : s;
           }(ReadWholeFile(run + "/vm1.log"));
  };

  // 1. The catalogue: both kernels, one initramfs.
  std::string out;
  ASSERT_EQ(Lab({"catalogue", catalogue}, &out), 0) << out;
  const std::map<std::string, std::string> releases = Releases();
  ASSERT_EQ(releases.size(), 2u) << ReadWholeFile(LabDir() + "/catalogue");
  const std::string old_release = releases.at("old");
  const std::string new_release = releases.at("new");
  ASSERT_TRUE(old_release.rfind("6.1.", 0) == 0) << old_release;
  ASSERT_TRUE(new_release.rfind("6.12.", 0) == 0) << new_release;

  // 2. A controller and one guest on entry old.
  const std::string ready = dir.path() + "/ready";
  Process controller(
      {BinPath("tlbfleet-controller"), "--grpc-listen", "127.0.0.1:0", "--http-listen",
       "127.0.0.1:0", "--db", dir.path() + "/fleet.db", "--ready-file", ready},
      dir.path() + "/controller.log");
  std::smatch m;
  std::string ready_text;
  ASSERT_TRUE(WaitFor(
      [&] {
        ready_text = ReadWholeFile(ready);
        return std::regex_search(ready_text, m, std::regex("\"grpc_port\":(\\d+)"));
      },
      30s))
      << controller.Log();
  const std::string port = m[1];
  auto fleet = v1::FleetService::NewStub(
      grpc::CreateChannel("127.0.0.1:" + port, grpc::InsecureChannelCredentials()));
  LabGuard guard;
  ASSERT_EQ(
      Lab({"up", "1", "--controller-port", port, "--catalogue", catalogue, "--entry", "old"}, &out),
      0)
      << out;

  // 3. The agent on entry old's kernel.
  std::optional<v1::Host> host;
  ASSERT_TRUE(WaitFor(
      [&] {
        host = ConnectedHost(*fleet, "vm1");
        return host.has_value();
      },
      180s))
      << diagnostics();
  EXPECT_EQ(host->info().kernel_release(), old_release);
  EXPECT_NE(host->info().kernel_cmdline().find("tlbfleet.entry=old"), std::string::npos)
      << host->info().kernel_cmdline();
  EXPECT_NE(host->info().kernel_cmdline().find("tlbfleet.ctrlaltdel_entry=new"), std::string::npos);
  const std::string agent_id = host->agent_id();
  const std::string first_boot = host->info().boot_id();

  // 4. The guest asks for entry new and reboots.
  ASSERT_TRUE(MonitorCommand(run + "/vm1.monitor", "sendkey ctrl-alt-delete"));

  // 5. Back on entry new's kernel, same agent, new boot.
  ASSERT_TRUE(WaitFor(
      [&] {
        host = ConnectedHost(*fleet, "vm1");
        return host.has_value() && host->info().boot_id() != first_boot;
      },
      180s))
      << diagnostics();
  EXPECT_EQ(host->agent_id(), agent_id);
  EXPECT_EQ(host->info().kernel_release(), new_release) << diagnostics();
  EXPECT_NE(host->info().kernel_cmdline().find("tlbfleet.entry=new"), std::string::npos)
      << host->info().kernel_cmdline();
  EXPECT_EQ(host->info().kernel_cmdline().find("ctrlaltdel_entry"), std::string::npos);
  EXPECT_EQ(ReadWholeFile(run + "/vm1.entry"), "new\n");
  const std::string supervisor = ReadWholeFile(run + "/vm1.supervisor.log");
  EXPECT_NE(supervisor.find("booting entry old: kernel " + old_release), std::string::npos)
      << supervisor;
  EXPECT_NE(supervisor.find("booting entry new: kernel " + new_release), std::string::npos)
      << supervisor;
  const std::string console = ReadWholeFile(run + "/vm1.log");
  EXPECT_NE(console.find("kernel " + old_release + ", entry old"), std::string::npos);
  EXPECT_NE(console.find("tlbfleet-vm: next boot: entry new"), std::string::npos);
  EXPECT_NE(console.find("kernel " + new_release + ", entry new"), std::string::npos);
}

}  // namespace
}  // namespace tlbfleet::testing
