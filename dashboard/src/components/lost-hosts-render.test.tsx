// @vitest-environment happy-dom
// Lost hosts rendered into a DOM (happy-dom), issue 26: a run waiting for a silent host says
// so first, with the controller's message and a "silent for" that counts on by itself; the
// policy in force and the work measured again; a slot-host event over SSE is a log line and
// reads the run again; the hosts each arm was measured on and the samples left out, as the
// report gives them (Run, and Compare within a run and across runs); Fleet names the runs waiting for a silent host.
import { act } from "preact/test-utils";
import { afterEach, describe, expect, it, vi } from "vitest";
import { api } from "../api";
import { InvalidArgumentError } from "../api/errors";
import { Report } from "../api/gen/tlbfleet/v1/common";
import {
  CompareResponse,
  ListHostsResponse,
  ListWorkloadsResponse,
  Run,
  RunEvent,
  WorkloadSchema,
} from "../api/gen/tlbfleet/v1/fleet";
import { SessionContext } from "../hooks";
import { WORKLOADS } from "../lib/testdata/workloads";
import { ComparePage } from "../pages/Compare";
import { FleetPage } from "../pages/Fleet";
import { NewRunPage } from "../pages/NewRun";
import { RunPage } from "../pages/Run";
import { ArmHostsView } from "./ArmHosts";
import { AbandonedWorkTable, WaitingNotice } from "./LostHosts";
import { at, mount, settle, unmount } from "./test-dom";

const T0 = Date.UTC(2026, 0, 15, 1, 12, 36); // 01:12:36 UTC

afterEach(() => {
  unmount();
  vi.useRealTimers();
  vi.restoreAllMocks();
});

const WAIT = {
  slot: 0,
  agentId: "0d60fd02aaaa",
  hostname: "vm1",
  machineId: "4c4c4544bbbb",
  silentSinceUnixMs: String(T0),
  action: "restart",
  afterSeconds: 1800,
  message:
    "waiting for vm1 (agent 0d60fd02), silent since 01:12:36 UTC, 5 min of 30 min, then restart",
};

const ABANDONED = [
  {
    slot: 1,
    bootIndex: -1,
    agentId: "77aa00ff1234",
    hostname: "vm2",
    machineId: "99887766",
    jobs: 4,
    samples: "120",
    reason: "slot 1 restarted: vm2 (agent 77aa00ff) was lost: silent since 00:40:00 UTC (30 min)",
    timeUnixMs: String(T0 - 600_000),
  },
  {
    slot: 0,
    bootIndex: 1,
    agentId: "0d60fd02aaaa",
    hostname: "vm1",
    bootId: "b00710ad-1111",
    jobs: 2,
    samples: "60",
    reason:
      "boot 2 of slot 0 (vm1) ended after 2 of 6 jobs (boot_id b00710ad-1111: an unplanned reboot or reset); measured again on boot_id c0ffee",
    timeUnixMs: String(T0 - 300_000),
  },
];

describe("WaitingNotice", () => {
  it("shows the controller's message and a silence that counts on without a reload", () => {
    vi.useFakeTimers();
    vi.setSystemTime(T0 + 312_000);
    const el = mount(
      <WaitingNotice waiting={[Run.fromJSON({ waitingFor: [WAIT] }).waitingFor[0]!]} />,
    );
    expect(el.querySelector("h2")!.textContent).toBe("Waiting for a silent host");
    expect(el.querySelector("[data-testid=waiting-message]")!.textContent).toBe(WAIT.message);
    const silentFor = () => el.querySelector("[data-testid=silent-for]")!.textContent;
    expect(silentFor()).toBe("silent for 5 min 12 s of 30 min, then restart");
    act(() => {
      vi.advanceTimersByTime(5000);
    });
    expect(silentFor()).toBe("silent for 5 min 17 s of 30 min, then restart");
    expect(el.textContent).toContain("slot 0 · vm1 (agent 0d60fd02, machine 4c4c4544)");
  });

  it("says nothing when no slot waits", () => {
    const el = mount(<WaitingNotice waiting={[]} />);
    expect(el.childNodes).toHaveLength(0);
  });
});

describe("AbandonedWorkTable", () => {
  it("lists what was measured again, on which host and boot, what was kept, and why", () => {
    const el = mount(
      <AbandonedWorkTable abandoned={Run.fromJSON({ abandoned: ABANDONED }).abandoned} />,
    );
    const rows = [...el.querySelectorAll("tbody tr")].map((r) =>
      [...r.children].map((c) => c.textContent),
    );
    expect(rows).toEqual([
      [
        "slot 1, from its first job",
        "vm2 (agent 77aa00ff, machine 99887766)",
        "—",
        "2026-01-15 01:02:36Z",
        "4 jobs, 120 samples kept, left out of comparisons",
        ABANDONED[0]!.reason,
      ],
      [
        "slot 0, boot 2",
        "vm1 (agent 0d60fd02)",
        "b00710ad",
        "2026-01-15 01:07:36Z",
        "2 jobs, 60 samples kept, left out of comparisons",
        ABANDONED[1]!.reason,
      ],
    ]);
  });
});

