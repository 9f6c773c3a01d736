// Bisections over commits through the nightly unit (docs/kernels.md, "Bisecting commits"): the
// range listed by a builder, each step a run of kernels built from source (the real core's
// build stage, with the sim host building and booting them), a commit that does not build
// skipped with its reason, one that builds but does not boot (or boots another kernel) skipped
// with its reason, a builder that fails told from a commit that does not build by the run's
// build events (never by the reason's words), the culprit verified against its parent and by
// its revert, the report, a restart mid-bisection, and bad input refused naming the field.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "controller/nightly/nightly_fixture_for_test.h"
#include "yaml-cpp/yaml.h"

namespace tlbfleet::nightly {
namespace {

using ::testing::HasSubstr;

constexpr char kCommitsYaml[] = R"(
commits: {source: linux, good: lab-base, bad: lab-tip, config: lab}
boots_per_round: 2
max_boots_per_step: 2
run:
  name: ignored
  benchmark: pipetest
  params: {loops: 1000}
  iterations: 3
)";

constexpr char kDoesNotLink[] = "make -j2 all: target mm/memory.o failed (Error 1)";

// 16 commits on lab-base; `culprit` makes pipetest 20 % slower; `unbuildable` does not build.
class NightlyCommitsTest : public NightlyTest {
 protected:
  explicit NightlyCommitsTest(int culprit = 11, int unbuildable = 8) {
    git_ = SimGit(16);
    git_.Commit(culprit).delta = 2.0;
    if (unbuildable > 0) git_.Commit(unbuildable).unbuildable = kDoesNotLink;
  }

  // The sim host builds, boots and measures; the core's tick dispatches what builds freed.
  void SettleBisect(const std::string& id) {
    for (int i = 0; i < 2000 && Bisect(id).status() == v1::BISECT_RUNNING; ++i) {
      nightly_->RunPendingForTest();
      lab_.Drive();
      controller_->Tick();
      controller_->DeliverObserverCallsForTest();
    }
  }

  v1::BisectState StartAndFinish() {
    absl::StatusOr<v1::BisectState> started = nightly_->StartBisect(kCommitsYaml, "c.yaml");
    EXPECT_TRUE(started.ok()) << started.status();
    if (!started.ok()) return {};
    SettleBisect(started->id());
    return Bisect(started->id());
  }

  // The kernel arms of run `run_id`: arm name -> "rev" or "rev-revert".
  std::map<std::string, std::string> KernelArms(const std::string& run_id) {
    std::map<std::string, std::string> out;
    absl::StatusOr<v1::Run> run = controller_->runs().GetRun(run_id);
    EXPECT_TRUE(run.ok()) << run.status();
    if (!run.ok()) return out;
    for (const v1::ArmSpec& arm : run->spec().arms()) {
      out[arm.name()] = arm.kernel().revert().empty()
                            ? arm.kernel().rev()
                            : absl::StrCat(arm.kernel().rev(), "-", arm.kernel().revert());
    }
    return out;
  }

