#pragma once
// Test helpers (header-only, tests only) shared by the runner's tests.

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

namespace tlbfleet::agent {

// True once `pid` no longer runs: its /proc entry is gone, or it is a zombie waiting for a
// parent (init) to reap it. Polls until `timeout`.
inline bool ProcessGoneWithin(pid_t pid, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    if (!stat) return true;
    std::string line;
    std::getline(stat, line);
    size_t paren = line.rfind(')');
    if (paren != std::string::npos && paren + 2 < line.size() &&
        (line[paren + 2] == 'Z' || line[paren + 2] == 'X')) {
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polling /proc, no event
  }
}

}  // namespace tlbfleet::agent
