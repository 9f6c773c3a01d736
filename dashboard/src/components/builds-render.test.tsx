// @vitest-environment happy-dom
// A run's kernel builds rendered into a DOM (happy-dom), issue 21: one row per kernel arm with
// its revision, config, state, commit, build and log; BuildEvents over SSE grow the log's tail
// and change the state, and the run is read again for what only it says; the whole log is read
// only when the user asks; a run without kernel arms has no section and no extra request.
import { act } from "preact/test-utils";
import { afterEach, describe, expect, it, vi } from "vitest";
import { api } from "../api";
import { CompareResponse, GetBuildLogResponse, Run, RunEvent } from "../api/gen/tlbfleet/v1/fleet";
import { BUILD_ID_BASE, BUILDING_RUN_JSON, COMMIT_BASE, COMMIT_TIP } from "../lib/testdata/builds";
import { RunPage } from "../pages/Run";
import { KernelBuildsView } from "./KernelBuilds";
import { at, mount, settle, unmount } from "./test-dom";

afterEach(() => {
  unmount();
  vi.restoreAllMocks();
});

/** Waits `ms` of real time inside act (the page reads the run again a moment after a burst). */
async function waitMs(ms: number): Promise<void> {
  await act(async () => {
    await new Promise((r) => setTimeout(r, ms));
  });
  await settle();
}

/** A text/event-stream body the test writes events to; it stays open until aborted. */
function sseStream(signal: AbortSignal) {
  let write: (events: RunEvent[]) => void = () => {};
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      write = (events) =>
        controller.enqueue(
          new TextEncoder().encode(
            events
              .map((e) => `id: ${e.id}\ndata: ${JSON.stringify(RunEvent.toJSON(e))}\n\n`)
              .join(""),
          ),
        );
      signal.addEventListener("abort", () => controller.error(signal.reason), { once: true });
    },
  });
  const response = new Response(body, {
    status: 200,
    headers: { "Content-Type": "text/event-stream" },
  });
  return { response, write: (events: RunEvent[]) => write(events) };
}

const buildEvent = (id: number, build: Record<string, unknown>) =>
  RunEvent.fromJSON({ id: String(id), runId: "7", timeUnixMs: String(1768439600000 + id), build });

const texts = (el: Element, selector: string) =>
  [...el.querySelectorAll(selector)].map((x) => x.textContent);

describe("KernelBuildsView", () => {
  it("shows each build's revision, config, state, commit, build, log size and last lines", () => {
    const run = Run.fromJSON(BUILDING_RUN_JSON);
    const el = mount(<KernelBuildsView builds={run.builds} />);
    expect(el.querySelector("h2")!.textContent).toBe("Kernel builds");

    const base = el.querySelector("[data-testid=build-11]")!;
    expect(base.querySelector(".build-head")!.textContent).toBe(
      "arm base: linux lab-base with config lab succeeded built before",
    );
    expect(base.querySelector("[data-testid=build-commit]")!.textContent).toBe(
      "0f1e2d3c4b5a mm: lab base (Lab <lab@example.com>)",
    );
    expect(base.querySelector("[data-testid=build-commit] code")!.getAttribute("title")).toBe(
      COMMIT_BASE,
    );
    expect(base.querySelector("[data-testid=build-id]")!.textContent).toBe(
      "5e1f0c7a9b3d2e4f, release 6.8.0-lab+",
    );
    expect(base.querySelector("[data-testid=build-id] code")!.getAttribute("title")).toBe(
      BUILD_ID_BASE,
    );
    expect(base.querySelector("[data-testid=build-log-lines]")!.textContent).toBe("3 log lines");
    expect(base.querySelector("[data-testid=build-tail]")!.textContent).toBe(
      "  CC mm/memory.o\n  LD vmlinux\nKernel: arch/x86/boot/bzImage is ready",
    );
    expect(base.querySelector("[data-testid=build-reason]")).toBeNull();

    const fix = el.querySelector("[data-testid=build-12]")!;
    expect(fix.querySelector("[data-testid=build-revision]")!.textContent).toBe(
      "linux lab-tip with 0f1e2d3c4b5a reverted",
    );
    expect(fix.querySelector("[data-testid=build-state]")!.textContent).toBe(
      "building on vm-builder",
    );
    expect(fix.querySelector("[data-testid=build-state]")!.className).toBe("state state-running");
    expect(fix.querySelector("[data-testid=build-reused]")).toBeNull();
    expect(fix.querySelector("[data-testid=build-commit]")!.textContent).toBe(
      "a1b2c3d4e5f6 x86/mm: flush fewer pages",
    );
    expect(fix.querySelector("[data-testid=build-id]")).toBeNull(); // not built yet
    expect(fix.querySelector("[data-testid=build-log-lines]")!.textContent).toBe("1,204 log lines");
    expect(fix.querySelector("[data-testid=build-log-button-12]")!.textContent).toBe(
      "Show the whole log (1,204 log lines)",
    );
  });

  it("says why a build failed, and offers no log before there is one", () => {
    const run = Run.fromJSON({
      builds: [
        {
          taskId: "5",
          arm: "base",
          kernel: { source: "linux", rev: "no-such-tag", config: "lab" },
          state: "failed",
          reason: "revision no-such-tag does not resolve",
        },
      ],
    });
    const el = mount(<KernelBuildsView builds={run.builds} />);
    expect(el.querySelector("[data-testid=build-state]")!.textContent).toBe("failed");
    const reason = el.querySelector("[data-testid=build-reason]")!;
    expect(reason.textContent).toBe("revision no-such-tag does not resolve");
    expect(reason.className).toBe("error");
    expect(reason.previousElementSibling!.textContent).toBe("why it failed");
    expect(el.querySelector("[data-testid=build-log-lines]")!.textContent).toBe("no log yet");
    expect(el.querySelector("[data-testid=build-tail]")).toBeNull();
    expect(el.querySelector("[data-testid=build-log-button-5]")).toBeNull();
  });

  it("renders nothing for a run without kernel arms", () => {
    const el = mount(<KernelBuildsView builds={[]} />);
    expect(el.childNodes).toHaveLength(0);
  });
});

