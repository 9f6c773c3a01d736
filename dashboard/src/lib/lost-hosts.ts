// Lost hosts as the pages say them (issue 26): a run's slots waiting for a silent host, the
// policy in force, work measured again, a host that runs wait for, and the slot-host events
// of the live log. Words and elapsed time only: what is silent, left out or measured again is
// the controller's to decide (controller/core/lost_hosts.cc, store/slots.cc); the browser
// renders its messages and counts the seconds since `silent_since_unix_ms`.
import type { HostLostPolicy } from "../api/gen/tlbfleet/v1/common";
import {
  SlotHostEvent_Kind,
  type AbandonedWork,
  type Host,
  type LostHost,
  type Run,
  type SlotHostEvent,
} from "../api/gen/tlbfleet/v1/fleet";

/** The first 8 characters of an agent or machine id, as the controller's messages show it. */
export function shortId(id: string): string {
  return id.slice(0, 8);
}

/**
 * "vm1 (agent 0d60fd02, machine 4c4c4544)", "agent 0d60fd02" without a hostname: a host as
 * the controller's messages name it (core::HostLabel).
 */
export function hostLabel(hostname: string, agentId: string, machineId = ""): string {
  let ids = `agent ${shortId(agentId)}`;
  if (machineId) ids += `, machine ${shortId(machineId)}`;
  return hostname ? `${hostname} (${ids})` : ids;
}

/** "90 s" -> "1 min 30 s", "30 min", "2 h", "1 h 30 min" (scheduler::FormatSeconds). */
export function formatSeconds(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return `${s} s`;
  const minutes = Math.floor(s / 60);
  if (minutes < 60) return s % 60 === 0 ? `${minutes} min` : `${minutes} min ${s % 60} s`;
  const hours = Math.floor(minutes / 60);
  return minutes % 60 === 0 ? `${hours} h` : `${hours} h ${minutes % 60} min`;
}

/** "01:12:36 UTC", with the date when it is not today's in UTC (core::ClockTime). */
export function clockTime(unixMs: number, nowMs: number): string {
  const iso = new Date(unixMs).toISOString();
  const sameDay = iso.slice(0, 10) === new Date(nowMs).toISOString().slice(0, 10);
  return `${sameDay ? "" : `${iso.slice(0, 10)} `}${iso.slice(11, 19)} UTC`;
}

/** Whole seconds from `sinceMs` to `nowMs`, never negative (a clock a little ahead). */
export function elapsedSeconds(sinceMs: number, nowMs: number): number {
  if (!sinceMs) return 0;
  return Math.max(0, Math.floor((nowMs - sinceMs) / 1000));
}

/** The policy in force, for the run's facts. */
export function policyText(policy: HostLostPolicy | undefined): string {
  if (!policy || !policy.action) return "—";
  const after = formatSeconds(policy.afterSeconds);
  switch (policy.action) {
    case "wait":
      return "wait for the host, however long it is silent";
    case "fail":
      return `fail the run when a slot's host is silent for ${after}`;
    case "restart":
      return `restart the slot on another host when its host is silent for ${after} (its samples kept, left out of comparisons)`;
    default:
      return `${policy.action} after ${after}`;
  }
}

/**
 * How long a waiting slot's host has been silent, now: "silent for 5 min 12 s of 30 min, then
 * restart", or "silent for 5 min 12 s" under wait; "gone for …" while it reboots.
 */
export function silentForText(wait: LostHost, nowMs: number): string {
  const gone = formatSeconds(elapsedSeconds(wait.silentSinceUnixMs, nowMs));
  const what = wait.rebooting ? `rebooting, gone for ${gone}` : `silent for ${gone}`;
  if (wait.action === "wait" || !wait.action) return what;
  return `${what} of ${formatSeconds(wait.afterSeconds)}, then ${wait.action}`;
}

