// A run's kernel builds (issue 21): how a revision and a build are said, BuildEvents folded
// into the live builds (state, commit, the log's last 50 lines), merged with the run's rows,
// and when an event means the run must be read again.
import { describe, expect, it } from "vitest";
import { KernelRevision } from "../api/gen/tlbfleet/v1/common";
import { BuildEvent, Run, RunEvent } from "../api/gen/tlbfleet/v1/fleet";
import {
  BUILD_TAIL_LIMIT,
  applyBuildEvent,
  buildEventNeedsRun,
  buildStateClass,
  buildStateText,
  describeBuildEvent,
  kernelText,
  logSizeText,
  mergeBuilds,
  shortBuildId,
  shortCommit,
  type LiveBuild,
} from "./builds";
import { applyEvent, emptyProgress } from "./progress";
import { BUILD_ID_BASE, BUILDING_RUN_JSON, COMMIT_BASE, COMMIT_TIP } from "./testdata/builds";

const run = () => Run.fromJSON(BUILDING_RUN_JSON);
const buildEvent = (json: Record<string, unknown>) => BuildEvent.fromJSON(json);
const lines = (from: number, count: number) =>
  Array.from({ length: count }, (_, i) => `line ${from + i}`);

describe("the words for a kernel build", () => {
  it("name the source and revision, and a revert by its short hash", () => {
    expect(kernelText(KernelRevision.fromJSON({ source: "linux", rev: "lab-base" }))).toBe(
      "kernel linux lab-base",
    );
    expect(
      kernelText(
        KernelRevision.fromJSON({
          source: "linux",
          rev: "lab-tip~3",
          config: "lab",
          revert: COMMIT_BASE,
        }),
      ),
    ).toBe("kernel linux lab-tip~3 with 0f1e2d3c4b5a reverted");
  });

  it("say the state, with the builder while it builds", () => {
    expect(buildStateText("queued", "")).toBe("queued");
    expect(buildStateText("building", "vm-builder")).toBe("building on vm-builder");
    expect(buildStateText("building", "")).toBe("building");
    expect(buildStateText("succeeded", "vm-builder")).toBe("succeeded");
    expect(buildStateText("failed", "vm-builder")).toBe("failed");
    expect(buildStateText("cancelled", "")).toBe("cancelled");
    expect(buildStateText("", "")).toBe("queued");
    expect(buildStateClass("building")).toBe("state state-running");
    expect(buildStateClass("failed")).toBe("state state-failed");
  });

  it("shorten hashes as the CLI does and count log lines", () => {
    expect(shortCommit(COMMIT_TIP)).toBe("a1b2c3d4e5f6");
    expect(shortBuildId("5e1f0c7a9b3d2e4f60718293")).toBe("5e1f0c7a9b3d2e4f");
    expect(logSizeText(0)).toBe("no log yet");
    expect(logSizeText(1)).toBe("1 log line");
    expect(logSizeText(1204)).toBe("1,204 log lines");
  });
});

describe("the run's builds from its JSON", () => {
  it("decodes proto3 JSON names and int64 strings", () => {
    const [base, fix] = run().builds;
    expect(base).toMatchObject({
      taskId: 11,
      arm: "base",
      state: "succeeded",
      buildId: BUILD_ID_BASE,
      kernelRelease: "6.8.0-lab+",
      logLines: 3,
      reused: true,
    });
    expect(base!.logTail).toHaveLength(3);
    expect(fix!.kernel).toEqual({
      source: "linux",
      rev: "lab-tip",
      config: "lab",
      revert: COMMIT_BASE,
      branch: "",
    });
    expect(fix!.logLines).toBe(1204);
    expect(fix!.startedUnixMs).toBe(1768439600000);
  });
});

describe("applyBuildEvent", () => {
  it("keeps the last 50 lines, counts them all, and takes the event's state and commit", () => {
    let live: LiveBuild[] = [];
    live = applyBuildEvent(live, buildEvent({ taskId: "12", arm: "fix", state: "building" }));
    expect(live).toEqual([
      { taskId: 12, arm: "fix", state: "building", commit: "", reason: "", tail: [], lines: 0 },
    ]);
    const before = live;
    live = applyBuildEvent(
      live,
      buildEvent({ taskId: "12", arm: "fix", state: "building", logLines: lines(1, 30) }),
    );
    expect(before[0]!.tail).toEqual([]); // not modified
    live = applyBuildEvent(
      live,
      buildEvent({
        taskId: "12",
        arm: "fix",
        state: "building",
        commit: COMMIT_TIP,
        logLines: lines(31, 40),
      }),
    );
    expect(live).toHaveLength(1);
    expect(live[0]!.lines).toBe(70);
    expect(live[0]!.tail).toHaveLength(BUILD_TAIL_LIMIT);
    expect(live[0]!.tail[0]).toBe("line 21");
    expect(live[0]!.tail.at(-1)).toBe("line 70");
    expect(live[0]!.commit).toBe(COMMIT_TIP);

    // Another build is a row of its own; the first keeps what it had.
    live = applyBuildEvent(live, buildEvent({ taskId: "11", arm: "base", state: "queued" }));
    expect(live.map((b) => b.taskId)).toEqual([12, 11]);
    live = applyBuildEvent(
      live,
      buildEvent({ taskId: "12", arm: "fix", state: "failed", reason: "make: *** [vmlinux] 2" }),
    );
    expect(live[0]).toMatchObject({ state: "failed", reason: "make: *** [vmlinux] 2", lines: 70 });
  });
});

