// @vitest-environment happy-dom
// The History page's components rendered into a DOM (happy-dom): the chart hands uPlot the
// series' points and lists its change points as text, and a click on a drawn point opens its
// run; the regressions table shows its actions to operators only, and a click asks the API.
// happy-dom has no canvas, so uPlot is replaced here by a recorder with a linear valToPos;
// the options and the overlay are tested in src/lib/series-plot.test.ts, the real canvas in
// the browser test (tests/browser/history.test.mjs), which cannot cause a real regression.
import { render } from "preact";
import { act } from "preact/test-utils";
import type { AlignedData, Options } from "uplot";
import { afterEach, describe, expect, it, vi } from "vitest";
import { api } from "../api";
import {
  ListRegressionsResponse,
  ListSeriesResponse,
  RegressionStatus,
  type Regression,
  type Series,
} from "../api/gen/tlbfleet/v1/nightly";
import { RegressionsTable } from "./RegressionsTable";
import { SeriesChart } from "./SeriesChart";

const DAY = 86_400_000;

/** Each uPlot the components made: its options, data and overlay element. */
const plots = vi.hoisted(
  () => [] as { opts: Options; data: AlignedData; over: HTMLElement; destroyed: boolean }[],
);
vi.mock("uplot", () => ({
  default: class {
    over: HTMLElement;
    opts: Options;
    constructor(opts: Options, data: AlignedData, target: HTMLElement) {
      this.opts = opts;
      this.over = document.createElement("div");
      target.appendChild(this.over);
      plots.push({ opts, data, over: this.over, destroyed: false });
    }
    /** 100 CSS px per x unit from the x range's start, y = value. */
    valToPos(v: number, scale: string) {
      const x = this.opts.scales!.x!.range as [number, number];
      return scale === "x" ? ((v - x[0]) / DAY) * 100 : v;
    }
    destroy() {
      plots.find((p) => p.over === this.over)!.destroyed = true;
    }
  },
}));

function series(estimates: number[]): Series {
  return ListSeriesResponse.fromJSON({
    series: [
      {
        id: "1",
        key: { microarch: "skylake", benchmark: "pipetest", metric: "usecs_per_op" },
        better: "BETTER_LOWER",
        points: estimates.map((e, i) => ({
          runId: `r${i}`,
          finishedUnixMs: String(Date.UTC(2026, 10, 1) + i * DAY),
          estimate: e,
          low: e - 0.5,
          high: e + 0.5,
        })),
      },
    ],
  }).series[0]!;
}

function regression(over: Record<string, unknown>): Regression {
  return ListRegressionsResponse.fromJSON({
    regressions: [
      {
        id: "g1",
        seriesId: "1",
        series: { microarch: "skylake", benchmark: "pipetest", metric: "usecs_per_op" },
        status: "REGRESSION_OPEN",
        firstBadRun: "r3",
        lastGoodRun: "r2",
        index: 3,
        relative: { estimate: 0.1, low: 0.05, high: 0.15 },
        goodKernel: "6.1.0-1",
        badKernel: "6.1.0-2",
        ...over,
      },
    ],
  }).regressions[0]!;
}

let root: HTMLElement | undefined;
function mount(node: preact.ComponentChild): HTMLElement {
  root = document.createElement("div");
  document.body.appendChild(root);
  act(() => render(node, root!));
  return root;
}
afterEach(() => {
  if (root) render(null, root);
  root?.remove();
  vi.restoreAllMocks();
});

