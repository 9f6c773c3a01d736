// Live progress of a run, folded from its RunEvents (SSE): the run's job counts and samples,
// jobs by state per host, reboots, adaptive rounds, hosts gone silent, its kernel builds, the
// stop reason, and a short log.
import {
  JobState,
  RebootEvent_Kind,
  RunState,
  SlotHostEvent_Kind,
  type JobCounts,
  type RunEvent,
} from "../api/gen/tlbfleet/v1/fleet";
import { applyBuildEvent, describeBuildEvent, type LiveBuild } from "./builds";
import { formatDuration, jobStateName, runStateName, sweepLabel } from "./format";
import { describeSlotHost } from "./lost-hosts";

export interface HostProgress {
  host: string;
  agentId: string;
  counts: Record<"running" | "succeeded" | "failed" | "cancelled" | "requeued", number>;
  /** What the host runs now, e.g. "mmap threads=2 iteration 3 (boot 1)". */
  current: string;
  rebooting: boolean;
  /** Since when the controller has not heard from it while a slot of it has work; 0 = heard. */
  silentSinceMs: number;
}

export interface LogLine {
  id: number;
  timeMs: number;
  text: string;
  tone: "info" | "good" | "bad";
}

export interface Progress {
  lastEventId: number;
  jobs: JobCounts | undefined;
  samples: number;
  state: RunState | undefined;
  reason: string;
  hosts: HostProgress[];
  reboots: number;
  adaptiveRounds: number;
  /** Newest last; at most LOG_LIMIT lines. */
  log: LogLine[];
  /** job id -> last state and host key, to move a job between hosts' counts. */
  jobStates: Map<number, { state: JobState; host: string }>;
  /** The run's kernel builds as their events tell them (state, commit, the log's tail). */
  builds: LiveBuild[];
}

export const LOG_LIMIT = 200;

export function emptyProgress(): Progress {
  return {
    lastEventId: 0,
    jobs: undefined,
    samples: 0,
    state: undefined,
    reason: "",
    hosts: [],
    reboots: 0,
    adaptiveRounds: 0,
    log: [],
    jobStates: new Map(),
    builds: [],
  };
}

function countKey(state: JobState): keyof HostProgress["counts"] | undefined {
  switch (state) {
    case JobState.JOB_STATE_RUNNING:
      return "running";
    case JobState.JOB_STATE_SUCCEEDED:
      return "succeeded";
    case JobState.JOB_STATE_FAILED:
      return "failed";
    case JobState.JOB_STATE_CANCELLED:
      return "cancelled";
    case JobState.JOB_STATE_QUEUED:
      return "requeued";
    default:
      return undefined;
  }
}

function hostEntry(hosts: HostProgress[], host: string, agentId: string): HostProgress {
  let h = hosts.find((x) => x.host === host);
  if (!h) {
    h = {
      host,
      agentId,
      counts: { running: 0, succeeded: 0, failed: 0, cancelled: 0, requeued: 0 },
      current: "",
      rebooting: false,
      silentSinceMs: 0,
    };
    hosts.push(h);
  }
  return h;
}

/** One log line for an event (also read by screen readers in the live region). */
export function describeEvent(e: RunEvent): { text: string; tone: LogLine["tone"] } {
  if (e.state) {
    const reason = e.state.reason ? `: ${e.state.reason}` : "";
    const tone =
      e.state.state === RunState.RUN_STATE_FAILED
        ? "bad"
        : e.state.state === RunState.RUN_STATE_SUCCEEDED
          ? "good"
          : "info";
    return { text: `run ${runStateName(e.state.state)}${reason}`, tone };
  }
  if (e.job) {
    const j = e.job;
    const what = [j.arm, sweepLabel(j.paramName, j.paramValue), `iteration ${j.iteration}`]
      .filter((s) => s !== "")
      .join(" ");
    const boot = j.bootIndex > 0 ? ` (boot ${j.bootIndex})` : "";
    const host = j.hostname || j.agentId;
    switch (j.state) {
      case JobState.JOB_STATE_RUNNING:
        return { text: `${host}: started ${what}${boot}`, tone: "info" };
      case JobState.JOB_STATE_SUCCEEDED:
        return {
          text: `${host}: finished ${what}${boot}, ${j.samples} samples in ${formatDuration(j.elapsedSeconds)}`,
          tone: "good",
        };
      case JobState.JOB_STATE_QUEUED:
        return { text: `${host}: ${what} back in the queue: ${j.reason}`, tone: "bad" };
      default:
        return {
          text: `${host}: ${what}${boot} ${jobStateName(j.state)}${j.reason ? `: ${j.reason}` : ""}`,
          tone: "bad",
        };
    }
  }
  if (e.adaptive) {
    const a = e.adaptive;
    return {
      text: `adaptive round ${a.round}: ${a.decision} (now ${a.iterationsPerBoot} iterations × ${a.boots} boots)`,
      tone: "info",
    };
  }
  if (e.reboot) {
    const r = e.reboot;
    const host = r.hostname || r.agentId;
    switch (r.kind) {
      case RebootEvent_Kind.KIND_REQUESTED:
        return {
          text: `${host}: reboot requested${r.reason ? ` (${r.reason})` : ""}`,
          tone: "info",
        };
      case RebootEvent_Kind.KIND_COMPLETED:
        return { text: `${host}: back on boot ${r.toBootId.slice(0, 8)}`, tone: "good" };
      default:
        return { text: `${host}: reboot failed: ${r.reason}`, tone: "bad" };
    }
  }
  if (e.slotHost) return describeSlotHost(e.slotHost);
  if (e.build) {
    return (
      describeBuildEvent(undefined, e.build) ?? {
        text: `kernel build of arm ${e.build.arm}: ${e.build.logLines.length} log lines`,
        tone: "info",
      }
    );
  }
  return { text: "progress", tone: "info" };
}