/** What was measured again, in a few words: "slot 0, whole slot" or "slot 1, boot 2". */
export function abandonedWhat(w: AbandonedWork): string {
  if (w.bootIndex < 0) return `slot ${w.slot}, from its first job`;
  return `slot ${w.slot}, boot ${w.bootIndex + 1}`;
}

/** "3 jobs, 120 samples kept, left out of comparisons". */
export function abandonedCounts(w: { jobs: number; samples: number }): string {
  const jobs = `${w.jobs} job${w.jobs === 1 ? "" : "s"}`;
  const samples = `${w.samples.toLocaleString("en")} sample${w.samples === 1 ? "" : "s"}`;
  return `${jobs}, ${samples} kept, left out of comparisons`;
}

export interface WaitedOn {
  /** The runs waiting for the host, in the controller's order, each once. */
  runIds: string[];
  /** The earliest silence among them (they are the same host: usually one time). */
  sinceMs: number;
  rebooting: boolean;
}

/** The runs that wait for this silent host, or undefined when none does. */
export function waitedOn(host: Host): WaitedOn | undefined {
  if (host.waitedOnBy.length === 0) return undefined;
  const runIds: string[] = [];
  let sinceMs = 0;
  let rebooting = false;
  for (const r of host.waitedOnBy) {
    if (!runIds.includes(r.runId)) runIds.push(r.runId);
    const since = r.wait?.silentSinceUnixMs ?? 0;
    if (since && (!sinceMs || since < sinceMs)) sinceMs = since;
    rebooting ||= r.wait?.rebooting ?? false;
  }
  return { runIds, sinceMs, rebooting };
}

/** "run 3 waits for it" / "runs 3, 7 wait for it", the words around the run links. */
export function waitedOnWords(w: WaitedOn): { lead: string; tail: string } {
  const one = w.runIds.length === 1;
  return { lead: one ? "run" : "runs", tail: one ? "waits for it" : "wait for it" };
}

/** The log line of a slot-host event: the controller's message, or words of our own. */
export function describeSlotHost(e: SlotHostEvent): {
  text: string;
  tone: "info" | "good" | "bad";
} {
  const host = hostLabel(e.hostname, e.agentId, e.machineId);
  const tone = e.kind === SlotHostEvent_Kind.KIND_RETURNED ? "good" : "bad";
  if (e.message) return { text: e.message, tone };
  switch (e.kind) {
    case SlotHostEvent_Kind.KIND_SILENT:
      return {
        text: `${host} went silent with work left in slot ${e.slot}${e.action ? ` (on_host_lost: ${e.action})` : ""}`,
        tone,
      };
    case SlotHostEvent_Kind.KIND_RETURNED:
      return { text: `${host} is back (slot ${e.slot})`, tone };
    case SlotHostEvent_Kind.KIND_RESTARTED:
      return { text: `slot ${e.slot} restarted: ${host} was lost`, tone };
    case SlotHostEvent_Kind.KIND_FAILED:
      return { text: `the run failed: ${host} (slot ${e.slot}) was lost`, tone };
    case SlotHostEvent_Kind.KIND_BOOT_REPEATED:
      return {
        text: `boot ${e.bootIndex + 1} of slot ${e.slot} (${host}) measured again`,
        tone,
      };
    default:
      return { text: `slot ${e.slot}: ${host}`, tone: "info" };
  }
}

/**
 * What the runs list says next to a run's state (as `tlbfleet runs` does): "waiting for vm1",
 * "1 slot restarted", "2 boots redone".
 */
export function runNotes(run: Run): string[] {
  const notes = run.waitingFor.map(
    (w) => `waiting for ${w.hostname || `agent ${shortId(w.agentId)}`}`,
  );
  const restarted = run.abandoned.filter((w) => w.bootIndex < 0).length;
  const redone = run.abandoned.length - restarted;
  if (restarted > 0) notes.push(`${restarted} slot${restarted === 1 ? "" : "s"} restarted`);
  if (redone > 0) notes.push(`${redone} boot${redone === 1 ? "" : "s"} redone`);
  return notes;
}
