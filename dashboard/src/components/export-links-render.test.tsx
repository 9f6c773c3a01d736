// @vitest-environment happy-dom
// A run's export download links rendered into a DOM (happy-dom), issue 23: a finished run links
// each run format of GET /api/v1/runs/{id}/export/{format} (mmtests and LKP as tar, BMF as
// JSON) as downloads; a run still going links none (the controller refuses to export it), and
// the links appear when its stream says it ended.
import { afterEach, describe, expect, it, vi } from "vitest";
import { api } from "../api";
import { CompareResponse, Run, RunEvent, RunState } from "../api/gen/tlbfleet/v1/fleet";
import { RunPage } from "../pages/Run";
import { ExportLinks } from "./ExportLinks";
import { at, mount, settle, unmount } from "./test-dom";

afterEach(() => {
  unmount();
  vi.restoreAllMocks();
});

const links = (el: Element) =>
  [...el.querySelectorAll<HTMLAnchorElement>("[data-testid=export-links] a")].map((a) => ({
    text: a.textContent,
    href: a.getAttribute("href"),
    download: a.hasAttribute("download"),
  }));

const EXPECTED = [
  { text: "mmtests (tar)", href: "/api/v1/runs/7/export/mmtests", download: true },
  { text: "LKP (tar)", href: "/api/v1/runs/7/export/lkp", download: true },
  { text: "Bencher BMF (JSON)", href: "/api/v1/runs/7/export/bmf", download: true },
];

describe("ExportLinks", () => {
  it("links every run format of the export endpoint once the run has ended", () => {
    for (const state of [
      RunState.RUN_STATE_SUCCEEDED,
      RunState.RUN_STATE_FAILED,
      RunState.RUN_STATE_CANCELLED,
    ]) {
      const el = mount(<ExportLinks runId="7" state={state} />);
      expect(links(el)).toEqual(EXPECTED);
      expect(el.querySelector("[data-testid=export-links]")!.textContent).toBe(
        "Download as mmtests (tar), LKP (tar), Bencher BMF (JSON)",
      );
      expect(el.querySelector("[data-testid=export-mmtests]")!.getAttribute("title")).toContain(
        "compare-mmtests.pl",
      );
      unmount();
    }
  });

  it("links nothing for a run still queued or running", () => {
    for (const state of [RunState.RUN_STATE_QUEUED, RunState.RUN_STATE_RUNNING]) {
      const el = mount(<ExportLinks runId="7" state={state} />);
      expect(el.querySelector("[data-testid=export-links]")).toBeNull();
      unmount();
    }
  });

  it("escapes the run id into the path", () => {
    const el = mount(<ExportLinks runId="a/b" state={RunState.RUN_STATE_SUCCEEDED} />);
    expect(links(el)[0]!.href).toBe("/api/v1/runs/a%2Fb/export/mmtests");
  });
});

describe("RunPage", () => {
  const base = {
    id: "7",
    spec: { name: "it", benchmark: "ebizzy", arms: [{ name: "base" }] },
    jobs: { total: 3, succeeded: 3 },
    iterationsPerBoot: 3,
  };

  it("shows the download links of a finished run", async () => {
    vi.spyOn(api, "getRun").mockResolvedValue(
      Run.fromJSON({ ...base, state: "RUN_STATE_SUCCEEDED", finishedUnix: "1768439600" }),
    );
    vi.spyOn(api, "compare").mockResolvedValue(
      CompareResponse.fromJSON({ report: { runId: "7", arms: ["base"] } }),
    );
    const el = mount(<RunPage runId="7" location={at("/runs/7")} />);
    await settle();
    expect(links(el)).toEqual(EXPECTED);
  });

  it("shows none while the run is going, and the links once its stream says it ended", async () => {
    const running = Run.fromJSON({ ...base, state: "RUN_STATE_RUNNING" });
    vi.spyOn(api, "getRun").mockResolvedValue(running);
    vi.spyOn(api, "compare").mockResolvedValue(
      CompareResponse.fromJSON({ report: { runId: "7", arms: ["base"] } }),
    );
    let write: (e: RunEvent) => void = () => {};
    vi.spyOn(api, "openStream").mockImplementation(async (_url, _headers, signal) => {
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          write = (e) =>
            controller.enqueue(
              new TextEncoder().encode(
                `id: ${e.id}\ndata: ${JSON.stringify(RunEvent.toJSON(e))}\n\n`,
              ),
            );
          signal.addEventListener("abort", () => controller.error(signal.reason), {
            once: true,
          });
        },
      });
      return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } });
    });
    const el = mount(<RunPage runId="7" location={at("/runs/7")} />);
    await settle();
    expect(el.querySelector("[data-testid=export-links]")).toBeNull();

    vi.spyOn(api, "getRun").mockResolvedValue(
      Run.fromJSON({ ...base, state: "RUN_STATE_SUCCEEDED", finishedUnix: "1768439600" }),
    );
    write(
      RunEvent.fromJSON({
        id: "9",
        runId: "7",
        timeUnixMs: "1768439600000",
        state: { state: "RUN_STATE_SUCCEEDED", reason: "all jobs succeeded" },
      }),
    );
    await settle(20);
    expect(links(el)).toEqual(EXPECTED);
  });
});
