// A run's build stage (arms with `kernel:`, docs/kernels.md "Revisions as arms"): how a kernel
// revision and a build are said, and the builds as the page shows them live: the run's
// KernelBuild rows (GET /runs/{id}) with the BuildEvents of its event stream folded over them.
import type { KernelRevision } from "../api/gen/tlbfleet/v1/common";
import type { BuildEvent, KernelBuild } from "../api/gen/tlbfleet/v1/fleet";

/** Lines of a build's log the page keeps on screen (the run gives the last 20). */
export const BUILD_TAIL_LIMIT = 50;

/** "kernel linux lab-base", "kernel linux lab-tip with 1a2b3c4d5e6f reverted". */
export function kernelText(k: KernelRevision): string {
  const revert = k.revert ? ` with ${shortCommit(k.revert)} reverted` : "";
  return `kernel ${k.source} ${k.rev}${revert}`;
}

/** A git hash as the CLI prints it: 12 hex. */
export function shortCommit(commit: string): string {
  return commit.slice(0, 12);
}

/** A build id as the boot's `tlbfleet.build=` word carries it: 16 hex. */
export function shortBuildId(buildId: string): string {
  return buildId.slice(0, 16);
}

/** "queued", "building on vm-builder", "succeeded", "failed", "cancelled". */
export function buildStateText(state: string, builder: string): string {
  if (state === "building") return builder ? `building on ${builder}` : "building";
  return state || "queued";
}

/** The class of the state badge (the run states' colours; building is running). */
export function buildStateClass(state: string): string {
  return `state state-${state === "building" ? "running" : state || "queued"}`;
}

/** "1,204 log lines", "1 log line", "no log yet". */
export function logSizeText(lines: number): string {
  if (lines <= 0) return "no log yet";
  return `${lines.toLocaleString("en")} log line${lines === 1 ? "" : "s"}`;
}

/** What the events of the stream said about one build since the page opened it. */
export interface LiveBuild {
  taskId: number;
  arm: string;
  state: string;
  commit: string;
  reason: string;
  /** The last BUILD_TAIL_LIMIT lines the events carried, oldest first. */
  tail: string[];
  /** Log lines the events carried (a stream replayed from the run's start: all of them). */
  lines: number;
}

/**
 * The live builds after `e` (the array and its entries are not modified: Preact state).
 * Each BuildEvent carries the build's state, commit and reason as they are now, and the log
 * lines written since the one before.
 */
export function applyBuildEvent(builds: readonly LiveBuild[], e: BuildEvent): LiveBuild[] {
  const before = builds.find((b) => b.taskId === e.taskId);
  const tail = [...(before?.tail ?? []), ...e.logLines].slice(-BUILD_TAIL_LIMIT);
  const next: LiveBuild = {
    taskId: e.taskId,
    arm: e.arm || before?.arm || "",
    state: e.state || before?.state || "",
    commit: e.commit || before?.commit || "",
    // A build queued again after a failed attempt has a new reason, or none.
    reason: e.reason,
    tail,
    lines: (before?.lines ?? 0) + e.logLines.length,
  };
  return before ? builds.map((b) => (b === before ? next : b)) : [...builds, next];
}

/**
 * One build as the page shows it: the run's row (builder, subject, build id, release, reused:
 * what only a read of the run gives), with what the events said since (state, commit, reason,
 * the log's tail and size), which is at least as new. Builds the run does not list yet (an
 * event before the run was read again) are shown from their events.
 */
export function mergeBuilds(
  fromRun: readonly KernelBuild[],
  live: readonly LiveBuild[],
): KernelBuild[] {
  const out = fromRun.map((b) => {
    const l = live.find((x) => x.taskId === b.taskId);
    if (!l) return b;
    return {
      ...b,
      state: l.state || b.state,
      commit: l.commit || b.commit,
      reason: l.state ? l.reason : b.reason,
      // The events' tail when they carried any lines: it is the newer, and the longer.
      logTail: l.lines > 0 ? l.tail : b.logTail,
      logLines: Math.max(b.logLines, l.lines),
    };
  });
  for (const l of live) {
    if (fromRun.some((b) => b.taskId === l.taskId)) continue;
    out.push({
      taskId: l.taskId,
      arm: l.arm,
      kernel: undefined,
      state: l.state,
      commit: l.commit,
      subject: "",
      author: "",
      builder: "",
      artifactId: "",
      buildId: "",
      kernelRelease: "",
      bootEntry: "",
      reason: l.reason,
      logLines: l.lines,
      logTail: l.tail,
      startedUnixMs: 0,
      finishedUnixMs: 0,
      reused: false,
    });
  }
  return out;
}

/**
 * True when an event tells the page something only a read of the run gives: the build changed
 * state (who builds it, its build id and release, whether it was built before), or the run
 * does not know the build yet.
 */
export function buildEventNeedsRun(fromRun: readonly KernelBuild[], e: BuildEvent): boolean {
  const b = fromRun.find((x) => x.taskId === e.taskId);
  if (!b) return true;
  return e.state !== "" && e.state !== b.state;
}

/** One line of the run's event log for a build event that changed its state; else undefined. */
export function describeBuildEvent(
  before: LiveBuild | undefined,
  e: BuildEvent,
): { text: string; tone: "info" | "good" | "bad" } | undefined {
  if (!e.state || before?.state === e.state) return undefined;
  const commit = e.commit ? ` (${shortCommit(e.commit)})` : "";
  const reason = e.reason ? `: ${e.reason}` : "";
  const tone = e.state === "succeeded" ? "good" : e.state === "failed" ? "bad" : "info";
  return { text: `kernel build of arm ${e.arm}${commit}: ${e.state}${reason}`, tone };
}