describe("RunPage with kernel builds", () => {
  it("grows a build's tail from its events, keeps the last 50 lines, and reads the run again when it changes state", async () => {
    const building = Run.fromJSON(BUILDING_RUN_JSON);
    const built = Run.fromJSON({
      ...BUILDING_RUN_JSON,
      builds: [
        BUILDING_RUN_JSON.builds[0],
        {
          ...BUILDING_RUN_JSON.builds[1],
          state: "succeeded",
          buildId: "77aa88bb99cc00dd11ee22ff",
          kernelRelease: "6.9.0-rc1-lab+",
          logLines: "1264",
        },
      ],
    });
    const getRun = vi.spyOn(api, "getRun").mockResolvedValue(building);
    const buildLog = vi.spyOn(api, "buildLog");
    let stream: ReturnType<typeof sseStream> | undefined;
    vi.spyOn(api, "openStream").mockImplementation(async (_url, _headers, signal) => {
      stream = sseStream(signal);
      return stream.response;
    });
    const el = mount(<RunPage runId="7" location={at("/runs/7")} />);
    await settle();

    expect(el.querySelector("[data-testid=arms]")!.textContent).toBe(
      "base (kernel linux lab-base), fix (kernel linux lab-tip with 0f1e2d3c4b5a reverted)",
    );
    const fix = () => el.querySelector("[data-testid=build-12]")!;
    const tail = () => fix().querySelector("[data-testid=build-tail]")!.textContent!.split("\n");
    expect(tail()).toEqual(["  CC kernel/fork.o", "  CC kernel/exit.o"]);
    const readsBefore = getRun.mock.calls.length;

    // Log batches of the build that is building: the tail grows, nothing else is read.
    const batch = (from: number) => Array.from({ length: 30 }, (_, i) => `  CC f${from + i}.o`);
    stream!.write([
      buildEvent(100, {
        taskId: "12",
        arm: "fix",
        state: "building",
        commit: COMMIT_TIP,
        logLines: batch(1),
      }),
      buildEvent(101, {
        taskId: "12",
        arm: "fix",
        state: "building",
        commit: COMMIT_TIP,
        logLines: batch(31),
      }),
    ]);
    await waitMs(400);
    expect(tail()).toHaveLength(50);
    expect(tail()[0]).toBe("  CC f11.o");
    expect(tail().at(-1)).toBe("  CC f60.o");
    expect(fix().querySelector("[data-testid=build-state]")!.textContent).toBe(
      "building on vm-builder",
    );
    expect(getRun.mock.calls.length).toBe(readsBefore);
    // The run's event log says the build's state once, not once per batch of its log.
    expect(
      texts(el, "[data-testid=event-log] li").filter((t) => t!.includes("kernel build")),
    ).toEqual(["01:13:20 kernel build of arm fix (a1b2c3d4e5f6): building"]);

    // It succeeds: the state at once, then the run read again for its build id and release.
    getRun.mockResolvedValue(built);
    stream!.write([
      buildEvent(102, {
        taskId: "12",
        arm: "fix",
        state: "succeeded",
        commit: COMMIT_TIP,
        logLines: ["Kernel: arch/x86/boot/bzImage is ready"],
      }),
    ]);
    await settle();
    expect(fix().querySelector("[data-testid=build-state]")!.textContent).toBe("succeeded");
    expect(tail().at(-1)).toBe("Kernel: arch/x86/boot/bzImage is ready");
    expect(el.querySelector("[data-testid=event-log]")!.textContent).toContain(
      "kernel build of arm fix (a1b2c3d4e5f6): succeeded",
    );
    await waitMs(400);
    expect(getRun.mock.calls.length).toBe(readsBefore + 1);
    expect(fix().querySelector("[data-testid=build-id]")!.textContent).toBe(
      "77aa88bb99cc00dd, release 6.9.0-rc1-lab+",
    );
    expect(fix().querySelector("[data-testid=build-log-lines]")!.textContent).toBe(
      "1,264 log lines",
    );
    // The events' tail is kept over the run's shorter one.
    expect(tail()).toHaveLength(50);
    // The whole log was never asked for.
    expect(buildLog).not.toHaveBeenCalled();
  });

  it("reads the whole log only when asked, and shows it", async () => {
    const failed = Run.fromJSON({
      ...BUILDING_RUN_JSON,
      state: "RUN_STATE_FAILED",
      error: "arm fix: kernel linux lab-tip: the build failed",
      finishedUnix: "1768439700",
      builds: [
        BUILDING_RUN_JSON.builds[0],
        {
          ...BUILDING_RUN_JSON.builds[1],
          state: "failed",
          reason: "make bzImage failed: kernel/exit.c:12: error: expected ';'",
          logLines: "3",
          logTail: ["  CC kernel/exit.o", "kernel/exit.c:12: error: expected ';'"],
        },
      ],
    });
    vi.spyOn(api, "getRun").mockResolvedValue(failed);
    vi.spyOn(api, "compare").mockResolvedValue(CompareResponse.fromJSON({ report: {} }));
    const whole = [
      "  CC kernel/fork.o",
      "  CC kernel/exit.o",
      "kernel/exit.c:12: error: expected ';'",
    ];
    const buildLog = vi.spyOn(api, "buildLog").mockResolvedValue(
      GetBuildLogResponse.fromJSON({
        build: { taskId: "12", arm: "fix", state: "failed", logLines: "3" },
        lines: whole,
      }),
    );
    const el = mount(<RunPage runId="7" location={at("/runs/7")} />);
    await settle();
    expect(buildLog).not.toHaveBeenCalled();
    const fix = el.querySelector("[data-testid=build-12]")!;
    expect(fix.querySelector("[data-testid=build-state]")!.textContent).toBe("failed");
    expect(fix.querySelector("[data-testid=build-reason]")!.textContent).toBe(
      "make bzImage failed: kernel/exit.c:12: error: expected ';'",
    );

    const button = fix.querySelector<HTMLButtonElement>("[data-testid=build-log-button-12]")!;
    await act(async () => {
      button.click();
    });
    await settle();
    expect(buildLog).toHaveBeenCalledTimes(1);
    expect(buildLog.mock.calls[0]![0]).toBe(12);
    expect(fix.querySelector("[data-testid=build-log-12]")!.textContent).toBe(whole.join("\n"));
    expect(fix.querySelector("[data-testid=build-log-size-12]")!.textContent).toBe("3 log lines");
    expect(button.textContent).toBe("Read the whole log again");
  });

  it("has no builds section and asks for no log for a run without kernel arms", async () => {
    vi.spyOn(api, "getRun").mockResolvedValue(
      Run.fromJSON({
        id: "8",
        state: "RUN_STATE_SUCCEEDED",
        spec: {
          name: "plain",
          benchmark: "ebizzy",
          arms: [{ name: "a" }, { name: "b", ceiling: "64" }],
        },
        finishedUnix: "1768439700",
      }),
    );
    vi.spyOn(api, "compare").mockResolvedValue(CompareResponse.fromJSON({ report: {} }));
    const buildLog = vi.spyOn(api, "buildLog");
    const el = mount(<RunPage runId="8" location={at("/runs/8")} />);
    await settle();
    expect(el.querySelector("#builds")).toBeNull();
    expect(el.querySelector("[data-testid=arms]")!.textContent).toBe("a, b (ceiling 64)");
    expect(buildLog).not.toHaveBeenCalled();
    expect(texts(el, "h2")).not.toContain("Kernel builds");
  });
});