/** The progress after `e`; `p` is not modified (Preact state). */
export function applyEvent(p: Progress, e: RunEvent): Progress {
  const next: Progress = {
    ...p,
    hosts: p.hosts.map((h) => ({ ...h, counts: { ...h.counts } })),
    jobStates: new Map(p.jobStates),
  };
  next.lastEventId = Math.max(p.lastEventId, e.id);
  if (e.jobs) next.jobs = e.jobs;
  next.samples = Math.max(p.samples, e.samples);
  if (e.state) {
    next.state = e.state.state;
    next.reason = e.state.reason;
    if (
      e.state.state !== RunState.RUN_STATE_RUNNING &&
      e.state.state !== RunState.RUN_STATE_QUEUED
    ) {
      for (const h of next.hosts) h.current = "";
    }
  }
  if (e.job) {
    const j = e.job;
    const key = j.hostname || j.agentId || "(no host)";
    const before = next.jobStates.get(j.jobId);
    if (before) {
      const old = countKey(before.state);
      const h = next.hosts.find((x) => x.host === before.host);
      // Lost leases stay counted: "requeued" is how often the host lost a job.
      if (h && old && old !== "requeued" && h.counts[old] > 0) h.counts[old] -= 1;
    }
    const h = hostEntry(next.hosts, key, j.agentId);
    const k = countKey(j.state);
    if (k) h.counts[k] += 1;
    next.jobStates.set(j.jobId, { state: j.state, host: key });
    h.rebooting = false;
    // A job it started or finished is word from it; a lease that expired is not.
    if (j.state === JobState.JOB_STATE_RUNNING || j.state === JobState.JOB_STATE_SUCCEEDED) {
      h.silentSinceMs = 0;
    }
    h.current =
      j.state === JobState.JOB_STATE_RUNNING
        ? [j.arm, sweepLabel(j.paramName, j.paramValue), `iteration ${j.iteration}`]
            .filter((s) => s !== "")
            .join(" ")
        : "";
  }
  if (e.adaptive) next.adaptiveRounds = Math.max(p.adaptiveRounds, e.adaptive.round);
  if (e.reboot) {
    const r = e.reboot;
    const h = hostEntry(next.hosts, r.hostname || r.agentId, r.agentId);
    if (r.kind === RebootEvent_Kind.KIND_REQUESTED) {
      next.reboots += 1;
      h.rebooting = true;
    } else h.rebooting = false;
  }
  if (e.slotHost) {
    const s = e.slotHost;
    const h = hostEntry(next.hosts, s.hostname || s.agentId, s.agentId);
    if (s.kind === SlotHostEvent_Kind.KIND_SILENT) {
      h.silentSinceMs = s.silentSinceUnixMs || e.timeUnixMs;
    } else if (s.kind === SlotHostEvent_Kind.KIND_RETURNED) {
      h.silentSinceMs = 0;
    } else if (s.kind === SlotHostEvent_Kind.KIND_RESTARTED) {
      // Its slot went to another host: whatever it was running is not its any more.
      h.current = "";
    }
  }
  const build = e.build;
  if (build) {
    const before = p.builds.find((b) => b.taskId === build.taskId);
    next.builds = applyBuildEvent(p.builds, build);
    // Log batches are shown with their build, not here: only a change of state is a line.
    const line = describeBuildEvent(before, build);
    if (line) {
      next.log = [...p.log, { id: e.id, timeMs: e.timeUnixMs, ...line }].slice(-LOG_LIMIT);
    }
    return next;
  }
  const line = describeEvent(e);
  next.log = [...p.log, { id: e.id, timeMs: e.timeUnixMs, ...line }].slice(-LOG_LIMIT);
  return next;
}