  const v1::BisectStep* StepTesting(const v1::BisectState& state, const std::string& hash,
                                    v1::BisectStepKind kind = v1::BISECT_STEP_SEARCH) {
    for (const v1::BisectStep& s : state.steps()) {
      if (s.tested() == hash && s.kind() == kind) return &s;
    }
    return nullptr;
  }
};

TEST_F(NightlyCommitsTest, NamesTheCulpritSkippingTheCommitThatDoesNotBuildAndVerifiesIt) {
  const v1::BisectState state = StartAndFinish();
  ASSERT_EQ(state.status(), v1::BISECT_FOUND) << state.reason();
  const std::string culprit = SimGit::Hash(11);
  EXPECT_EQ(state.first_bad(), culprit);
  EXPECT_EQ(state.verification().outcome(), v1::VERIFICATION_CONFIRMED)
      << state.verification().reason();
  EXPECT_TRUE(state.verification().revert_skipped().empty());
  // The range came from the builder, with the full hashes of the revisions.
  EXPECT_EQ(state.spec().good(), SimGit::Hash(0));
  EXPECT_EQ(state.spec().bad(), SimGit::Hash(16));
  EXPECT_EQ(state.spec().commits().range_size(), 16);
  EXPECT_EQ(state.spec().commits().good_rev(), "lab-base");
  EXPECT_EQ(state.spec().commits().config(), "lab");

  // git's order: 8 does not build (skipped, with the builder's reason), 7 next (nearest the
  // middle, the older on a tie), then 11, 9, 10.
  const v1::BisectStep* skipped = StepTesting(state, SimGit::Hash(8));
  ASSERT_NE(skipped, nullptr);
  EXPECT_EQ(skipped->verdict(), v1::SKIPPED);
  EXPECT_THAT(skipped->skip_reason(), HasSubstr("build failed"));
  EXPECT_THAT(skipped->skip_reason(), HasSubstr("mm/memory.o"));
  std::vector<std::string> searched;
  for (const v1::BisectStep& s : state.steps()) {
    if (s.kind() == v1::BISECT_STEP_SEARCH && s.number() > 0) searched.push_back(s.tested());
  }
  EXPECT_EQ(searched, (std::vector<std::string>{SimGit::Hash(8), SimGit::Hash(7), SimGit::Hash(11),
                                                SimGit::Hash(9), SimGit::Hash(10)}));

  // Every run's arms are kernels by full hash: good, the tested commit, bad; the parent check
  // the parent and the culprit; the revert check bad without the culprit.
  const v1::BisectStep* step7 = StepTesting(state, SimGit::Hash(7));
  ASSERT_NE(step7, nullptr);
  EXPECT_EQ(
      KernelArms(step7->rounds(0).run_id()),
      (std::map<std::string, std::string>{
          {"good", SimGit::Hash(0)}, {"tested", SimGit::Hash(7)}, {"bad", SimGit::Hash(16)}}));
  const v1::BisectStep* parent = StepTesting(state, culprit, v1::BISECT_STEP_VERIFY_PARENT);
  ASSERT_NE(parent, nullptr);
  EXPECT_EQ(parent->verdict(), v1::LIKE_BAD);
  EXPECT_EQ(KernelArms(parent->rounds(0).run_id()),
            (std::map<std::string, std::string>{{"good", SimGit::Hash(10)}, {"tested", culprit}}));
  const v1::BisectStep* revert = StepTesting(state, culprit, v1::BISECT_STEP_VERIFY_REVERT);
  ASSERT_NE(revert, nullptr);
  EXPECT_EQ(revert->verdict(), v1::LIKE_GOOD);
  EXPECT_EQ(KernelArms(revert->rounds(0).run_id()),
            (std::map<std::string, std::string>{{"good", SimGit::Hash(0)},
                                                {"tested", SimGit::Hash(16) + "-" + culprit},
                                                {"bad", SimGit::Hash(16)}}));
  // The builder was asked for the range, then whether the revert applies onto bad.
  bool asked_revert = false;
  for (const v1::GitQuery& q : runs_->queries) {
    if (q.kind() == v1::GitQuery::KIND_REVERT_APPLIES) {
      asked_revert = true;
      EXPECT_EQ(q.rev(), culprit);
      EXPECT_EQ(q.onto(), SimGit::Hash(16));
    }
  }
  EXPECT_TRUE(asked_revert);
  // Each kernel built once (good, bad, 7, 11, 9, 10, bad without 11); the later runs that
  // named a commit built before reused its artifact.
  EXPECT_EQ(lab_.builds, 7);
  EXPECT_TRUE(lab_.errors.empty()) << lab_.errors.front();

  const std::string report = nightly_->GetBisect(state.id())->report();
  EXPECT_THAT(report, HasSubstr(absl::StrCat("first bad commit: ", culprit)));
  EXPECT_THAT(report, HasSubstr("mm: change 11"));
  EXPECT_THAT(report, HasSubstr("author: Dev 11 <dev11@example.org>"));
  EXPECT_THAT(report, HasSubstr("regression of pipetest.usecs_per_op between lab-base"));
  EXPECT_THAT(report, HasSubstr("verification: confirmed"));
  EXPECT_THAT(report, HasSubstr("skipped: build failed: make -j2 all"));
  EXPECT_THAT(report, HasSubstr("lab time:"));
  EXPECT_THAT(report, HasSubstr(absl::StrCat("git bisect skip ", SimGit::Hash(8))));
  EXPECT_THAT(report, HasSubstr(absl::StrCat("git bisect bad ", culprit)));
  EXPECT_THAT(report, HasSubstr(absl::StrCat("# first bad commit: [", culprit, "] mm: change 11")));
}

class NightlyCommitsAtEndTest : public NightlyCommitsTest,
                                public ::testing::WithParamInterface<int> {
 protected:
  NightlyCommitsAtEndTest() : NightlyCommitsTest(GetParam(), 0) {}
};

TEST_P(NightlyCommitsAtEndTest, NamesACulpritAtEitherEndOfTheRange) {
  const v1::BisectState state = StartAndFinish();
  ASSERT_EQ(state.status(), v1::BISECT_FOUND) << state.reason();
  EXPECT_EQ(state.first_bad(), SimGit::Hash(GetParam()));
  EXPECT_EQ(state.verification().outcome(), v1::VERIFICATION_CONFIRMED)
      << state.verification().reason();
  // The parent of the first commit is good itself; the last commit is bad itself.
  const v1::BisectStep* parent =
      StepTesting(state, SimGit::Hash(GetParam()), v1::BISECT_STEP_VERIFY_PARENT);
  ASSERT_NE(parent, nullptr);
  EXPECT_EQ(KernelArms(parent->rounds(0).run_id()).at("good"), SimGit::Hash(GetParam() - 1));
}

INSTANTIATE_TEST_SUITE_P(Ends, NightlyCommitsAtEndTest, ::testing::Values(1, 16));

class NightlyCommitsRevertTest : public NightlyCommitsTest {
 protected:
  NightlyCommitsRevertTest() { git_.revert_conflicts.insert(SimGit::Hash(11)); }
};

TEST_F(NightlyCommitsRevertTest, ARevertThatDoesNotApplyIsNotMeasuredAndTheVerificationSaysWhy) {
  const v1::BisectState state = StartAndFinish();
  ASSERT_EQ(state.status(), v1::BISECT_FOUND) << state.reason();
  EXPECT_EQ(state.first_bad(), SimGit::Hash(11));
  EXPECT_EQ(state.verification().outcome(), v1::VERIFICATION_CONFIRMED);
  EXPECT_THAT(state.verification().revert_skipped(), HasSubstr("does not apply cleanly"));
  EXPECT_THAT(state.verification().revert_skipped(), HasSubstr("Merge conflict in mm/memory.c"));
  EXPECT_THAT(state.verification().reason(), HasSubstr("its revert was not measured"));
  // No run asked for the reverted kernel.
  EXPECT_EQ(StepTesting(state, SimGit::Hash(11), v1::BISECT_STEP_VERIFY_REVERT), nullptr);
  absl::StatusOr<v1::ListRunsResponse> runs = controller_->runs().ListRuns({});
  ASSERT_TRUE(runs.ok());
  for (const v1::Run& run : runs->runs()) {
    for (const v1::ArmSpec& arm : run.spec().arms()) EXPECT_TRUE(arm.kernel().revert().empty());
  }
  const std::string report = nightly_->GetBisect(state.id())->report();
  EXPECT_THAT(report, HasSubstr("does not apply cleanly onto bad"));
}

class NightlyCommitsBadEndTest : public NightlyCommitsTest {
 protected:
  NightlyCommitsBadEndTest() : NightlyCommitsTest(11, 16) {}
};

TEST_F(NightlyCommitsBadEndTest, ABadThatDoesNotBuildStopsTheBisectionNamingIt) {
  const v1::BisectState state = StartAndFinish();
  ASSERT_EQ(state.status(), v1::BISECT_FAILED);
  EXPECT_THAT(state.reason(),
              HasSubstr(absl::StrCat("bad ", SimGit::Hash(16), " cannot be tested")));
  EXPECT_THAT(state.reason(), HasSubstr("mm/memory.o"));
}

TEST_F(NightlyCommitsTest, ARestartMidBisectionResumesToTheSameAnswer) {
  absl::StatusOr<v1::BisectState> started = nightly_->StartBisect(kCommitsYaml, "c.yaml");
  ASSERT_TRUE(started.ok()) << started.status();
  // Until a search step's run measures (after the skip), then lose everything in memory.
  for (int i = 0; i < 2000; ++i) {
    const v1::BisectState s = Bisect(started->id());
    if (s.steps_size() >= 3 && !s.pending_run_id().empty() &&
        controller_->runs().GetRun(s.pending_run_id())->jobs().succeeded() > 0) {
      break;
    }
    nightly_->RunPendingForTest();
    lab_.Drive();
    controller_->Tick();
    controller_->DeliverObserverCallsForTest();
  }
  const v1::BisectState before = Bisect(started->id());
  const std::string pending = before.pending_run_id();
  ASSERT_FALSE(pending.empty());
  ASSERT_EQ(before.steps_size(), 3);
  const int builds_before = lab_.builds;
  Close();
  clock_.Advance(absl::Minutes(5));  // the lease the host held on the old stream expires
  Open();
  controller_->Tick();
  SettleBisect(started->id());
  const v1::BisectState state = Bisect(started->id());
  ASSERT_EQ(state.status(), v1::BISECT_FOUND) << state.reason();
  EXPECT_EQ(state.first_bad(), SimGit::Hash(11));
  EXPECT_EQ(state.verification().outcome(), v1::VERIFICATION_CONFIRMED);
  // The run under way was finished, not submitted again, and nothing was built twice.
  EXPECT_EQ(state.steps(2).rounds(0).run_id(), pending);
  EXPECT_EQ(state.steps(2).rounds_size(), 1);
  EXPECT_EQ(state.steps(1).verdict(), v1::SKIPPED);
  EXPECT_GE(lab_.builds, builds_before);
  EXPECT_EQ(lab_.builds, 7);
}

TEST_F(NightlyCommitsTest, BadInputIsRefusedNamingTheFieldAndNothingIsStored) {
  const std::string run = "run: {benchmark: pipetest, params: {loops: 1000}, iterations: 3}\n";
  const auto refused = [&](const std::string& yaml, const std::string& field) {
    absl::StatusOr<v1::BisectState> s = nightly_->StartBisect(yaml + run, "c.yaml");
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << yaml << s.status();
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(field)) << yaml;
  };
  refused("entries: [e0, e1]\ncommits: {source: linux, good: lab-base, bad: lab-tip}\n",
          "commits: give either entries");
  refused("commits: {source: linux, good: lab-base, bad: lab-tip}\ngood: e0\n",
          "good: with commits");
  refused("commits: {source: linux, good: lab-base, bad: lab-tip, branch: x}\n", "commits.branch");
  refused("commits: {source: linux, bad: lab-tip}\n", "commits.good: required");
  refused("commits: {source: linux, good: --upload-pack=x, bad: lab-tip}\n", "commits.good");
  refused("commits: [linux]\n", "commits: expected a map");
  refused("commits: {source: nope, good: lab-base, bad: lab-tip}\n",
          "commits.source: no builder agent has a kernel source named \"nope\" (sources: linux)");
  refused("commits: {source: linux, good: lab-base, bad: lab-tip, config: big}\n",
          "commits.config: source linux has no build config \"big\"");
  refused("commits: {source: linux, good: lab-base, bad: no-such-tag}\n",
          "commits.bad: revision no-such-tag does not resolve");
  refused("commits: {source: linux, good: lab-tip, bad: lab-base}\n",
          "commits.good: good " + SimGit::Hash(16) + " is not an ancestor");
  refused("commits: {source: linux, good: lab-base, bad: lab-base}\n", "commits.bad");
  absl::StatusOr<v1::BisectState> arm = nightly_->StartBisect(
      "commits: {source: linux, good: lab-base, bad: lab-tip}\n"
      "run: {benchmark: pipetest, arms: [{name: a, kernel: {source: linux, rev: x}}]}\n",
      "c.yaml");
  EXPECT_EQ(arm.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(arm.status().message()), HasSubstr("run.arms[0].kernel"));
  // No builder to ask: not the user's mistake, and nothing is stored either.
  git_.available = false;
  absl::StatusOr<v1::BisectState> away = nightly_->StartBisect(kCommitsYaml, "c.yaml");
  EXPECT_EQ(away.status().code(), absl::StatusCode::kFailedPrecondition) << away.status();
  EXPECT_THAT(std::string(away.status().message()), HasSubstr("commits.good"));
  EXPECT_EQ(nightly_->ListBisects(0)->bisects_size(), 0);
  EXPECT_EQ(controller_->runs().ListRuns({})->runs_size(), 0);
}