const HOSTS_REPORT = {
  hosts: [
    {
      arm: "base",
      agentId: "0d60fd02aaaa",
      hostname: "vm1",
      machineId: "4c4c4544bbbb",
      samples: "40",
      boots: 4,
    },
    {
      arm: "test",
      agentId: "0d60fd02aaaa",
      hostname: "vm1",
      machineId: "4c4c4544bbbb",
      samples: "38",
      boots: 4,
    },
    {
      arm: "test",
      agentId: "77aa00ff1234",
      hostname: "vm3",
      machineId: "",
      samples: "2",
      boots: 1,
    },
  ],
  excluded: [
    {
      agentId: "77aa00ff1234",
      hostname: "vm2",
      machineId: "99887766",
      samples: "120",
      reason: "slot 1 restarted: vm2 (agent 77aa00ff) was lost",
    },
  ],
};

describe("ArmHostsView", () => {
  it("renders the report's hosts per arm and the samples it left out, as given", () => {
    const report = Report.fromJSON(HOSTS_REPORT);
    const el = mount(<ArmHostsView hosts={report.hosts} excluded={report.excluded} />);
    const rows = [...el.querySelectorAll("tbody tr")].map((r) =>
      [...r.children].map((c) => c.textContent),
    );
    expect(rows).toEqual([
      ["base", "vm1", "0d60fd02", "4c4c4544", "40", "4"],
      ["test", "vm1", "0d60fd02", "4c4c4544", "38", "4"],
      ["test", "vm3", "77aa00ff", "—", "2", "1"],
    ]);
    expect(el.querySelector("td[title='0d60fd02aaaa']")).not.toBeNull();
    expect(el.querySelector("[data-testid=excluded]")!.textContent).toBe(
      "left out: 120 samples of vm2 (agent 77aa00ff, machine 99887766), kept for the record: slot 1 restarted: vm2 (agent 77aa00ff) was lost",
    );
  });

  it("renders nothing for a report without hosts (a controller before issue 26)", () => {
    const el = mount(<ArmHostsView hosts={[]} excluded={[]} />);
    expect(el.childNodes).toHaveLength(0);
  });
});

/** A text/event-stream body that sends `events` and stays open until the request is aborted. */
function sseResponse(events: RunEvent[], signal: AbortSignal): Response {
  const text = events
    .map((e) => `id: ${e.id}\ndata: ${JSON.stringify(RunEvent.toJSON(e))}\n\n`)
    .join("");
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(text));
      signal.addEventListener("abort", () => controller.error(signal.reason), { once: true });
    },
  });
  return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } });
}

