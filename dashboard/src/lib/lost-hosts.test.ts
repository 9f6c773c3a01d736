// Lost hosts in words (issue 26): the controller's wording for bounds and clock times, the
// elapsed silence, the policy, work measured again, a host runs wait for, the slot-host log
// lines, and how the live progress folds those events.
import { describe, expect, it } from "vitest";
import { AbandonedWork, Host, LostHost, Run, RunEvent } from "../api/gen/tlbfleet/v1/fleet";
import {
  abandonedCounts,
  abandonedWhat,
  clockTime,
  describeSlotHost,
  elapsedSeconds,
  formatSeconds,
  hostLabel,
  policyText,
  runNotes,
  silentForText,
  waitedOn,
  waitedOnWords,
} from "./lost-hosts";
import { applyEvent, emptyProgress } from "./progress";

const T0 = Date.UTC(2026, 0, 15, 1, 12, 36); // 01:12:36 UTC

describe("formatSeconds (scheduler::FormatSeconds)", () => {
  it.each([
    [0, "0 s"],
    [59, "59 s"],
    [60, "1 min"],
    [90, "1 min 30 s"],
    [1800, "30 min"],
    [3599, "59 min 59 s"],
    [3600, "1 h"],
    [5400, "1 h 30 min"],
    [5430, "1 h 30 min"], // seconds dropped from an hour up, as the controller does
    [7 * 86400, "168 h"],
    [-5, "0 s"],
    [12.9, "12 s"],
  ])("%s -> %s", (s, text) => expect(formatSeconds(s)).toBe(text));
});

describe("clockTime (core::ClockTime)", () => {
  it("is the UTC time of day today, with the date on another day", () => {
    expect(clockTime(T0, T0 + 5 * 60_000)).toBe("01:12:36 UTC");
    expect(clockTime(T0, T0 + 86_400_000)).toBe("2026-01-15 01:12:36 UTC");
  });
});

describe("elapsed silence", () => {
  it("counts whole seconds and never below zero", () => {
    expect(elapsedSeconds(T0, T0 + 61_999)).toBe(61);
    expect(elapsedSeconds(T0, T0 - 2000)).toBe(0); // our clock a little behind
    expect(elapsedSeconds(0, T0)).toBe(0);
  });

  const wait = (over: Record<string, unknown>) =>
    LostHost.fromJSON({
      slot: 0,
      agentId: "0d60fd02aa",
      hostname: "vm1",
      silentSinceUnixMs: String(T0),
      action: "restart",
      afterSeconds: 1800,
      ...over,
    });

  it("says how long of the bound, and what then", () => {
    expect(silentForText(wait({}), T0 + 312_000)).toBe(
      "silent for 5 min 12 s of 30 min, then restart",
    );
    expect(silentForText(wait({ action: "fail", afterSeconds: 20 }), T0 + 3_000)).toBe(
      "silent for 3 s of 20 s, then fail",
    );
    expect(silentForText(wait({ action: "wait" }), T0 + 3_600_000)).toBe("silent for 1 h");
    expect(silentForText(wait({ rebooting: true }), T0 + 65_000)).toBe(
      "rebooting, gone for 1 min 5 s of 30 min, then restart",
    );
  });
});

describe("words", () => {
  it("names a host as the controller does", () => {
    expect(hostLabel("vm1", "0d60fd02-1234", "4c4c4544-0042")).toBe(
      "vm1 (agent 0d60fd02, machine 4c4c4544)",
    );
    expect(hostLabel("", "0d60fd02-1234")).toBe("agent 0d60fd02");
  });

  it("says the policy in force", () => {
    expect(policyText({ action: "wait", afterSeconds: 1800 })).toBe(
      "wait for the host, however long it is silent",
    );
    expect(policyText({ action: "fail", afterSeconds: 20 })).toBe(
      "fail the run when a slot's host is silent for 20 s",
    );
    expect(policyText({ action: "restart", afterSeconds: 1800 })).toMatch(
      /^restart the slot on another host when its host is silent for 30 min/,
    );
    expect(policyText(undefined)).toBe("—");
  });

  it("says what was measured again and what was kept", () => {
    const slot = AbandonedWork.fromJSON({ slot: 1, bootIndex: -1, jobs: 4, samples: "1200" });
    const boot = AbandonedWork.fromJSON({ slot: 0, bootIndex: 1, jobs: 1, samples: "1" });
    expect(abandonedWhat(slot)).toBe("slot 1, from its first job");
    expect(abandonedWhat(boot)).toBe("slot 0, boot 2");
    expect(abandonedCounts(slot)).toBe("4 jobs, 1,200 samples kept, left out of comparisons");
    expect(abandonedCounts(boot)).toBe("1 job, 1 sample kept, left out of comparisons");
  });

  it("lists the runs that wait for a host, each once, from the earliest silence", () => {
    const host = Host.fromJSON({
      agentId: "a1",
      waitedOnBy: [
        { runId: "3", wait: { slot: 0, silentSinceUnixMs: String(T0 + 1000) } },
        { runId: "7", wait: { slot: 0, silentSinceUnixMs: String(T0) } },
        { runId: "7", wait: { slot: 1, silentSinceUnixMs: String(T0) } },
      ],
    });
    const w = waitedOn(host)!;
    expect(w).toEqual({ runIds: ["3", "7"], sinceMs: T0, rebooting: false });
    expect(waitedOnWords(w)).toEqual({ lead: "runs", tail: "wait for it" });
    expect(waitedOnWords({ ...w, runIds: ["3"] })).toEqual({ lead: "run", tail: "waits for it" });
    expect(waitedOn(Host.fromJSON({ agentId: "a2" }))).toBeUndefined();
  });

  it("notes next to a run's state what `tlbfleet runs` notes", () => {
    const run = Run.fromJSON({
      id: "3",
      waitingFor: [
        { slot: 0, hostname: "vm1", agentId: "a" },
        { slot: 1, agentId: "0d60fd02ff" },
      ],
      abandoned: [{ bootIndex: -1 }, { bootIndex: 0 }, { bootIndex: 2 }],
    });
    expect(runNotes(run)).toEqual([
      "waiting for vm1",
      "waiting for agent 0d60fd02",
      "1 slot restarted",
      "2 boots redone",
    ]);
    expect(runNotes(Run.fromJSON({ id: "4" }))).toEqual([]);
  });
});