// Between the sim host and the core: the kernels of chosen commits fail as a real lab's would.
// The host's hellos after a reboot into such a kernel's boot entry, its jobs' completions and
// its builds' completions are changed on their way to the core, which sees what an agent
// would send.
class FaultyLabHub : public core::AgentHub {
 public:
  FaultyLabHub(core::AgentHub& real, core::RunService& runs) : real_(real), runs_(runs) {}

  // The kernel panics at boot: the host comes back on the default kernel, on no entry (as a
  // lab guest whose supervisor boots the default kernel after the panic).
  std::set<std::string> does_not_boot;
  // Another kernel boots: the agent's check after the reboot fails (boot_entry_error), and
  // it refuses the jobs of the entry, naming it (agent/runner/boot_entries.cc, CheckJob).
  std::set<std::string> boots_another_kernel;
  // Every build of it ends HOST_FAILED (the builder's disk is full), whatever it would build to.
  std::set<std::string> builder_fails;

  absl::Status Register(core::AgentChannel* channel, const v1::Hello& hello_in,
                        const std::string& principal) override {
    v1::Hello hello = hello_in;
    wrong_entry_.clear();
    const std::string entry = hello.host().boot_entry();
    const std::string commit = CommitOfEntry(entry);
    if (does_not_boot.count(commit) > 0) {
      hello.mutable_host()->clear_boot_entry();
    } else if (boots_another_kernel.count(commit) > 0) {
      wrong_entry_ = entry;
      hello.mutable_host()->clear_boot_entry();
      hello.mutable_host()->set_boot_entry_error(
          absl::StrCat("entry ", entry, " expected build sim-", commit.substr(0, 12), ", booted ",
                       hello.host().kernel_release(), " without its tag"));
    }
    return real_.Register(channel, hello, principal);
  }

