// Charts, run progress, fields, drafts, fleet.
import { describe, expect, it } from "vitest";
import { Report } from "../api/gen/tlbfleet/v1/common";
import { Host, RunEvent, RunState } from "../api/gen/tlbfleet/v1/fleet";
import { chartsFromReport, pointCount } from "./chart-data";
import { clearDraft, draftApplies, loadDraft, saveDraft, type DraftStore } from "./draft";
import { belongsTo, fieldId, firstInvalid, messagesFor } from "./fields";
import { ceilingText, hostState, matchesHost, uptimeText } from "./fleet";
import { applyEvent, emptyProgress } from "./progress";
import { backoffMs } from "./retry";
import { REPORT } from "./testdata/report";

describe("chartsFromReport", () => {
  it("puts numeric sweep values in order, one series per arm with its band", () => {
    const [chart] = chartsFromReport(REPORT);
    expect(chart!.numericX).toBe(true);
    expect(chart!.xs).toEqual([1, 2, 10]);
    expect(chart!.stat).toBe("Hmean");
    expect(chart!.series.map((s) => s.arm)).toEqual(["mmap", "malloc"]);
    expect(chart!.series[0]!.y).toEqual([500, 1000, 2000]);
    expect(chart!.series[1]!.y).toEqual([null, 2000, 1900]); // undefined at threads=1
    expect(chart!.series[0]!.low).toEqual([400, 900, 1900]);
    expect(chart!.series[0]!.high).toEqual([600, 1100, 2100]);
    expect(pointCount(chart!)).toBe(5);
  });

  it("charts the row the report marks headline, whatever it is called, with its records' band", () => {
    const json = Report.toJSON(REPORT) as { groups: Record<string, unknown>[] };
    const lower = Report.fromJSON({
      ...json,
      groups: [
        {
          ...json.groups[0],
          better: "BETTER_LOWER",
          stats: [
            { name: "Amean", values: [7, 8], defined: [true, true], headline: true },
            { name: "Hmean", values: [1, 2], defined: [true, true] },
          ],
          records: [
            { arm: "mmap", min: 6, max: 9 },
            { arm: "malloc", min: 7 }, // no max: no band
          ],
        },
      ],
    });
    const [chart] = chartsFromReport(lower);
    expect(chart!.stat).toBe("Amean");
    expect(chart!.series.map((s) => s.y)).toEqual([[7], [8]]);
    expect(chart!.series.map((s) => [s.low, s.high])).toEqual([
      [[6], [9]],
      [[null], [null]],
    ]);
  });
});

const event = (json: unknown) => RunEvent.fromJSON(json);

describe("applyEvent", () => {
  it("counts jobs per host, moves a lost job, and ends with the run's state", () => {
    let p = emptyProgress();
    p = applyEvent(
      p,
      event({
        id: "1",
        job: {
          jobId: "1",
          state: "JOB_STATE_RUNNING",
          hostname: "a",
          arm: "mmap",
          paramName: "threads",
          paramValue: "2",
          iteration: 1,
        },
        jobs: { total: 4, running: 1, queued: 3 },
      }),
    );
    expect(p.hosts[0]).toMatchObject({ host: "a", current: "mmap threads=2 iteration 1" });
    p = applyEvent(
      p,
      event({
        id: "2",
        job: { jobId: "1", state: "JOB_STATE_QUEUED", hostname: "a", reason: "lease expired" },
      }),
    );
    p = applyEvent(
      p,
      event({ id: "3", job: { jobId: "1", state: "JOB_STATE_RUNNING", hostname: "b" } }),
    );
    p = applyEvent(
      p,
      event({
        id: "4",
        job: {
          jobId: "1",
          state: "JOB_STATE_SUCCEEDED",
          hostname: "b",
          samples: "5",
          elapsedSeconds: 1.5,
        },
        samples: "5",
      }),
    );
    p = applyEvent(p, event({ id: "5", reboot: { kind: "KIND_REQUESTED", hostname: "b" } }));
    p = applyEvent(
      p,
      event({
        id: "6",
        adaptive: { round: 2, decision: "add a boot", iterationsPerBoot: 3, boots: 3 },
      }),
    );
    p = applyEvent(
      p,
      event({ id: "7", state: { state: "RUN_STATE_SUCCEEDED", reason: "every row settled" } }),
    );
    const a = p.hosts.find((h) => h.host === "a")!;
    const b = p.hosts.find((h) => h.host === "b")!;
    expect(a.counts).toMatchObject({ running: 0, requeued: 1 });
    expect(b.counts).toMatchObject({ running: 0, succeeded: 1 });
    expect(b.rebooting).toBe(true);
    expect(p).toMatchObject({
      samples: 5,
      reboots: 1,
      adaptiveRounds: 2,
      state: RunState.RUN_STATE_SUCCEEDED,
      reason: "every row settled",
      lastEventId: 7,
    });
    expect(p.log.map((l) => l.text)).toEqual([
      "a: started mmap threads=2 iteration 1",
      "a: iteration 0 back in the queue: lease expired",
      "b: started iteration 0",
      "b: finished iteration 0, 5 samples in 1.5 s",
      "b: reboot requested",
      "adaptive round 2: add a boot (now 3 iterations × 3 boots)",
      "run succeeded: every row settled",
    ]);
  });
  it("does not modify the progress it was given", () => {
    const p = emptyProgress();
    applyEvent(
      p,
      event({ id: "1", job: { jobId: "1", state: "JOB_STATE_RUNNING", hostname: "a" } }),
    );
    expect(p.hosts).toEqual([]);
  });
});

