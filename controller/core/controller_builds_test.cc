// Kernels built from source through the core (docs/kernels.md): a run with `kernel:` arms
// queues a build per arm, a builder agent takes them, the run's jobs wait until both are
// built, and a testing host is asked to reboot into each build, its artifact named.

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "common/artifacts/artifact_for_test.h"
#include "controller/artifacts/artifact_store.h"
#include "controller/core/controller_fixture_for_test.h"
#include "controller/core/fake_channel_for_test.h"
#include "controller/scheduler/boot_plan.h"
#include "controller/store/boot_requests.h"

namespace tlbfleet::core {
namespace {

constexpr char kTwoKernels[] =
    "name: k\nbenchmark: ebizzy\nparams: {seconds: 1}\niterations: 2\narms:\n"
    "  - {name: base, kernel: {source: linux, rev: lab-base}}\n"
    "  - {name: tip, kernel: {source: linux, rev: lab-tip, config: lab}}\n";

v1::Hello BuilderHello(const std::string& id) {
  v1::Hello hello;
  hello.set_protocol_version(v1::PROTOCOL_VERSION_1);
  hello.set_agent_id(id);
  hello.mutable_host()->set_hostname("builder-" + id);
  hello.mutable_host()->set_boot_id("builder-boot");
  // A builder that never runs benchmarks here: the runs below select the testers by label.
  hello.mutable_host()->mutable_labels()->insert({"role", "builder"});
  v1::KernelSourceInfo* source = hello.mutable_host()->add_kernel_sources();
  source->set_name("linux");
  source->set_arch("x86_64");
  source->add_configs("lab");
  return hello;
}

v1::Hello TesterHello(const std::string& id, const std::string& boot,
                      const std::string& entry = "") {
  v1::Hello hello;
  hello.set_protocol_version(v1::PROTOCOL_VERSION_1);
  hello.set_agent_id(id);
  hello.mutable_host()->set_hostname("host-" + id);
  hello.mutable_host()->set_boot_id(boot);
  hello.mutable_host()->set_can_reboot(true);
  hello.mutable_host()->set_can_install_kernels(true);
  hello.mutable_host()->set_arch("x86_64");
  hello.mutable_host()->set_boot_entry(entry);
  hello.mutable_host()->mutable_labels()->insert({"role", "tester"});
  return hello;
}

class ControllerBuildsTest : public ControllerFixture {
 protected:
  void SetUp() override {
    artifacts_ = *artifacts::ArtifactStore::Open(dir_.File("fleet.db.artifacts"), {});
    options_.artifacts = artifacts_.get();
    ControllerFixture::SetUp();
  }
  void TearDown() override {
    ControllerFixture::TearDown();
    artifacts_.reset();
  }

  // Publishes a small artifact as a builder's upload would, and returns it.
  artifacts::TestArtifact Publish(const std::string& build_id) {
    artifacts::TestArtifact a = artifacts::MakeSizedArtifact(build_id, 3000);
    absl::StatusOr<artifacts::UploadState> up = artifacts_->BeginUpload(a.manifest);
    EXPECT_TRUE(up.ok()) << up.status();
    for (const auto& [name, bytes] : a.contents) {
      EXPECT_TRUE(artifacts_->AppendChunk(up->upload_id, name, 0, bytes).ok());
    }
    EXPECT_TRUE(artifacts_->FinishUpload(up->upload_id).ok());
    return a;
  }

  static std::string Spec(const std::string& arms) {
    return "name: k\nbenchmark: ebizzy\nparams: {seconds: 1}\niterations: 2\n"
           "hosts: {labels: {role: tester}}\narms:\n" +
           arms;
  }

  const v1::BuildTask* LastBuild(const FakeChannel& channel) {
    for (auto it = channel.sent.rbegin(); it != channel.sent.rend(); ++it) {
      if (it->has_build()) return &it->build();
    }
    return nullptr;
  }