  void OnMessage(core::AgentChannel* channel, v1::AgentMessage m) override {
    if (m.has_build_progress() && !m.build_progress().commit().empty()) {
      commit_of_task_[m.build_progress().task_id()] = m.build_progress().commit();
    }
    if (m.has_build_complete() &&
        builder_fails.count(commit_of_task_[m.build_complete().task_id()]) > 0) {
      const int64_t task = m.build_complete().task_id();
      m.mutable_build_complete()->Clear();
      m.mutable_build_complete()->set_task_id(task);
      m.mutable_build_complete()->set_status(v1::BUILD_STATUS_HOST_FAILED);
      m.mutable_build_complete()->set_reason("disk full (No space left on device) during make");
    }
    if (!wrong_entry_.empty()) {
      if (m.has_samples()) return;  // the agent refuses the job: nothing is measured
      if (m.has_complete()) {
        m.mutable_complete()->set_status(v1::JOB_STATUS_FAILED);
        m.mutable_complete()->set_sample_count(0);
        m.mutable_complete()->set_error(
            absl::StrCat("job needs boot entry ", wrong_entry_,
                         ", but this boot is no entry (kernel 6.1.0-x-amd64)"));
      }
    }
    real_.OnMessage(channel, std::move(m));
  }

  void Unregister(core::AgentChannel* channel) override { real_.Unregister(channel); }

