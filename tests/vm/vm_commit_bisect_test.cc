// A whole bisection over commits in the microVM lab (CTest label "vm"; docs/kernels.md,
// "Bisecting commits"), everything real: `tlbfleet bisect start` with
// `commits: {source: linux, good: lab-base, bad: lab-tip, config: lab}` over the lab's planted
// kernel history (deploy/vm-lab/kernel-source: 16 commits, a TLB regression planted in one of
// them, one that does not build), a builder agent on the host building each commit asked for,
// the artifacts kept by the controller, one guest fetching, booting and measuring each kernel.
//
//   1. `lab source` plants (or checks) the repository; the expected culprit and the unbuildable
//      commit are read from it (its history file's roles, checked against git's own subjects),
//      not written here;
//   2. a controller on 127.0.0.1:0 with its artifact store, a builder agent on the host
//      (`--kernel-sources` from `lab builder-config`: its tree kept in /var/cache/tlbfleet-lab,
//      warm after the first run), one guest with `lab up --artifacts`;
//   3. `tlbfleet bisect start FILE`; `tlbfleet bisect show ID` (text and --format json) until
//      it ends;
//   4. the report names the culprit (hash and subject) in its text and JSON, the unbuildable
//      commit is a skipped step with the builder's reason, the culprit is verified against its
//      parent and, where its revert applies onto bad (asked of git here too), by its revert.
//
// As cheap as it can be and still decide every step (CI's whole run must stay well under an
// hour): ebizzy with 16-page unmaps (the regression makes each of those flushes walk every
// page about 341 times: 3-4x fewer records/s under TCG, docs/vm-lab.md), 2 threads (remote
// shootdowns too: the larger step), 3 iterations of 1 s per boot (a boot costs about 15 s, an
// iteration 2 s), 3 boots per arm and round, no endpoint check (the search steps measure good
// and bad in every run anyway). Two boots per arm were tried first: with 2 units per arm the
// interval of a step spans several-fold on a busy host (-96 % to +5,600 %), so every step took
// a second round, and the fourth stopped as ambiguous at 4 boots (commit 10: -26 % [-64 %,
// +49 %] against good). The lab time and wall time are printed.

#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/harness.h"
#include "tlbfleet/v1/nightly.pb.h"

