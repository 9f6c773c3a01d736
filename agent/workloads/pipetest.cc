#include "agent/workloads/pipetest.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/workloads/workload.h"
#include "agent/workloads/workload_util.h"
#include "catalogue/workloads/pipetest.h"
#include "common/files.h"
#include "common/scoped_fd.h"

namespace tlbfleet::workloads {
namespace pipetest {
namespace {

// Reads or writes exactly one byte; false on error or EOF.
bool ReadByte(int fd, char& byte) {
  ssize_t n;
  while ((n = ::read(fd, &byte, 1)) < 0 && errno == EINTR) {
  }
  return n == 1;
}

bool WriteByte(int fd, char byte) {
  ssize_t n;
  while ((n = ::write(fd, &byte, 1)) < 0 && errno == EINTR) {
  }
  return n == 1;
}

struct Pipe {
  ScopedFd read_end, write_end;
};

bool OpenPipe(Pipe& pipe) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  pipe.read_end.reset(fds[0]);
  pipe.write_end.reset(fds[1]);
  return true;
}

}  // namespace

absl::StatusOr<double> RunOnce(int64_t loops) {
  Pipe ping;  // parent -> child
  Pipe pong;  // child -> parent
  if (!OpenPipe(ping) || !OpenPipe(pong)) {
    return ErrnoStatus(errno, "pipetest: pipe");
  }
  ChildGroup child;
  absl::Status s = child.Spawn([&] {
    char byte = 0;
    for (int64_t i = 0; i < loops; ++i) {
      if (!ReadByte(ping.read_end.get(), byte) || !WriteByte(pong.write_end.get(), byte)) return 1;
    }
    return 0;
  });
  if (s.ok()) s = child.WaitReady();
  if (!s.ok()) return s;
  const auto start = std::chrono::steady_clock::now();
  child.Go();
  char byte = 'p';
  bool ok = true;
  for (int64_t i = 0; i < loops && ok; ++i) {
    ok = WriteByte(ping.write_end.get(), byte) && ReadByte(pong.read_end.get(), byte);
  }
  if (!ok) {
    ping.write_end.reset();  // unblocks the child if it is still reading
  }
  s = child.Wait();
  const double seconds = SecondsSince(start);
  if (!ok) return absl::InternalError("pipetest: a pipe read or write failed");
  if (!s.ok()) return absl::InternalError(absl::StrCat("pipetest: ", s.message()));
  return seconds;
}

}  // namespace pipetest

// --- The registered workload -------------------------------------------------------------

namespace {

using catalogue::pipetest::kOpsPerSec;
using catalogue::pipetest::kUsecsPerOp;

class Pipetest : public Workload {
 public:
  Pipetest() : Workload("pipetest") {}

  absl::StatusOr<std::vector<Measurement>> Run(const Params& params) const override {
    const int64_t loops = params.Int("loops");
    absl::StatusOr<double> seconds = pipetest::RunOnce(loops);
    if (!seconds.ok()) return seconds.status();
    const double s = *seconds > 0 ? *seconds : 1e-9;
    return std::vector<Measurement>{Measure(kUsecsPerOp, s * 1e6 / static_cast<double>(loops)),
                                    Measure(kOpsPerSec, static_cast<double>(loops) / s)};
  }

  std::string ClassicOutput(const Params& params,
                            const std::vector<Measurement>& result) const override {
    // perf bench sched pipe's default format.
    const int64_t loops = params.Int("loops");
    const double usecs_per_op = FindValue(result, kUsecsPerOp.name);
    const auto total_us = static_cast<uint64_t>(usecs_per_op * static_cast<double>(loops));
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "# Running 'sched/pipe' benchmark:\n"
                  "# Executed %lld pipe operations between two processes\n\n"
                  " %14s: %llu.%03llu [sec]\n\n"
                  " %14lf usecs/op\n"
                  " %14d ops/sec\n",
                  static_cast<long long>(loops), "Total time",
                  static_cast<unsigned long long>(total_us / 1'000'000),
                  static_cast<unsigned long long>(total_us % 1'000'000 / 1000), usecs_per_op,
                  static_cast<int>(FindValue(result, kOpsPerSec.name)));
    return buf;
  }
};

}  // namespace

REGISTER_WORKLOAD(Pipetest);

}  // namespace tlbfleet::workloads