 private:
  // The commit (full hash) whose kernel is boot entry `entry`, from the runs' builds.
  std::string CommitOfEntry(const std::string& entry) {
    if (entry.empty()) return "";
    absl::StatusOr<v1::ListRunsResponse> list = runs_.ListRuns({});
    if (!list.ok()) return "";
    for (const v1::Run& listed : list->runs()) {
      absl::StatusOr<v1::Run> run = runs_.GetRun(listed.id());
      if (!run.ok()) continue;
      for (const v1::KernelBuild& b : run->builds()) {
        if (b.boot_entry() == entry && b.kernel().revert().empty()) return b.kernel().rev();
      }
    }
    return "";
  }

  core::AgentHub& real_;
  core::RunService& runs_;
  std::string wrong_entry_;  // the entry of the boot that came up on another kernel
  std::map<int64_t, std::string> commit_of_task_;
};

// The planted history, with commit 8 building: each test makes a kernel fail its own way.
class NightlyCommitsFaultTest : public NightlyCommitsTest {
 protected:
  NightlyCommitsFaultTest() : NightlyCommitsTest(11, 0) {}
  core::AgentHub& LabHub() override {
    hub_ = std::make_unique<FaultyLabHub>(controller_->agents(), controller_->runs());
    return *hub_;
  }
  std::unique_ptr<FaultyLabHub> hub_;
};