const slotEvent = (id: number, kind: string, over: Record<string, unknown> = {}) =>
  RunEvent.fromJSON({
    id: String(id),
    runId: "3",
    timeUnixMs: String(T0 + id * 1000),
    slotHost: { kind, slot: 0, agentId: "0d60fd02aa", hostname: "vm1", ...over },
  });

describe("slot-host events", () => {
  it("log the controller's message as it is", () => {
    const message =
      "vm1 (agent 0d60fd02, machine 4c4c4544) has work in slot 0 and is silent since 01:12:36 UTC; on_host_lost: wait";
    const e = slotEvent(1, "KIND_SILENT", { message });
    expect(describeSlotHost(e.slotHost!)).toEqual({ text: message, tone: "bad" });
    expect(
      describeSlotHost(slotEvent(2, "KIND_RETURNED", { message: "vm1 is back" }).slotHost!),
    ).toEqual({ text: "vm1 is back", tone: "good" });
  });

  it("have words of their own when the message is empty", () => {
    const text = (kind: string, over: Record<string, unknown> = {}) =>
      describeSlotHost(slotEvent(1, kind, over).slotHost!).text;
    expect(text("KIND_SILENT", { action: "restart" })).toBe(
      "vm1 (agent 0d60fd02) went silent with work left in slot 0 (on_host_lost: restart)",
    );
    expect(text("KIND_RETURNED")).toBe("vm1 (agent 0d60fd02) is back (slot 0)");
    expect(text("KIND_RESTARTED")).toBe("slot 0 restarted: vm1 (agent 0d60fd02) was lost");
    expect(text("KIND_FAILED")).toBe("the run failed: vm1 (agent 0d60fd02) (slot 0) was lost");
    expect(text("KIND_BOOT_REPEATED", { bootIndex: 1 })).toBe(
      "boot 2 of slot 0 (vm1 (agent 0d60fd02)) measured again",
    );
  });

  it("mark the host silent in the live progress until it is back or runs a job", () => {
    let p = applyEvent(
      emptyProgress(),
      slotEvent(1, "KIND_SILENT", { silentSinceUnixMs: String(T0), message: "silent" }),
    );
    expect(p.hosts).toHaveLength(1);
    expect(p.hosts[0]!.host).toBe("vm1");
    expect(p.hosts[0]!.silentSinceMs).toBe(T0);
    expect(p.log.at(-1)).toMatchObject({ id: 1, text: "silent", tone: "bad" });
    p = applyEvent(p, slotEvent(2, "KIND_RETURNED"));
    expect(p.hosts[0]!.silentSinceMs).toBe(0);
    expect(p.log.at(-1)!.tone).toBe("good");

    p = applyEvent(p, slotEvent(3, "KIND_SILENT"));
    expect(p.hosts[0]!.silentSinceMs).toBe(T0 + 3000); // no time given: the event's
    // A lease that expired is not word from the host; a job it started is.
    const job = (id: number, state: string) =>
      RunEvent.fromJSON({
        id: String(id),
        job: { jobId: "9", state, hostname: "vm1", agentId: "0d60fd02aa", arm: "a" },
      });
    p = applyEvent(p, job(4, "JOB_STATE_QUEUED"));
    expect(p.hosts[0]!.silentSinceMs).toBe(T0 + 3000);
    p = applyEvent(p, job(5, "JOB_STATE_RUNNING"));
    expect(p.hosts[0]!.silentSinceMs).toBe(0);
    expect(p.hosts[0]!.current).toBe("a iteration 0");
    p = applyEvent(p, slotEvent(6, "KIND_RESTARTED"));
    expect(p.hosts[0]!.current).toBe("");
  });
});