  void Progress(FakeChannel& channel, int64_t task, const std::string& commit,
                std::vector<std::string> lines = {}) {
    v1::AgentMessage m;
    m.mutable_build_progress()->set_task_id(task);
    m.mutable_build_progress()->set_commit(commit);
    m.mutable_build_progress()->set_subject("subject of " + commit.substr(0, 4));
    for (const std::string& line : lines) m.mutable_build_progress()->add_log_lines(line);
    agents().OnMessage(&channel, m);
  }

  void Succeed(FakeChannel& channel, int64_t task, const artifacts::TestArtifact& a) {
    v1::AgentMessage m;
    v1::BuildComplete* c = m.mutable_build_complete();
    c->set_task_id(task);
    c->set_status(v1::BUILD_STATUS_SUCCEEDED);
    c->set_commit(a.manifest.commit);
    c->set_artifact_id(a.id());
    c->set_build_id(a.manifest.build_id);
    c->set_kernel_release(a.manifest.kernel_release);
    agents().OnMessage(&channel, m);
  }

  void Fail(FakeChannel& channel, int64_t task, v1::BuildStatus status, const std::string& why) {
    v1::AgentMessage m;
    m.mutable_build_complete()->set_task_id(task);
    m.mutable_build_complete()->set_status(status);
    m.mutable_build_complete()->set_reason(why);
    agents().OnMessage(&channel, m);
  }