describe("RunPage", () => {
  const running = Run.fromJSON({
    id: "3",
    state: "RUN_STATE_RUNNING",
    spec: { name: "lost", benchmark: "ebizzy", arms: [{ name: "base" }, { name: "test" }] },
    jobs: { total: 12, succeeded: 4, queued: 8 },
    iterationsPerBoot: 3,
    waitingFor: [WAIT],
    abandoned: ABANDONED,
    onHostLost: { action: "restart", afterSeconds: 1800 },
  });

  it("puts the waiting slots first, says the policy and the work measured again, and logs slot-host events", async () => {
    vi.spyOn(Date, "now").mockReturnValue(T0 + 312_000);
    const getRun = vi.spyOn(api, "getRun").mockResolvedValue(running);
    const silent = RunEvent.fromJSON({
      id: "41",
      runId: "3",
      timeUnixMs: String(T0 + 1000),
      slotHost: {
        kind: "KIND_SILENT",
        slot: 0,
        agentId: WAIT.agentId,
        hostname: "vm1",
        silentSinceUnixMs: String(T0),
        action: "restart",
        afterSeconds: 1800,
        message:
          "vm1 (agent 0d60fd02, machine 4c4c4544) has work in slot 0 and is silent since 01:12:36 UTC; on_host_lost: restart after 30 min",
      },
    });
    vi.spyOn(api, "openStream").mockImplementation(async (_url, _headers, signal) =>
      sseResponse([silent], signal),
    );
    const el = mount(<RunPage runId="3" location={at("/runs/3")} />);
    await settle();

    // The notice comes right after the title, before the facts.
    const notice = el.querySelector("[data-testid=waiting-for]")!;
    expect(notice.previousElementSibling!.tagName).toBe("H1");
    expect(notice.textContent).toContain(WAIT.message);
    expect(notice.querySelector("[data-testid=silent-for]")!.textContent).toBe(
      "silent for 5 min 12 s of 30 min, then restart",
    );
    expect(el.querySelector("[data-testid=on-host-lost]")!.textContent).toBe(
      "restart the slot on another host when its host is silent for 30 min (its samples kept, left out of comparisons) (the default for this run's design)",
    );
    expect(el.querySelectorAll("[data-testid=abandoned] tbody tr")).toHaveLength(2);

    // The SSE event: a log line, the host silent in the live table, and the run read again.
    const log = el.querySelector("[data-testid=event-log]")!;
    expect(log.textContent).toContain(silent.slotHost!.message);
    expect(log.querySelector("li")!.className).toBe("tone-bad");
    expect(el.querySelector("#progress tbody tr")!.textContent).toContain(
      "silent since 01:12:36 UTC",
    );
    expect(getRun.mock.calls.length).toBeGreaterThanOrEqual(2);
  });

  it("shows no waiting notice once the run has ended, and the report's hosts with the results", async () => {
    const done = Run.fromJSON({
      ...(Run.toJSON(running) as Record<string, unknown>),
      state: "RUN_STATE_SUCCEEDED",
      finishedUnix: String(Math.floor(T0 / 1000)),
    });
    vi.spyOn(api, "getRun").mockResolvedValue(done);
    vi.spyOn(api, "compare").mockResolvedValue(
      CompareResponse.fromJSON({ report: { runId: "3", arms: ["base", "test"], ...HOSTS_REPORT } }),
    );
    const openStream = vi.spyOn(api, "openStream");
    const el = mount(<RunPage runId="3" location={at("/runs/3")} />);
    await settle();
    expect(el.querySelector("[data-testid=waiting-for]")).toBeNull();
    expect(openStream).not.toHaveBeenCalled();
    expect(el.querySelectorAll("[data-testid=abandoned] tbody tr")).toHaveLength(2);
    const hosts = el.querySelector("#comparison [data-testid=arm-hosts]")!;
    expect(hosts.querySelectorAll("tbody tr")).toHaveLength(3);
    expect(hosts.querySelector("[data-testid=excluded]")!.textContent).toContain(
      "120 samples of vm2",
    );
  });
});

describe("ComparePage", () => {
  it("shows the hosts of the two arms compared, and the samples left out", async () => {
    vi.spyOn(api, "compare").mockResolvedValue(
      CompareResponse.fromJSON({
        report: { runId: "3", arms: ["base", "test", "other"], ...HOSTS_REPORT },
      }),
    );
    const el = mount(<ComparePage location={at("/compare?a=3:base&b=3:test")} />);
    await settle();
    const hosts = el.querySelector("#cmp-hosts [data-testid=arm-hosts]")!;
    expect(
      [...hosts.querySelectorAll("tbody tr td:first-child")].map((c) => c.textContent),
    ).toEqual(["base", "test", "test"]);
    expect(hosts.querySelector("[data-testid=excluded]")).not.toBeNull();
  });

  it("shows the hosts of arms of two runs as the report across runs gives them (RUN:ARM)", async () => {
    const acrossRuns = HOSTS_REPORT.hosts.map((h, i) => ({
      ...h,
      arm: i === 0 ? "3:test" : `4:${h.arm}`,
    }));
    const compare = vi.spyOn(api, "compare").mockResolvedValue(
      CompareResponse.fromJSON({
        report: {
          runId: "3",
          arms: ["3:test", "4:base", "4:test"],
          scope: "across runs",
          hosts: acrossRuns,
          excluded: HOSTS_REPORT.excluded,
        },
      }),
    );
    const el = mount(<ComparePage location={at("/compare?a=3:test&b=4")} />);
    await settle();
    expect(compare).toHaveBeenCalledTimes(1);
    expect(compare.mock.calls[0]!.slice(0, 2)).toEqual([
      "3",
      { withRunId: "4", arm: "test", withArm: "" },
    ]);
    const hosts = el.querySelector("#cmp-hosts [data-testid=arm-hosts]")!;
    expect(
      [...hosts.querySelectorAll("tbody tr td:first-child")].map((c) => c.textContent),
    ).toEqual(["3:test", "4:test", "4:test"]);
    expect(hosts.querySelector("[data-testid=excluded]")).not.toBeNull();
  });
});