TEST_F(NightlyCommitsFaultTest, ACommitThatBuildsButDoesNotBootIsSkippedWithTheReason) {
  hub_->does_not_boot.insert(SimGit::Hash(8));
  const v1::BisectState state = StartAndFinish();
  ASSERT_EQ(state.status(), v1::BISECT_FOUND) << state.reason() << Log();
  EXPECT_EQ(state.first_bad(), SimGit::Hash(11));
  EXPECT_EQ(state.verification().outcome(), v1::VERIFICATION_CONFIRMED)
      << state.verification().reason();
  const v1::BisectStep* skipped = StepTesting(state, SimGit::Hash(8));
  ASSERT_NE(skipped, nullptr);
  EXPECT_EQ(skipped->verdict(), v1::SKIPPED);
  // The core's words: the host came back off the entry each time it was asked.
  EXPECT_THAT(skipped->skip_reason(), HasSubstr("boot failed: "));
  EXPECT_THAT(skipped->skip_reason(), HasSubstr("was asked 3 times to boot entry kernel-"));
  EXPECT_THAT(skipped->skip_reason(), HasSubstr("came back each time on another"));
  // The search went on as after a commit that does not build: 7, 11, 9, 10.
  std::vector<std::string> searched;
  for (const v1::BisectStep& s : state.steps()) {
    if (s.kind() == v1::BISECT_STEP_SEARCH && s.number() > 0) searched.push_back(s.tested());
  }
  EXPECT_EQ(searched, (std::vector<std::string>{SimGit::Hash(8), SimGit::Hash(7), SimGit::Hash(11),
                                                SimGit::Hash(9), SimGit::Hash(10)}));
  const std::string report = nightly_->GetBisect(state.id())->report();
  EXPECT_THAT(report, HasSubstr("skipped: boot failed: "));
  EXPECT_THAT(report, HasSubstr(absl::StrCat("git bisect skip ", SimGit::Hash(8))));
}

TEST_F(NightlyCommitsFaultTest, ACommitThatBootsAnotherKernelIsSkippedWithTheReason) {
  hub_->boots_another_kernel.insert(SimGit::Hash(8));
  const v1::BisectState state = StartAndFinish();
  ASSERT_EQ(state.status(), v1::BISECT_FOUND) << state.reason() << Log();
  EXPECT_EQ(state.first_bad(), SimGit::Hash(11));
  const v1::BisectStep* skipped = StepTesting(state, SimGit::Hash(8));
  ASSERT_NE(skipped, nullptr);
  EXPECT_EQ(skipped->verdict(), v1::SKIPPED);
  // The agent refused the job, naming the entry its boot was not.
  EXPECT_THAT(skipped->skip_reason(), HasSubstr("boot failed: "));
  EXPECT_THAT(skipped->skip_reason(), HasSubstr("(arm tested"));
  EXPECT_THAT(skipped->skip_reason(), HasSubstr("job needs boot entry kernel-"));
}

TEST_F(NightlyCommitsFaultTest, ABadThatDoesNotBootStopsTheBisectionNamingIt) {
  hub_->does_not_boot.insert(SimGit::Hash(16));
  const v1::BisectState state = StartAndFinish();
  ASSERT_EQ(state.status(), v1::BISECT_FAILED);
  EXPECT_THAT(state.reason(),
              HasSubstr(absl::StrCat("bad ", SimGit::Hash(16), " cannot be tested")));
  EXPECT_THAT(state.reason(), HasSubstr("boot failed: "));
}

TEST_F(NightlyCommitsFaultTest, ABuilderThatFailsItsTriesIsNotACommitThatDoesNotBuild) {
  hub_->builder_fails.insert(SimGit::Hash(8));
  const v1::BisectState state = StartAndFinish();
  // Nothing is known of commit 8: the bisection stops with the builder's reason rather than
  // skipping a commit that may well build.
  ASSERT_EQ(state.status(), v1::BISECT_FAILED) << state.reason();
  EXPECT_THAT(state.reason(), HasSubstr("disk full"));
  for (const v1::BisectStep& s : state.steps()) EXPECT_NE(s.verdict(), v1::SKIPPED);
}

class NightlyCommitsAttemptsWordingTest : public NightlyCommitsTest {
 protected:
  NightlyCommitsAttemptsWordingTest() {
    // A compiler's last line that happens to end as the store's count of a builder's tries.
    git_.Commit(8).unbuildable = "make -j2 all: target mm/memory.o failed (Error 1) (3 attempts)";
  }
};

TEST_F(NightlyCommitsAttemptsWordingTest, ACommitThatDoesNotBuildIsSkippedWhateverItsReasonSays) {
  const v1::BisectState state = StartAndFinish();
  ASSERT_EQ(state.status(), v1::BISECT_FOUND) << state.reason();
  EXPECT_EQ(state.first_bad(), SimGit::Hash(11));
  const v1::BisectStep* skipped = StepTesting(state, SimGit::Hash(8));
  ASSERT_NE(skipped, nullptr);
  EXPECT_EQ(skipped->verdict(), v1::SKIPPED);
  EXPECT_THAT(skipped->skip_reason(), HasSubstr("build failed: make -j2 all"));
  EXPECT_THAT(skipped->skip_reason(), HasSubstr("(3 attempts)"));
}

}  // namespace
}  // namespace tlbfleet::nightly