  std::unique_ptr<artifacts::ArtifactStore> artifacts_;
};

TEST_F(ControllerBuildsTest, AKernelOfAnUnknownSourceOrConfigIsRefusedNamingTheField) {
  FakeChannel builder;
  // No builder yet: nothing can say what source "linux" is.
  absl::StatusOr<v1::SubmitRunResponse> none =
      runs().Submit(Spec("  - {name: a, kernel: {source: linux, rev: v6.1}}\n"), "s.yaml");
  ASSERT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(none.status().message().find("arms[0].kernel.source"), std::string::npos)
      << none.status();
  ASSERT_TRUE(agents().Register(&builder, BuilderHello("b1")).ok());
  absl::StatusOr<v1::SubmitRunResponse> source =
      runs().Submit(Spec("  - {name: a, kernel: {source: linux, rev: v6.1}}\n"
                         "  - {name: b, kernel: {source: nope, rev: v6.1}}\n"),
                    "s.yaml");
  ASSERT_EQ(source.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(source.status().message().find("arms[1].kernel.source"), std::string::npos);
  EXPECT_NE(source.status().message().find("sources: linux"), std::string::npos);
  absl::StatusOr<v1::SubmitRunResponse> config = runs().Submit(
      Spec("  - {name: a, kernel: {source: linux, rev: v6.1, config: big}}\n"), "s.yaml");
  ASSERT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(config.status().message().find("arms[0].kernel.config"), std::string::npos);
  absl::StatusOr<v1::SubmitRunResponse> option = runs().Submit(
      Spec("  - {name: a, kernel: {source: linux, rev: --upload-pack=x}}\n"), "s.yaml");
  ASSERT_EQ(option.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(option.status().message().find("arms[0].kernel.rev"), std::string::npos);
  absl::StatusOr<v1::SubmitRunResponse> both = runs().Submit(
      Spec("  - {name: a, boot_entry: lab, kernel: {source: linux, rev: v6.1}}\n"), "s.yaml");
  ASSERT_EQ(both.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(both.status().message().find("arms[0].boot_entry"), std::string::npos);
  // Nothing was queued by the refusals.
  EXPECT_EQ(runs().ListRuns({})->runs_size(), 0);
  EXPECT_EQ(builder.Count(v1::ControllerMessage::kBuild), 0);
}

TEST_F(ControllerBuildsTest, ARunBuildsItsKernelsFirstThenBootsEachBuildOnTheTestingHost) {
  FakeChannel builder, tester;
  ASSERT_TRUE(agents().Register(&builder, BuilderHello("b1")).ok());
  ASSERT_TRUE(agents().Register(&tester, TesterHello("t1", "boot-0")).ok());
  agents().OnMessage(&tester, [] {
    v1::AgentMessage m;
    m.mutable_heartbeat()->set_state(v1::AGENT_STATE_IDLE);
    return m;
  }());
  const std::string run_id =
      Submit(Spec("  - {name: base, kernel: {source: linux, rev: lab-base}}\n"
                  "  - {name: tip, kernel: {source: linux, rev: lab-tip}}\n"));
  ASSERT_FALSE(run_id.empty());
  absl::StatusOr<v1::Run> run = runs().GetRun(run_id);
  ASSERT_EQ(run->builds_size(), 2);
  EXPECT_EQ(run->builds(0).kernel().config(), "lab");  // the source's only config
  EXPECT_TRUE(scheduler::IsKernelEntry(run->builds(0).boot_entry()));
  EXPECT_NE(run->builds(0).boot_entry(), run->builds(1).boot_entry());

  // One build at a time per builder; the testing host gets nothing while they build.
  ASSERT_EQ(builder.Count(v1::ControllerMessage::kBuild), 1);
  const v1::BuildTask first = *LastBuild(builder);
  EXPECT_EQ(first.rev(), "lab-base");
  EXPECT_EQ(first.config(), "lab");
  Progress(builder, first.task_id(), std::string(40, 'a'), {"==> make", "  CC mm/tlb.o"});
  controller_->Tick();
  EXPECT_EQ(tester.Count(v1::ControllerMessage::kReboot), 0);
  EXPECT_EQ(tester.Count(v1::ControllerMessage::kAssignment), 0);
  run = runs().GetRun(run_id);
  EXPECT_EQ(run->builds(0).state(), "building");
  EXPECT_EQ(run->builds(0).commit(), std::string(40, 'a'));
  EXPECT_EQ(run->builds(0).builder(), "builder-b1");
  EXPECT_EQ(run->builds(0).log_lines(), 2u);

  const artifacts::TestArtifact base = Publish("build-base");
  Succeed(builder, first.task_id(), base);
  ASSERT_EQ(builder.Count(v1::ControllerMessage::kBuild), 2);
  const v1::BuildTask second = *LastBuild(builder);
  EXPECT_EQ(second.rev(), "lab-tip");
  controller_->Tick();
  EXPECT_EQ(tester.Count(v1::ControllerMessage::kReboot), 0) << "the tip is not built yet";

  const artifacts::TestArtifact tip = Publish("build-tip");
  Progress(builder, second.task_id(), std::string(40, 'b'));
  Succeed(builder, second.task_id(), tip);
  controller_->Tick();
  // Built: the testing host is asked to boot the first arm's build, its artifact named.
  ASSERT_EQ(tester.Count(v1::ControllerMessage::kReboot), 1);
  const v1::RebootRequest reboot = tester.sent.back().reboot();
  run = runs().GetRun(run_id);
  EXPECT_EQ(reboot.boot_entry(), run->builds(0).boot_entry());
  EXPECT_EQ(reboot.kernel().artifact_id(), base.id());
  EXPECT_EQ(reboot.kernel().build_id(), "build-base");
  EXPECT_EQ(reboot.kernel().commit(), base.manifest.commit);  // as its BuildComplete said
  // Pinned for the run: eviction cannot take it while the run may boot it.
  bool pinned = false;
  for (const artifacts::ArtifactInfo& info : artifacts_->List()) {
    if (info.id == base.id()) pinned = !info.pins.empty();
  }
  EXPECT_TRUE(pinned);

  // The host comes back on that build: it gets the arm's jobs.
  agents().Unregister(&tester);
  FakeChannel back;
  ASSERT_TRUE(agents().Register(&back, TesterHello("t1", "boot-1", reboot.boot_entry())).ok());
  Idle(back);
  ASSERT_EQ(back.Count(v1::ControllerMessage::kAssignment), 1);
  EXPECT_EQ(back.LastAssignment()->arm(), "base");
  EXPECT_EQ(back.LastAssignment()->boot_entry(), reboot.boot_entry());
}

TEST_F(ControllerBuildsTest, AFailedBuildFailsTheRunNamingTheArmRevisionAndReason) {
  FakeChannel builder, tester;
  ASSERT_TRUE(agents().Register(&builder, BuilderHello("b1")).ok());
  ASSERT_TRUE(agents().Register(&tester, TesterHello("t1", "boot-0")).ok());
  const std::string run_id =
      Submit(Spec("  - {name: base, kernel: {source: linux, rev: lab-base}}\n"
                  "  - {name: tip, kernel: {source: linux, rev: lab-tip}}\n"));
  const v1::BuildTask first = *LastBuild(builder);
  Fail(builder, first.task_id(), v1::BUILD_STATUS_FAILED,
       "make ARCH=x86_64 -j2 all: target mm/memory.o failed (Error 1)");
  absl::StatusOr<v1::Run> run = runs().GetRun(run_id);
  EXPECT_EQ(run->state(), v1::RUN_STATE_FAILED);
  EXPECT_NE(run->error().find("arm base: kernel linux lab-base"), std::string::npos)
      << run->error();
  EXPECT_NE(run->error().find("mm/memory.o"), std::string::npos) << run->error();
  EXPECT_EQ(run->builds(0).state(), "failed");
  EXPECT_EQ(run->builds(1).state(), "cancelled");  // never given to a builder
  EXPECT_EQ(builder.Count(v1::ControllerMessage::kBuild), 1);
  EXPECT_EQ(tester.Count(v1::ControllerMessage::kReboot), 0);
}

TEST_F(ControllerBuildsTest, ARevisionThatDoesNotResolveFailsTheRun) {
  FakeChannel builder;
  ASSERT_TRUE(agents().Register(&builder, BuilderHello("b1")).ok());
  const std::string run_id =
      Submit(Spec("  - {name: base, kernel: {source: linux, rev: no-such-tag}}\n"));
  Fail(builder, LastBuild(builder)->task_id(), v1::BUILD_STATUS_BAD_REVISION,
       "revision no-such-tag does not resolve in source linux");
  absl::StatusOr<v1::Run> run = runs().GetRun(run_id);
  EXPECT_EQ(run->state(), v1::RUN_STATE_FAILED);
  EXPECT_NE(run->error().find("no-such-tag does not resolve"), std::string::npos) << run->error();
}

TEST_F(ControllerBuildsTest, ABuilderThatGoesAwayGivesItsBuildBackAndAnotherTakesIt) {
  FakeChannel b1, b2;
  ASSERT_TRUE(agents().Register(&b1, BuilderHello("b1")).ok());
  const std::string run_id = Submit(Spec("  - {name: base, kernel: {source: linux, rev: v1}}\n"));
  ASSERT_EQ(b1.Count(v1::ControllerMessage::kBuild), 1);
  const int64_t task = LastBuild(b1)->task_id();
  agents().Unregister(&b1);
  absl::StatusOr<v1::Run> run = runs().GetRun(run_id);
  EXPECT_EQ(run->builds(0).state(), "queued");
  EXPECT_NE(run->builds(0).reason().find("stream ended"), std::string::npos);
  ASSERT_TRUE(agents().Register(&b2, BuilderHello("b2")).ok());
  ASSERT_EQ(b2.Count(v1::ControllerMessage::kBuild), 1);
  EXPECT_EQ(LastBuild(b2)->task_id(), task);
  // The first builder's late report is not taken: the build is not its own any more.
  Succeed(b1, task, Publish("late"));
  EXPECT_EQ(runs().GetRun(run_id)->builds(0).state(), "building");
}

TEST_F(ControllerBuildsTest, HostFailuresAreRetriedThenFailTheRun) {
  FakeChannel builder;
  ASSERT_TRUE(agents().Register(&builder, BuilderHello("b1")).ok());
  const std::string run_id = Submit(Spec("  - {name: base, kernel: {source: linux, rev: v1}}\n"));
  for (int attempt = 1; attempt <= store::builds::kMaxBuildAttempts; ++attempt) {
    ASSERT_EQ(builder.Count(v1::ControllerMessage::kBuild), attempt);
    Fail(builder, LastBuild(builder)->task_id(), v1::BUILD_STATUS_HOST_FAILED,
         "disk full (No space left on device) during make");
  }
  absl::StatusOr<v1::Run> run = runs().GetRun(run_id);
  EXPECT_EQ(run->state(), v1::RUN_STATE_FAILED);
  EXPECT_NE(run->error().find("disk full"), std::string::npos) << run->error();
  EXPECT_NE(run->error().find("3 attempts"), std::string::npos) << run->error();
}

TEST_F(ControllerBuildsTest, ACommitBuiltBeforeIsNotBuiltAgain) {
  FakeChannel builder;
  ASSERT_TRUE(agents().Register(&builder, BuilderHello("b1")).ok());
  const std::string first_run =
      Submit(Spec("  - {name: base, kernel: {source: linux, rev: v1}}\n"));
  const artifacts::TestArtifact a = Publish("build-v1");
  const int64_t first = LastBuild(builder)->task_id();
  Progress(builder, first, a.manifest.commit);
  Succeed(builder, first, a);
  // Another run names the same commit by another revision.
  const std::string second_run =
      Submit(Spec("  - {name: again, kernel: {source: linux, rev: v1-tag}}\n"));
  ASSERT_EQ(builder.Count(v1::ControllerMessage::kBuild), 2);
  const int64_t second = LastBuild(builder)->task_id();
  Progress(builder, second, a.manifest.commit);
  // Told to stop, and the build ends with the earlier artifact.
  ASSERT_EQ(builder.Count(v1::ControllerMessage::kCancelBuild), 1);
  EXPECT_EQ(builder.sent.back().cancel_build().task_id(), second);
  absl::StatusOr<v1::Run> run = runs().GetRun(second_run);
  EXPECT_EQ(run->builds(0).state(), "succeeded");
  EXPECT_TRUE(run->builds(0).reused());
  EXPECT_EQ(run->builds(0).artifact_id(), a.id());
}

TEST_F(ControllerBuildsTest, CancellingTheRunStopsItsBuildOnTheBuilder) {
  FakeChannel builder;
  ASSERT_TRUE(agents().Register(&builder, BuilderHello("b1")).ok());
  const std::string run_id = Submit(Spec("  - {name: base, kernel: {source: linux, rev: v1}}\n"));
  const int64_t task = LastBuild(builder)->task_id();
  ASSERT_TRUE(runs().CancelRun(run_id).ok());
  controller_->Tick();
  ASSERT_EQ(builder.Count(v1::ControllerMessage::kCancelBuild), 1);
  EXPECT_EQ(builder.sent.back().cancel_build().task_id(), task);
  EXPECT_EQ(runs().GetRun(run_id)->builds(0).state(), "cancelled");
}

TEST_F(ControllerBuildsTest, ABuildInProgressAtARestartIsQueuedAgainAndTheLogKept) {
  FakeChannel builder;
  ASSERT_TRUE(agents().Register(&builder, BuilderHello("b1")).ok());
  const std::string run_id = Submit(Spec("  - {name: base, kernel: {source: linux, rev: v1}}\n"));
  const int64_t task = LastBuild(builder)->task_id();
  Progress(builder, task, std::string(40, 'c'), {"line 1", "line 2", "line 3"});
  Restart();
  absl::StatusOr<v1::Run> run = runs().GetRun(run_id);
  EXPECT_EQ(run->builds(0).state(), "queued");
  FakeChannel again;
  ASSERT_TRUE(agents().Register(&again, BuilderHello("b1")).ok());
  ASSERT_EQ(again.Count(v1::ControllerMessage::kBuild), 1);
  EXPECT_EQ(LastBuild(again)->task_id(), task);
  absl::StatusOr<v1::GetBuildLogResponse> log = runs().GetBuildLog(task);
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_EQ(log->lines_size(), 3);
  EXPECT_EQ(log->lines(2), "line 3");
  EXPECT_EQ(runs().GetBuildLog(task + 100).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ControllerBuildsTest, ATestingHostThatCannotInstallKernelsFailsTheRunAtOnce) {
  FakeChannel builder, plain;
  ASSERT_TRUE(agents().Register(&builder, BuilderHello("b1")).ok());
  v1::Hello hello = TesterHello("t1", "boot-0");
  hello.mutable_host()->set_can_install_kernels(false);
  ASSERT_TRUE(agents().Register(&plain, hello).ok());
  const std::string run_id = Submit(Spec("  - {name: base, kernel: {source: linux, rev: v1}}\n"));
  controller_->Tick();
  absl::StatusOr<v1::Run> run = runs().GetRun(run_id);
  EXPECT_EQ(run->state(), v1::RUN_STATE_FAILED);
  EXPECT_NE(run->error().find("--kernel-install-command"), std::string::npos) << run->error();
}

}  // namespace
}  // namespace tlbfleet::core

namespace tlbfleet::core {
namespace {

class ControllerGitQueryTest : public ControllerFixture {};

TEST_F(ControllerGitQueryTest, ABuilderAnswersAQuestionAboutItsSourceAndErrorsKeepTheirKind) {
  v1::GitQuery query;
  query.set_source("linux");
  query.set_kind(v1::GitQuery::KIND_RANGE);
  query.set_good("v1");
  query.set_bad("v2");
  // No builder of that source: nobody to ask.
  EXPECT_EQ(runs().QueryGit(query, absl::Milliseconds(50)).status().code(),
            absl::StatusCode::kUnavailable);

  FakeChannel builder;
  ASSERT_TRUE(agents().Register(&builder, BuilderHello("b1")).ok());
  // A builder that answers from another thread, as a gRPC stream would.
  auto answer_next = [&](v1::GitAnswer answer) {
    const int before = builder.Count(v1::ControllerMessage::kGitQuery);
    return std::thread([&, answer, before]() mutable {
      // Count() takes the channel's lock: once it shows the new query, the vector holds it,
      // and nothing else is sent while QueryGit waits.
      for (int i = 0; i < 5000 && builder.Count(v1::ControllerMessage::kGitQuery) == before; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      answer.set_query_id(builder.sent.back().git_query().query_id());
      v1::AgentMessage m;
      *m.mutable_git_answer() = answer;
      agents().OnMessage(&builder, m);
    });
  };
  v1::GitAnswer range;
  range.add_commits()->set_hash(std::string(40, '1'));
  range.add_commits()->set_hash(std::string(40, '2'));
  std::thread t1 = answer_next(range);
  absl::StatusOr<v1::GitAnswer> got = runs().QueryGit(query, absl::Seconds(10));
  t1.join();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->commits_size(), 2);
  EXPECT_EQ(got->commits(1).hash(), std::string(40, '2'));
  EXPECT_EQ(builder.sent.back().git_query().good(), "v1");

  v1::GitAnswer wrong;
  wrong.set_error("good v2 is not an ancestor of bad v1");
  wrong.set_invalid(true);
  std::thread t2 = answer_next(wrong);
  got = runs().QueryGit(query, absl::Seconds(10));
  t2.join();
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(got.status().message().find("not an ancestor"), std::string::npos);

  // A builder that does not answer.
  EXPECT_EQ(runs().QueryGit(query, absl::Milliseconds(50)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
}

}  // namespace
}  // namespace tlbfleet::core

namespace tlbfleet::core {
namespace {

TEST_F(ControllerBuildsTest, AHostThatKeepsComingBackOffTheBuildFailsTheRunInsteadOfLooping) {
  FakeChannel builder;
  ASSERT_TRUE(agents().Register(&builder, BuilderHello("b1")).ok());
  const std::string run_id = Submit(Spec("  - {name: base, kernel: {source: linux, rev: v1}}\n"));
  const artifacts::TestArtifact a = Publish("build-v1");
  Succeed(builder, LastBuild(builder)->task_id(), a);
  // The host reboots as asked each time, but its agent never reports the build's entry (as a
  // lab guest that loses its state does).
  int reboots = 0;
  for (int boot = 0; boot < 10; ++boot) {
    FakeChannel tester;
    ASSERT_TRUE(agents().Register(&tester, TesterHello("t1", "boot-" + std::to_string(boot))).ok());
    Idle(tester);
    controller_->Tick();
    reboots += tester.Count(v1::ControllerMessage::kReboot);
    EXPECT_EQ(tester.Count(v1::ControllerMessage::kAssignment), 0);
    agents().Unregister(&tester);
    if (runs().GetRun(run_id)->state() == v1::RUN_STATE_FAILED) break;
  }
  absl::StatusOr<v1::Run> run = runs().GetRun(run_id);
  EXPECT_EQ(run->state(), v1::RUN_STATE_FAILED);
  EXPECT_EQ(reboots, 1 + static_cast<int>(store::boot_requests::kMaxEntryMisses) - 1)
      << "asked once, then again after each miss until the last";
  EXPECT_NE(run->error().find("host host-t1 was asked 3 times to boot entry kernel-"),
            std::string::npos)
      << run->error();
  EXPECT_NE(run->error().find("came back each time on another (no entry)"), std::string::npos);
}

}  // namespace
}  // namespace tlbfleet::core

namespace tlbfleet::core {
namespace {

// With ControllerOptions::resolve_at_submit (the controller binary's default), a revision is
// asked of a connected builder at submit: one that does not resolve is refused naming the
// field, with nothing queued; a builder that does not answer in time leaves it to the build.
class ControllerResolveAtSubmitTest : public ControllerBuildsTest {
 protected:
  void SetUp() override {
    options_.resolve_at_submit = absl::Milliseconds(300);
    ControllerBuildsTest::SetUp();
  }
};

TEST_F(ControllerResolveAtSubmitTest, ARevisionThatDoesNotResolveIsRefusedAtSubmitNamingTheField) {
  FakeChannel builder;
  ASSERT_TRUE(agents().Register(&builder, BuilderHello("b1")).ok());
  FakeChannel tester;
  ASSERT_TRUE(agents().Register(&tester, TesterHello("t1", "boot-0")).ok());
  // The builder's answers, from another thread as its stream would give them: the first
  // revision resolves, the second does not.
  std::thread answers([&] {
    for (int answered = 0; answered < 2;) {
      for (int i = 0; i < 5000 && builder.Count(v1::ControllerMessage::kGitQuery) == answered;
           ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      if (builder.Count(v1::ControllerMessage::kGitQuery) == answered) return;
      const v1::GitQuery q = builder.sent.back().git_query();
      v1::AgentMessage m;
      m.mutable_git_answer()->set_query_id(q.query_id());
      if (q.rev() == "lab-base") {
        m.mutable_git_answer()->set_resolved(std::string(40, 'a'));
      } else {
        m.mutable_git_answer()->set_invalid(true);
        m.mutable_git_answer()->set_error(
            absl::StrCat("revision \"", q.rev(), "\" does not resolve in /src/linux"));
      }
      agents().OnMessage(&builder, m);
      ++answered;
    }
  });
  absl::StatusOr<v1::SubmitRunResponse> refused =
      runs().Submit(Spec("  - {name: base, kernel: {source: linux, rev: lab-base}}\n"
                         "  - {name: tip, kernel: {source: linux, rev: no-such-tag}}\n"),
                    "s.yaml");
  answers.join();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().message(),
            "arms[1].kernel.rev: revision \"no-such-tag\" does not resolve in /src/linux");
  EXPECT_EQ(runs().ListRuns({})->runs_size(), 0);
  EXPECT_EQ(builder.Count(v1::ControllerMessage::kBuild), 0);

  // A builder that does not answer within the wait: the run is taken, its build resolves.
  absl::StatusOr<v1::SubmitRunResponse> taken =
      runs().Submit(Spec("  - {name: base, kernel: {source: linux, rev: lab-base}}\n"), "s.yaml");
  ASSERT_TRUE(taken.ok()) << taken.status();
}

TEST_F(ControllerBuildsTest, ABuildNoHostCanBootIsRefusedNamingTheField) {
  FakeChannel builder;
  v1::Hello arm64 = BuilderHello("b1");
  arm64.mutable_host()->mutable_kernel_sources(0)->set_arch("aarch64");
  ASSERT_TRUE(agents().Register(&builder, arm64).ok());
  FakeChannel tester;
  ASSERT_TRUE(agents().Register(&tester, TesterHello("t1", "boot-0")).ok());
  absl::StatusOr<v1::SubmitRunResponse> refused =
      runs().Submit(Spec("  - {name: base, kernel: {source: linux, rev: lab-base}}\n"), "s.yaml");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().message(),
            "arms[0].kernel.source: builds of linux are aarch64 and no host that can install "
            "kernels is (they are x86_64)");
  EXPECT_EQ(runs().ListRuns({})->runs_size(), 0);
}

}  // namespace
}  // namespace tlbfleet::core

namespace tlbfleet::core {
namespace {

// A builder told to stop a build (its commit was built before) is busy until it says that
// build ended: the run's next build waits for that, instead of being refused "busy" three
// times and failing the run (found by the lab's commit bisection).
TEST_F(ControllerBuildsTest, AStoppedBuildKeepsItsBuilderBusyUntilItSaysItEnded) {
  FakeChannel builder;
  ASSERT_TRUE(agents().Register(&builder, BuilderHello("b1")).ok());
  Submit(Spec("  - {name: base, kernel: {source: linux, rev: v1}}\n"));
  const artifacts::TestArtifact a = Publish("build-v1");
  const int64_t first = LastBuild(builder)->task_id();
  Progress(builder, first, a.manifest.commit);
  Succeed(builder, first, a);
  // v1 again (built before) and v2 (new): one builder.
  Submit(
      Spec("  - {name: old, kernel: {source: linux, rev: v1}}\n"
           "  - {name: new, kernel: {source: linux, rev: v2}}\n"));
  ASSERT_EQ(builder.Count(v1::ControllerMessage::kBuild), 2);
  const int64_t reused = LastBuild(builder)->task_id();
  Progress(builder, reused, a.manifest.commit);
  ASSERT_EQ(builder.Count(v1::ControllerMessage::kCancelBuild), 1);
  // Still stopping: v2's build is not sent yet.
  controller_->Tick();
  EXPECT_EQ(builder.Count(v1::ControllerMessage::kBuild), 2);
  Fail(builder, reused, v1::BUILD_STATUS_CANCELLED, "cancelled by the controller");
  controller_->Tick();
  ASSERT_EQ(builder.Count(v1::ControllerMessage::kBuild), 3);
  EXPECT_EQ(LastBuild(builder)->rev(), "v2");
}

}  // namespace
}  // namespace tlbfleet::core