describe("mergeBuilds", () => {
  it("shows the run's rows as read when no event came", () => {
    const r = run();
    expect(mergeBuilds(r.builds, [])).toEqual(r.builds);
  });

  it("takes state, commit, reason and the log from the events, the rest from the run", () => {
    const r = run();
    const live = applyBuildEvent(
      [],
      buildEvent({
        taskId: "12",
        arm: "fix",
        state: "failed",
        commit: COMMIT_TIP,
        reason: "the build failed: make bzImage",
        logLines: ["  CC kernel/exit.o", "error: foo"],
      }),
    );
    const [base, fix] = mergeBuilds(r.builds, live);
    expect(base).toEqual(r.builds[0]);
    expect(fix).toMatchObject({
      state: "failed",
      reason: "the build failed: make bzImage",
      builder: "vm-builder",
      subject: "x86/mm: flush fewer pages",
      logTail: ["  CC kernel/exit.o", "error: foo"],
      logLines: 1204, // the run's count: the events since the page opened are fewer
    });
  });

  it("keeps the run's tail while the events carried no lines, and lists a build it lacks", () => {
    const r = run();
    const live = applyBuildEvent([], buildEvent({ taskId: "12", arm: "fix", state: "building" }));
    expect(mergeBuilds(r.builds, live)[1]!.logTail).toEqual(r.builds[1]!.logTail);
    const extra = applyBuildEvent(
      [],
      buildEvent({ taskId: "13", arm: "other", state: "queued", logLines: ["x"] }),
    );
    const merged = mergeBuilds(r.builds, extra);
    expect(merged).toHaveLength(3);
    expect(merged[2]).toMatchObject({ taskId: 13, arm: "other", state: "queued", logLines: 1 });
  });
});

describe("buildEventNeedsRun", () => {
  it("is true for a change of state or an unknown build, false for a log batch", () => {
    const builds = run().builds;
    expect(buildEventNeedsRun(builds, buildEvent({ taskId: "12", state: "building" }))).toBe(false);
    expect(buildEventNeedsRun(builds, buildEvent({ taskId: "12", state: "succeeded" }))).toBe(true);
    expect(buildEventNeedsRun(builds, buildEvent({ taskId: "99", state: "queued" }))).toBe(true);
  });
});

describe("build events in the run's progress", () => {
  const ev = (id: number, build: Record<string, unknown>) =>
    RunEvent.fromJSON({ id: String(id), timeUnixMs: String(1000 * id), build });

  it("log a line when a build changes state, not for each batch of its log", () => {
    let p = emptyProgress();
    p = applyEvent(p, ev(1, { taskId: "12", arm: "fix", state: "building" }));
    p = applyEvent(p, ev(2, { taskId: "12", arm: "fix", state: "building", logLines: ["a"] }));
    p = applyEvent(
      p,
      ev(3, { taskId: "12", arm: "fix", state: "building", commit: COMMIT_TIP, logLines: ["b"] }),
    );
    p = applyEvent(
      p,
      ev(4, {
        taskId: "12",
        arm: "fix",
        state: "failed",
        commit: COMMIT_TIP,
        reason: "does not build",
      }),
    );
    expect(p.log.map((l) => [l.id, l.text, l.tone])).toEqual([
      [1, "kernel build of arm fix: building", "info"],
      [4, "kernel build of arm fix (a1b2c3d4e5f6): failed: does not build", "bad"],
    ]);
    expect(p.builds[0]).toMatchObject({ state: "failed", tail: ["a", "b"], lines: 2 });
    expect(p.lastEventId).toBe(4);
  });

  it("describe a change of state only", () => {
    const e = buildEvent({ taskId: "11", arm: "base", state: "succeeded", commit: COMMIT_BASE });
    expect(describeBuildEvent(undefined, e)).toEqual({
      text: "kernel build of arm base (0f1e2d3c4b5a): succeeded",
      tone: "good",
    });
    const [same] = applyBuildEvent([], e);
    expect(describeBuildEvent(same, e)).toBeUndefined();
  });
});