describe("FleetPage", () => {
  it("shows a host that runs wait for as silent, linked to the runs, since when", async () => {
    vi.spyOn(Date, "now").mockReturnValue(T0 + 300_000);
    vi.spyOn(api, "hosts").mockResolvedValue(
      ListHostsResponse.fromJSON({
        hosts: [
          {
            agentId: WAIT.agentId,
            connected: true, // a hung machine's stream may still be open
            currentRunId: "3",
            info: { hostname: "vm1" },
            waitedOnBy: [
              { runId: "3", wait: WAIT },
              { runId: "7", wait: { ...WAIT, slot: 1 } },
            ],
          },
          { agentId: "idle0001", connected: true, info: { hostname: "vm9" } },
        ],
      }),
    );
    const el = mount(<FleetPage location={at("/")} />);
    await settle();
    const row = el.querySelector(`[data-testid=host-${WAIT.agentId}]`)!;
    expect(row.querySelector(".state")!.textContent).toBe("silent");
    expect(row.querySelector("[data-testid=waited-on]")!.textContent).toBe(
      "runs 3, 7 wait for it since 01:12:36 UTC (5 min)",
    );
    expect(
      [...row.querySelectorAll("[data-testid=waited-on] a")].map((a) => a.getAttribute("href")),
    ).toEqual(["/runs/3", "/runs/7"]);
    const other = el.querySelector("[data-testid=host-idle0001]")!;
    expect(other.querySelector(".state")!.textContent).toBe("idle");
    expect(other.querySelector("[data-testid=waited-on]")).toBeNull();
  });
});

describe("NewRunPage", () => {
  it("writes on_host_lost from the form, and shows the server's refusal of it at its field", async () => {
    vi.spyOn(api, "workloads").mockResolvedValue(
      ListWorkloadsResponse.fromJSON({ workloads: WORKLOADS.map((w) => WorkloadSchema.toJSON(w)) }),
    );
    const message =
      "restart measures a lost host's slot again on another host, but hosts.names pins the run's 1 slot(s) to 1 host(s): there is no other eligible host (use wait or fail, or name more hosts)";
    const submit = vi
      .spyOn(api, "submitYaml")
      .mockRejectedValue(
        new InvalidArgumentError(
          400,
          "INVALID_ARGUMENT",
          `on_host_lost.action: ${message}`,
          "on_host_lost.action",
        ),
      );
    sessionStorage.clear();
    const session = {
      principal: undefined,
      developmentMode: true,
      canOperate: true,
      known: true,
      refresh: async () => {},
    };
    const el = mount(
      <SessionContext.Provider value={session}>
        <NewRunPage location={at("/runs/new")} />
      </SessionContext.Provider>,
    );
    await settle();
    const action = el.querySelector<HTMLSelectElement>("#f-on_host_lost-action")!;
    const after = el.querySelector<HTMLInputElement>("#f-on_host_lost-after")!;
    act(() => {
      action.value = "restart";
      action.dispatchEvent(new Event("change", { bubbles: true }));
    });
    act(() => {
      after.value = "20s";
      after.dispatchEvent(new Event("input", { bubbles: true }));
    });
    const yaml = el.querySelector<HTMLTextAreaElement>("#f-yaml")!.value;
    expect(yaml).toContain("on_host_lost: { action: restart, after: 20s }");

    await act(async () => {
      el.querySelector<HTMLButtonElement>("[data-testid=submit-run]")!.click();
    });
    await settle();
    expect(submit).toHaveBeenCalledWith(yaml);
    expect(el.querySelector("[data-testid='error-on_host_lost.action']")!.textContent).toBe(
      message,
    );
    expect(action.getAttribute("aria-invalid")).toBe("true");
    expect(document.activeElement).toBe(action);
  });

  it("refuses a bound the server would refuse before sending anything", async () => {
    vi.spyOn(api, "workloads").mockResolvedValue(
      ListWorkloadsResponse.fromJSON({ workloads: WORKLOADS.map((w) => WorkloadSchema.toJSON(w)) }),
    );
    const submit = vi.spyOn(api, "submitYaml");
    sessionStorage.clear();
    const session = {
      principal: undefined,
      developmentMode: true,
      canOperate: true,
      known: true,
      refresh: async () => {},
    };
    const el = mount(
      <SessionContext.Provider value={session}>
        <NewRunPage location={at("/runs/new")} />
      </SessionContext.Provider>,
    );
    await settle();
    const after = el.querySelector<HTMLInputElement>("#f-on_host_lost-after")!;
    act(() => {
      after.value = "8d";
      after.dispatchEvent(new Event("input", { bubbles: true }));
    });
    await act(async () => {
      el.querySelector<HTMLButtonElement>("[data-testid=submit-run]")!.click();
    });
    expect(submit).not.toHaveBeenCalled();
    expect(el.querySelector("[data-testid='error-on_host_lost.after']")!.textContent).toBe(
      'expected a duration such as 30m, 2h or 90s, got "8d"',
    );
    expect(el.querySelector("[data-testid='error-on_host_lost.action']")!.textContent).toBe(
      "required",
    );
  });
});