describe("fields", () => {
  it("matches errors to the input that shows them", () => {
    expect(belongsTo("arms[0].params.threads", "arms[0].params")).toBe(true);
    expect(belongsTo("arms[0].paramsx", "arms[0].params")).toBe(false);
    expect(belongsTo("sweep.threads[2]", "sweep.threads")).toBe(true);
    const errors = { "arms[0].params.threads": "too big", "arms[0].params.mmap": "bad" };
    expect(messagesFor(errors, "arms[0].params")).toBe("threads: too big; mmap: bad");
    expect(firstInvalid(errors, ["name", "arms[0].name", "arms[0].params"])).toBe("arms[0].params");
    expect(fieldId("arms[0].params")).toBe("f-arms_0_-params");
  });
});

describe("draft", () => {
  it("opens the draft unless the URL asks for another benchmark", () => {
    const draft = { yaml: "name: x\nbenchmark: ebizzy\n", yamlOnly: false, savedMs: 1 };
    expect(draftApplies(draft, undefined)).toBe(true);
    expect(draftApplies(draft, "ebizzy")).toBe(true);
    expect(draftApplies(draft, "netperf")).toBe(false);
    expect(draftApplies({ ...draft, yaml: "benchmark: [" }, "netperf")).toBe(false);
  });

  it("keeps the YAML across a login, and survives broken storage", () => {
    const map = new Map<string, string>();
    const store: DraftStore = {
      getItem: (k) => map.get(k) ?? null,
      setItem: (k, v) => void map.set(k, v),
      removeItem: (k) => void map.delete(k),
    };
    saveDraft(store, { yaml: "name: x\n", yamlOnly: false, savedMs: 1 });
    expect(loadDraft(store)?.yaml).toBe("name: x\n");
    clearDraft(store);
    expect(loadDraft(store)).toBeUndefined();
    map.set("tlbfleet.new-run.draft", "{not json");
    expect(loadDraft(store)).toBeUndefined();
    const broken: DraftStore = {
      getItem: () => {
        throw new Error("denied");
      },
      setItem: () => {
        throw new Error("quota");
      },
      removeItem: () => undefined,
    };
    expect(() => saveDraft(broken, { yaml: "", yamlOnly: false, savedMs: 0 })).not.toThrow();
    expect(loadDraft(broken)).toBeUndefined();
  });
});

describe("fleet", () => {
  const host = Host.fromJSON({
    agentId: "ag1",
    connected: true,
    info: {
      hostname: "lab1",
      labels: { rack: "a", lab: "" },
      cpu: { microarch: "IvyBridge" },
      ceiling: {
        readable: false,
        writable: false,
        reason: "kernel lockdown (integrity)",
        lockdown: "integrity",
      },
    },
  });
  it("filters by labels and microarch, case-insensitively for the latter", () => {
    expect(matchesHost(host, { label: "rack=a, lab", microarch: "ivybridge" })).toBe(true);
    expect(matchesHost(host, { label: "rack=b", microarch: "" })).toBe(false);
    expect(matchesHost(host, { label: "", microarch: "Haswell" })).toBe(false);
  });
  it("says why the ceiling is locked, and what the host does", () => {
    expect(ceilingText(host)).toEqual({
      text: "locked: kernel lockdown (integrity)",
      writable: false,
    });
    const open = Host.fromJSON({
      info: { ceiling: { writable: true, hasValue: true, value: "33" } },
    });
    expect(ceilingText(open)).toEqual({ text: "33 pages", writable: true });
    expect(hostState(host).state).toBe("idle");
    expect(hostState({ ...host, currentLease: "j4a1" })).toEqual({
      state: "running",
      detail: "lease j4a1",
      runId: "",
    });
    expect(
      hostState({
        ...host,
        currentLease: "j4a1",
        currentRunId: "12",
        currentJobId: "4",
        currentBenchmark: "ebizzy",
        currentArm: "mmap",
        currentIteration: 2,
      }),
    ).toEqual({
      state: "running",
      detail: "run 12 job 4 (ebizzy, arm mmap iteration 2)",
      runId: "12",
    });
    expect(hostState({ ...host, connected: false }).state).toBe("lost");
    // Asked to reboot: rebooting while still connected on the old boot and while away.
    for (const connected of [true, false]) {
      expect(hostState({ ...host, connected, rebooting: true, rebootingForRun: "9" })).toEqual({
        state: "rebooting",
        detail: "for run 9",
        runId: "9",
      });
    }
  });

  it("says how long the host has been up, or a dash when the agent did not say", () => {
    const now = Date.UTC(2026, 11, 1, 12, 0, 0);
    const booted = (secondsAgo: number) =>
      Host.fromJSON({ info: { bootTimeUnix: String(now / 1000 - secondsAgo) } });
    expect(uptimeText(booted(42), now)).toBe("42 s");
    expect(uptimeText(booted(12 * 60 + 5), now)).toBe("12 min");
    expect(uptimeText(booted(3 * 3600 + 7 * 60), now)).toBe("3 h 7 min");
    expect(uptimeText(booted(2 * 86400 + 5 * 3600), now)).toBe("2 d 5 h");
    expect(uptimeText(Host.fromJSON({ info: {} }), now)).toBe("—");
  });
});

describe("backoffMs", () => {
  it("doubles up to its cap", () => {
    expect([0, 1, 2, 3, 4, 5].map((n) => backoffMs(n, 2000))).toEqual([
      0, 2000, 4000, 8000, 10000, 10000,
    ]);
  });
});