namespace tlbfleet::testing {
namespace {

using namespace std::chrono_literals;

std::string LabScript() { return std::string(TLBFLEET_SOURCE_DIR) + "/deploy/vm-lab/lab"; }
std::string LabDir() { return TLBFLEET_VM_BISECT_DIR; }
constexpr char kRepository[] = "/var/cache/tlbfleet-lab/linux";

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

std::string Tail(const std::string& s, size_t n = 6000) {
  return s.size() > n ? s.substr(s.size() - n) : s;
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string Git(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/git", "-C", kRepository};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string out;
  RunCommand(argv, &out);
  return Trimmed(out);
}

// A planted commit as the repository says it: `.git/tlbfleet-lab.history` gives each commit's
// role (`index hash role subject`); git itself must agree on its subject.
struct Planted {
  int index = -1;
  std::string hash, subject;
};

std::map<std::string, Planted> PlantedByRole() {
  std::map<std::string, Planted> out;
  std::ifstream in(std::string(kRepository) + "/.git/tlbfleet-lab.history");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    Planted p;
    std::string role;
    fields >> p.index >> p.hash >> role;
    std::getline(fields >> std::ws, p.subject);
    out[role] = p;
  }
  return out;
}

// Whether git reverts `commit` cleanly onto `onto`: the three-way apply of the reverse diff on
// a temporary index, as `git revert` merges (and as the builder answers the question).
bool RevertApplies(const std::string& commit, const std::string& onto, const std::string& dir) {
  const std::string index = dir + "/revert-check.index";
  const std::string script = "export GIT_INDEX_FILE='" + index + "'; cd '" +
                             std::string(kRepository) + "' && git read-tree " + onto +
                             " && git diff " + commit + " " + commit +
                             "^ | git apply --cached --3way -";
  std::string out;
  return RunCommand({"/bin/sh", "-c", script}, &out, /*merge_stderr=*/true) == 0;
}

std::string Cli(const std::string& address, std::vector<std::string> args, int* status) {
  std::vector<std::string> argv = {BinPath("tlbfleet"), "--controller", address};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string out;
  *status = RunCommand(argv, &out);
  return out;
}

const v1::BisectStep* FindStep(const v1::BisectState& state, const std::string& tested,
                               v1::BisectStepKind kind) {
  for (const v1::BisectStep& s : state.steps()) {
    if (s.tested() == tested && s.kind() == kind) return &s;
  }
  return nullptr;
}

TEST(VmCommitBisect, NamesThePlantedCulpritSkippingTheCommitThatDoesNotBuildAndVerifiesIt) {
  const auto test_start = std::chrono::steady_clock::now();
  TempDir dir;
  std::string out;
  // 1. The planted history: what the bisection must find, from the repository itself.
  ASSERT_EQ(Lab({"source"}, &out), 0) << out;
  const std::map<std::string, Planted> planted = PlantedByRole();
  ASSERT_EQ(planted.count("regression"), 1u) << "no regression in the lab's history file";
  ASSERT_EQ(planted.count("broken"), 1u) << "no unbuildable commit in the lab's history file";
  const Planted culprit = planted.at("regression");
  const Planted broken = planted.at("broken");
  const std::string good = Git({"rev-parse", "--verify", "lab-base^{commit}"});
  const std::string bad = Git({"rev-parse", "--verify", "lab-tip^{commit}"});
  ASSERT_EQ(good.size(), 40u) << good;
  ASSERT_EQ(bad.size(), 40u) << bad;
  ASSERT_EQ(Git({"log", "-1", "--format=%s", culprit.hash}), culprit.subject);
  ASSERT_EQ(Git({"log", "-1", "--format=%s", broken.hash}), broken.subject);
  // Both lie in lab-base..lab-tip.
  const std::string range = Git({"rev-list", "--topo-order", "--reverse", good + ".." + bad});
  ASSERT_NE(range.find(culprit.hash), std::string::npos) << range;
  ASSERT_NE(range.find(broken.hash), std::string::npos) << range;
  const std::string culprit_parent = Git({"rev-parse", culprit.hash + "^"});
  // The object file of the first file the unbuildable commit touches: make's failed target.
  std::string broken_object = Git({"show", "--name-only", "--format=", broken.hash});
  broken_object = broken_object.substr(0, broken_object.find('\n'));
  ASSERT_GT(broken_object.size(), 2u);
  ASSERT_EQ(broken_object.substr(broken_object.size() - 2), ".c") << broken_object;
  broken_object.back() = 'o';
  const bool revert_applies = RevertApplies(culprit.hash, bad, dir.path());

  const std::string sources = dir.path() + "/kernel-sources.yaml";
  ASSERT_EQ(Lab({"builder-config", "--out-file", sources}, &out), 0) << out;

  // 2. Controller, builder, guest.
  ControllerProcess controller(dir.path());
  Process builder({BinPath("tlbfleet-agent"), "--controller", controller.address(), "--state-dir",
                   dir.path() + "/builder", "--kernel-sources", sources, "--label", "role=builder"},
                  dir.path() + "/builder.log");
  const std::string run = LabDir() + "/run";
  auto diagnostics = [&] {
    return "\n--- controller log ---\n" + Tail(controller.process().Log()) +
           "\n--- builder log ---\n" + Tail(builder.Log()) + "\n--- supervisor log ---\n" +
           Tail(ReadWholeFile(run + "/vm1.supervisor.log")) + "\n--- console ---\n" +
           Tail(ReadWholeFile(run + "/vm1.log"));
  };
  ASSERT_TRUE(WaitFor([&] { return controller.ConnectedHosts() >= 1; }, 60s)) << diagnostics();
  LabGuard guard;
  ASSERT_EQ(Lab({"up", "1", "--controller-port", std::to_string(controller.grpc_port()),
                 "--artifacts", controller.db_path() + ".artifacts", "--label", "lab=vm"},
                &out),
            0)
      << out;
  ASSERT_TRUE(WaitFor([&] { return controller.ConnectedHosts() >= 2; }, 240s)) << diagnostics();

  // 3. The bisection, through the CLI.
  const std::string file = dir.path() + "/bisect.yaml";
  {
    std::ofstream spec(file);
    spec << R"(commits: {source: linux, good: lab-base, bad: lab-tip, config: lab}
boots_per_round: 3
max_boots_per_step: 6
skip_endpoint_check: true
run:
  name: vm-commit-bisect
  benchmark: ebizzy
  params: {seconds: 1, threads: 2, chunk_size: 65536}
  iterations: 3
  hosts: {labels: {lab: vm}}
)";
  }
  const auto bisect_start = std::chrono::steady_clock::now();
  int status = 0;
  const std::string started = Cli(controller.address(), {"bisect", "start", file}, &status);
  ASSERT_EQ(status, 0) << started << diagnostics();
  const std::string id = Trimmed(started.substr(Trimmed(started).rfind('\n') + 1));
  ASSERT_FALSE(id.empty()) << started;
  EXPECT_NE(started.find("commits of source linux"), std::string::npos) << started;

  v1::BisectState state;
  std::string json;
  // A cold build of the lab config takes 10-20 minutes here; each next commit under a minute.
  const bool ended = WaitFor(
      [&] {
        int s = 0;
        json = Cli(controller.address(), {"bisect", "show", id, "--format", "json"}, &s);
        if (s != 0) return false;
        state.Clear();
        google::protobuf::util::JsonParseOptions options;
        options.ignore_unknown_fields = true;
        if (!google::protobuf::util::JsonStringToMessage(json, &state, options).ok()) return false;
        return state.status() != v1::BISECT_RUNNING &&
               state.status() != v1::BISECT_STATUS_UNSPECIFIED;
      },
      2700s);
  const double wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - bisect_start).count();
  const std::string report = Cli(controller.address(), {"bisect", "show", id}, &status);
  ASSERT_TRUE(ended) << report << diagnostics();
  std::printf("%s\n", report.c_str());