describe("SeriesChart", () => {
  it("hands uPlot a point per run, lists the change before the first bad point, and a click opens a run", () => {
    plots.length = 0;
    const el = mount(
      <SeriesChart series={series([10, 10, 10, 11, 11, 11])} regressions={[regression({})]} />,
    );
    expect(plots).toHaveLength(1);
    const [plot] = plots;
    expect(plot!.data[1]).toEqual([10, 10, 10, 11, 11, 11]);
    expect(plot!.data[2]).toEqual([9.5, 9.5, 9.5, 10.5, 10.5, 10.5]);
    const figure = el.querySelector("[data-testid=series-chart]")!;
    expect(figure.getAttribute("data-points")).toBe("6");
    expect(figure.getAttribute("data-markers")).toBe("1");
    const markers = el.querySelectorAll("[data-testid=change-marker]");
    expect(markers).toHaveLength(1);
    expect(markers[0]!.getAttribute("data-index")).toBe("3");
    expect(markers[0]!.getAttribute("data-status")).toBe("open");
    expect(markers[0]!.textContent).toBe(
      "change before point 4 (run r3): +10.00% [+5.00%, +15.00%] open",
    );

    // The x range starts 0.2 days before the first point: point 2 is drawn at 220 px, y 10.
    history.replaceState(null, "", "/history");
    const click = (x: number, y: number) =>
      plot!.over.dispatchEvent(new MouseEvent("click", { clientX: x, clientY: y, button: 0 }));
    click(300, 10);
    expect(location.pathname).toBe("/history");
    click(222, 10);
    expect(location.pathname).toBe("/runs/r2");

    render(null, root!);
    expect(plot!.destroyed).toBe(true);
  });

  it("lists no change point for a regression of another run", () => {
    plots.length = 0;
    const el = mount(
      <SeriesChart
        series={series([1, 1, 1, 1])}
        regressions={[regression({ firstBadRun: "elsewhere" })]}
      />,
    );
    expect(el.querySelectorAll("[data-testid=change-marker]")).toHaveLength(0);
    const figure = el.querySelector("[data-testid=series-chart]")!;
    expect(figure.getAttribute("data-points")).toBe("4");
    expect(figure.getAttribute("data-markers")).toBe("0");
    expect(plots[0]!.data[0]).toHaveLength(4);
  });
});

describe("RegressionsTable", () => {
  const list = [
    regression({ id: "open1" }),
    regression({
      id: "ack1",
      status: "REGRESSION_ACKNOWLEDGED",
      bisectId: "",
      note: "no bisection: alert only",
    }),
  ];
  const buttons = (el: HTMLElement) =>
    [...el.querySelectorAll("button")].map((b) => b.textContent?.trim());

  it("shows a viewer the regressions with no action", () => {
    const el = mount(
      <RegressionsTable
        regressions={list}
        bisects={new Map()}
        canOperate={false}
        onChanged={() => {}}
      />,
    );
    expect(el.querySelectorAll("[data-testid=regression]")).toHaveLength(2);
    expect(buttons(el)).toEqual([]);
    expect(el.textContent).not.toContain("actions");
    const first = el.querySelector("[data-testid=regression]")!;
    expect(first.textContent).toContain("+10.00% [+5.00%, +15.00%]");
    expect(first.textContent).toContain("6.1.0-1 → 6.1.0-2");
    expect(first.querySelector("a[href='/runs/r3']")).not.toBeNull();
    expect(el.textContent).toContain("no bisection: alert only");
  });

  it("shows the commit range of a regression of kernels built from source", () => {
    const el = mount(
      <RegressionsTable
        regressions={[
          regression({ id: "b1", goodCommit: "a".repeat(40), badCommit: "b".repeat(40) }),
        ]}
        bisects={new Map()}
        canOperate={false}
        onChanged={() => {}}
      />,
    );
    const range = el.querySelector("[data-testid=commit-range]")!;
    expect(range.textContent).toBe(`${"a".repeat(12)}..${"b".repeat(12)}`);
    expect(range.getAttribute("title")).toBe(`${"a".repeat(40)}..${"b".repeat(40)}`);
  });

  it("gives an operator Acknowledge and Fixed on an open one, Fixed and Reopen on an acknowledged one", async () => {
    const update = vi
      .spyOn(api, "updateRegression")
      .mockResolvedValue(regression({ id: "open1", status: "REGRESSION_ACKNOWLEDGED" }));
    const onChanged = vi.fn();
    const el = mount(
      <RegressionsTable
        regressions={list}
        bisects={new Map()}
        canOperate={true}
        onChanged={onChanged}
      />,
    );
    const rows = el.querySelectorAll("[data-testid=regression]");
    expect(buttons(rows[0] as HTMLElement)).toEqual(["Acknowledge", "Fixed"]);
    expect(buttons(rows[1] as HTMLElement)).toEqual(["Fixed", "Reopen"]);
    await act(async () => {
      (rows[0]!.querySelector("[data-testid=ack-regression]") as HTMLButtonElement).click();
    });
    expect(update).toHaveBeenCalledWith("open1", RegressionStatus.REGRESSION_ACKNOWLEDGED);
    expect(onChanged).toHaveBeenCalledTimes(1);
  });
});
