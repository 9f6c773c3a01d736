// @vitest-environment happy-dom
// The rows of an adaptive run with stop: verdict rendered into a DOM (happy-dom), issue 22: one
// row per (metric, sweep value, arm) with its state, verdict, what it used per arm, ratio, p
// and the controller's reason, as GetRun gives them; on the run page in the progress section
// while the run measures (read again at each adaptive decision) and after it stopped; nothing
// for a run without rows.
import { afterEach, describe, expect, it, vi } from "vitest";
import { api } from "../api";
import { CompareResponse, Run, RunEvent } from "../api/gen/tlbfleet/v1/fleet";
import { RunPage } from "../pages/Run";
import { AdaptiveRowsView, adaptiveRowLabel } from "./AdaptiveRows";
import { at, mount, settle, unmount } from "./test-dom";

afterEach(() => {
  unmount();
  vi.restoreAllMocks();
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

/** As GetRun's JSON gives them: one row decided early and stopped, one still measuring. */
const ROWS = [
  {
    metric: "records",
    paramName: "threads",
    paramValue: "4",
    arm: "malloc",
    verdict: "better",
    decided: true,
    measuring: false,
    decidedRound: 1,
    baseBoots: 3,
    armBoots: 3,
    baseSamples: "30",
    armSamples: "30",
    ratio: 1.05964,
    p: 0.00021,
    lookAlpha: 0.0034,
    reason: "better at look 2: p 0.00021 < 0.0034",
  },
  {
    metric: "records",
    paramName: "threads",
    paramValue: "1",
    arm: "malloc",
    verdict: "",
    decided: false,
    measuring: true,
    baseBoots: 4,
    armBoots: 4,
    baseSamples: "40",
    armSamples: "40",
    reason: "no verdict yet at information 0.50",
  },
];

const SEQUENTIAL = {
  id: "11",
  state: "RUN_STATE_RUNNING",
  spec: {
    name: "seq",
    benchmark: "ebizzy",
    arms: [{ name: "mmap" }, { name: "malloc" }],
    adaptive: { boots: { min: 2, max: 8 }, stop: "STOP_VERDICT" },
  },
  jobs: { total: 80, succeeded: 40, queued: 40 },
  iterationsPerBoot: 10,
  boots: 4,
  adaptiveRounds: 2,
  adaptiveRows: ROWS,
};

function cells(el: HTMLElement): string[][] {
  return [...el.querySelectorAll("[data-testid=adaptive-rows] tbody tr")].map((r) =>
    [...r.children].map((c) => c.textContent ?? ""),
  );
}

const EXPECTED = [
  [
    "records threads=4, arm malloc",
    "stopped",
    "better",
    "3/3",
    "30/30",
    "1.0596",
    "<0.001",
    "better at look 2: p 0.00021 < 0.0034",
  ],
  [
    "records threads=1, arm malloc",
    "measuring",
    "—",
    "4/4",
    "40/40",
    "—",
    "—",
    "no verdict yet at information 0.50",
  ],
];

describe("AdaptiveRowsView", () => {
  it("shows per row its state, verdict, boots and samples per arm, ratio, p and why", () => {
    const el = mount(<AdaptiveRowsView rows={Run.fromJSON(SEQUENTIAL).adaptiveRows} />);
    expect(cells(el)).toEqual(EXPECTED);
    expect(el.querySelector("caption")!.textContent).toContain("1 of 2 rows decided, 1 measuring");
    expect(el.querySelector("tbody tr td.verdict-better")!.textContent).toBe("better");
  });

  it("renders nothing for a run without rows (not adaptive, or stop: precision)", () => {
    const el = mount(<AdaptiveRowsView rows={[]} />);
    expect(el.childNodes).toHaveLength(0);
  });

  it("labels a row without a sweep by its metric and arm", () => {
    const row = Run.fromJSON({ adaptiveRows: [{ metric: "ops", arm: "b" }] }).adaptiveRows[0]!;
    expect(adaptiveRowLabel(row)).toBe("ops, arm b");
  });
});

describe("RunPage with sequential rows", () => {
  it("shows the rows in the live progress section and reads the run again at a decision", async () => {
    const getRun = vi.spyOn(api, "getRun").mockResolvedValue(Run.fromJSON(SEQUENTIAL));
    const decision = RunEvent.fromJSON({
      id: "5",
      runId: "11",
      timeUnixMs: "1768439556000",
      adaptive: { round: 2, decision: "add_boot", iterationsPerBoot: 10, boots: 5 },
    });
    vi.spyOn(api, "openStream").mockImplementation(async (_url, _headers, signal) =>
      sseResponse([decision], signal),
    );
    const el = mount(<RunPage runId="11" location={at("/runs/11")} />);
    await settle();
    const progress = el.querySelector("#progress")!;
    expect(progress.querySelector("[data-testid=adaptive-rows]")).not.toBeNull();
    expect(cells(el)).toEqual(EXPECTED);
    // Once when the page opened, again for the adaptive decision.
    expect(getRun.mock.calls.length).toBeGreaterThanOrEqual(2);
  });

  it("keeps the rows, as stored, after the run stopped", async () => {
    const done = Run.fromJSON({
      ...SEQUENTIAL,
      state: "RUN_STATE_SUCCEEDED",
      finishedUnix: "1768439600",
      stopReason: "maximum reached (10 iterations x 8 boots per arm) with 1 of 2 rows open",
      adaptiveRows: [ROWS[0], { ...ROWS[1], measuring: false }],
    });
    vi.spyOn(api, "getRun").mockResolvedValue(done);
    vi.spyOn(api, "compare").mockResolvedValue(
      CompareResponse.fromJSON({ report: { runId: "11", arms: ["mmap", "malloc"] } }),
    );
    const openStream = vi.spyOn(api, "openStream");
    const el = mount(<RunPage runId="11" location={at("/runs/11")} />);
    await settle();
    expect(openStream).not.toHaveBeenCalled();
    expect(el.querySelector("#progress [data-testid=adaptive-rows]")).not.toBeNull();
    expect(cells(el).map((r) => r[1])).toEqual(["stopped", "stopped"]);
    expect(el.querySelector("[data-testid=stop-reason]")!.textContent).toBe(done.stopReason);
  });

  it("has no rows table for a run without rows", async () => {
    vi.spyOn(api, "getRun").mockResolvedValue(
      Run.fromJSON({ ...SEQUENTIAL, state: "RUN_STATE_SUCCEEDED", adaptiveRows: [] }),
    );
    vi.spyOn(api, "compare").mockResolvedValue(
      CompareResponse.fromJSON({ report: { runId: "11", arms: ["mmap", "malloc"] } }),
    );
    const el = mount(<RunPage runId="11" location={at("/runs/11")} />);
    await settle();
    expect(el.querySelector("[data-testid=adaptive-rows]")).toBeNull();
    expect(el.querySelector("#progress")).toBeNull();
  });
});