  // 4. The culprit, in the JSON and in the text.
  ASSERT_EQ(state.status(), v1::BISECT_FOUND) << report << diagnostics();
  EXPECT_EQ(state.first_bad(), culprit.hash) << report;
  EXPECT_EQ(state.spec().good(), good);
  EXPECT_EQ(state.spec().bad(), bad);
  EXPECT_EQ(state.spec().commits().range_size(),
            static_cast<int>(std::count(range.begin(), range.end(), '\n') + 1));
  EXPECT_NE(json.find("\"first_bad\": \"" + culprit.hash + "\""), std::string::npos) << json;
  EXPECT_NE(report.find("first bad commit: " + culprit.hash + "\n    " + culprit.subject),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("git bisect bad " + culprit.hash), std::string::npos) << report;

  // The commit that does not build: skipped, with the builder's reason, and never measured.
  const v1::BisectStep* skipped = FindStep(state, broken.hash, v1::BISECT_STEP_SEARCH);
  ASSERT_NE(skipped, nullptr) << report;
  EXPECT_EQ(skipped->verdict(), v1::SKIPPED) << report;
  EXPECT_NE(skipped->skip_reason().find("build failed: "), std::string::npos)
      << skipped->skip_reason();
  EXPECT_NE(skipped->skip_reason().find("target " + broken_object + " failed"), std::string::npos)
      << skipped->skip_reason();
  EXPECT_NE(report.find("skipped: build failed: "), std::string::npos) << report;
  EXPECT_NE(report.find("git bisect skip " + broken.hash), std::string::npos) << report;

  // Verified: worse than its parent again; its revert (where it applies) measures like good.
  EXPECT_EQ(state.verification().outcome(), v1::VERIFICATION_CONFIRMED)
      << state.verification().reason() << "\n"
      << report;
  const v1::BisectStep* parent = FindStep(state, culprit.hash, v1::BISECT_STEP_VERIFY_PARENT);
  ASSERT_NE(parent, nullptr) << report;
  EXPECT_EQ(parent->verdict(), v1::LIKE_BAD) << report;
  const v1::BisectStep* reverted = FindStep(state, culprit.hash, v1::BISECT_STEP_VERIFY_REVERT);
  if (revert_applies) {
    ASSERT_NE(reverted, nullptr) << report;
    EXPECT_EQ(reverted->verdict(), v1::LIKE_GOOD) << report;
    EXPECT_TRUE(state.verification().revert_skipped().empty())
        << state.verification().revert_skipped();
  } else {
    EXPECT_EQ(reverted, nullptr) << report;
    EXPECT_NE(state.verification().revert_skipped().find("does not apply cleanly"),
              std::string::npos)
        << state.verification().revert_skipped();
  }
  EXPECT_NE(report.find("verification: confirmed"), std::string::npos) << report;

  // Every measured step's run ran its arms on the kernels built from the commits it named: the
  // parent check on the culprit's parent and the culprit.
  ASSERT_FALSE(parent->rounds().empty());
  const v1::Run parent_run = controller.GetRun(parent->rounds(0).run_id());
  std::map<std::string, std::string> commit_of;
  for (const v1::KernelBuild& b : parent_run.builds()) commit_of[b.arm()] = b.commit();
  EXPECT_EQ(commit_of["good"], culprit_parent) << parent_run.ShortDebugString();
  EXPECT_EQ(commit_of["tested"], culprit.hash) << parent_run.ShortDebugString();

  // Lab time (the report's, every round's run from submission to end) and wall time.
  int64_t lab_seconds = 0;
  int runs = 0;
  int boots = 0;
  for (const v1::BisectStep& step : state.steps()) {
    for (const v1::BisectRound& round : step.rounds()) {
      lab_seconds += round.run_seconds();
      boots += static_cast<int>(round.boots());
      ++runs;
    }
  }
  std::smatch lab_time;
  const bool has_lab_time = std::regex_search(report, lab_time, std::regex("lab time: [^\n]*"));
  EXPECT_TRUE(has_lab_time) << report;
  std::string uptime;
  RunCommand({"/usr/bin/uptime"}, &uptime);
  std::printf(
      "commit bisection: culprit %s (%s) found and verified; %s (%lld s, %d runs, %d boots per "
      "arm in all); wall %.0f s from `bisect start` to its end, %.0f s the whole test; load: %s\n",
      culprit.hash.substr(0, 12).c_str(), culprit.subject.c_str(),
      has_lab_time ? lab_time.str().c_str() : "lab time: ?", static_cast<long long>(lab_seconds),
      runs, boots, wall_seconds,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - test_start).count(),
      Trimmed(uptime).c_str());
}

}  // namespace
}  // namespace tlbfleet::testing
