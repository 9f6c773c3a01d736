// @vitest-environment happy-dom
// The run's one report rendered into a DOM (happy-dom), issue 24: the Run page draws its table,
// flush profiles and ceiling recommendations from the controller's message and downloads the
// controller's CSV; the Compare page shows two arms of a run from the run's report, and arms of
// two runs from the controller's report across runs, with its verdicts, scope and notes.
// happy-dom has no canvas, so uPlot is replaced by a recorder of what it was given.
import { act } from "preact/test-utils";
import type { AlignedData, Options } from "uplot";
import { afterEach, describe, expect, it, vi } from "vitest";
import { api } from "../api";
import { InvalidArgumentError } from "../api/errors";
import { FlushProfile, Report } from "../api/gen/tlbfleet/v1/common";
import { CompareResponse, Run } from "../api/gen/tlbfleet/v1/fleet";
import { PROFILES } from "../lib/testdata/flush";
import { REPORT } from "../lib/testdata/report";
import { ComparePage } from "../pages/Compare";
import { RunPage } from "../pages/Run";
import { at, mount, settle, unmount } from "./test-dom";

const plots = vi.hoisted(() => [] as { opts: Options; data: AlignedData }[]);
vi.mock("uplot", () => {
  class Recorder {
    static paths = { bars: () => () => null };
    constructor(opts: Options, data: AlignedData) {
      plots.push({ opts, data });
    }
    destroy() {}
  }
  return { default: Recorder };
});

afterEach(() => {
  unmount();
  plots.length = 0;
  vi.restoreAllMocks();
});

const texts = (el: Element, selector: string) =>
  [...el.querySelectorAll(selector)].map((e) => e.textContent ?? "");

const DONE = Run.fromJSON({
  id: "7",
  state: "RUN_STATE_SUCCEEDED",
  spec: {
    name: "flush",
    benchmark: "ebizzy",
    arms: [{ name: "ceiling-512" }, { name: "ceiling-1" }],
  },
  finishedUnix: "1764400000",
});

/** REPORT with the flush profiles' arms, a significant headline cell and the profiles. */
function reportJson(): Record<string, unknown> {
  const json = Report.toJSON(REPORT) as { groups: Record<string, unknown>[] };
  return {
    ...json,
    arms: ["ceiling-512", "ceiling-1"],
    ceilings: "flush ceiling per arm: ceiling-512 512; ceiling-1 1",
    groups: json.groups.map((g, i) => ({
      ...g,
      records: [
        { arm: "ceiling-512", min: 1, max: 2 },
        { arm: "ceiling-1", min: 1, max: 2, significant: i === 0 },
      ],
    })),
    flushProfiles: PROFILES.map((p) => FlushProfile.toJSON(p)),
  };
}

describe("RunPage's report", () => {
  function withReport(extra: Record<string, unknown> = {}) {
    vi.spyOn(api, "getRun").mockResolvedValue(DONE);
    const json = reportJson();
    return vi
      .spyOn(api, "compare")
      .mockResolvedValue(
        CompareResponse.fromJSON({ report: { ...json, ...extra }, text: "ebizzy — run 7" }),
      );
  }

  it("draws the table and the flush profiles from the one report, with no samples fetched", async () => {
    const compare = withReport();
    const csv = vi.spyOn(api, "resultsCsv");
    const el = mount(<RunPage runId="7" location={at("/runs/7")} />);
    await settle();
    expect(compare).toHaveBeenCalledTimes(1);
    expect(compare.mock.calls[0]!.slice(0, 2)).toEqual(["7", { baseline: "", flushParam: "" }]);
    expect(csv).not.toHaveBeenCalled();
    expect(el.querySelector("[data-testid=report-ceilings]")!.textContent).toBe(
      "flush ceiling per arm: ceiling-512 512; ceiling-1 1",
    );

    // The headline row (the report's flag) marks the significant arm as compare-kernels does.
    const table = el.querySelector("[data-testid=table-records_per_sec]")!;
    const headline = table.querySelector("tbody tr.headline")!;
    expect(headline.querySelector("th")!.textContent).toBe("Hmean");
    expect(headline.querySelector("td.significant")!.textContent).toBe("2000.00 *+100.00%*");
    // A spread: its % shown uncoloured.
    const stddev = [...table.querySelectorAll("tbody tr")].find(
      (r) => r.querySelector("th")!.textContent === "Stddev",
    )!;
    expect(stddev.querySelectorAll("td")[2]!.className).toBe("num tone-none");

    // One histogram per arm on the same axis, the report's shares as its data.
    const flush = el.querySelector("#flush")!;
    expect(texts(flush, "figure figcaption")).toEqual([
      "ceiling-512: 400 flushes in 6 iterations, 3 lost",
      "ceiling-1: 400 flushes in 6 iterations",
    ]);
    const bars = plots.filter((p) => p.opts.axes?.[0]?.label === "pages per flush");
    expect(bars.map((p) => p.data)).toEqual([
      [
        [0, 1, 2],
        [5, 0, 95],
      ],
      [
        [0, 1, 2],
        [25, 75, 0],
      ],
    ]);
    expect(flush.querySelector("[data-testid=flush-ceiling-1]")!.getAttribute("data-points")).toBe(
      "2",
    );
    // The 2014 table with the cost per call, the reasons by name, and the notes.
    const local = flush.querySelector("[data-testid=flush-local-ceiling-512] tbody tr")!;
    expect(texts(local, "th, td")).toEqual([
      "65-128",
      "380",
      "100.00%",
      "100.00%",
      "380",
      "5123.40",
      "5000.00",
      "6100.00",
      "7300.00",
    ]);
    expect(
      flush.querySelector("[data-testid=flush-local-ceiling-1] thead")!.textContent,
    ).not.toContain("calls");
    expect(texts(flush, "[data-testid=flush-reasons] tbody tr")).toEqual([
      "0 task switch010",
      "3 local mm shootdown400390",
      "events400400",
      "lost (buffer full)30",
      "iterations66",
    ]);
    expect(texts(flush, "[data-testid=flush-notes] li")).toHaveLength(3);
    // A choice of sweep value for the profiles.
    expect(texts(flush, "[data-testid=flush-param] option")).toEqual([
      "all",
      "threads=2",
      "threads=10",
      "threads=1",
    ]);
  });

  it("asks the report for one sweep value's flush profile when the URL names one", async () => {
    const compare = withReport();
    mount(<RunPage runId="7" location={at("/runs/7?flush=10&baseline=ceiling-1")} />);
    await settle();
    expect(compare.mock.calls[0]!.slice(0, 2)).toEqual([
      "7",
      { baseline: "ceiling-1", flushParam: "10" },
    ]);
  });

  it("says there is no flush profile when the report has none", async () => {
    withReport({ flushProfiles: [] });
    const el = mount(<RunPage runId="7" location={at("/runs/7")} />);
    await settle();
    expect(el.querySelector("[data-testid=flush-none]")).not.toBeNull();
    expect(el.querySelector("[data-testid=flush-param]")).toBeNull();
  });

  it("shows a ceiling sweep's recommendation as the report gives it", async () => {
    withReport({
      ceilingRecommendations: [
        {
          microarch: "skylake",
          arm: "a",
          metric: "records_per_sec",
          unit: "records/s",
          better: "BETTER_HIGHER",
          values: [
            {
              ceiling: "1",
              mean: 90,
              samples: "6",
              boots: 1,
              verdict: "worse",
              ratio: 0.9,
              ratioLow: 0.85,
              ratioHigh: 0.95,
            },
            {
              ceiling: "33",
              mean: 100,
              samples: "6",
              boots: 1,
              verdict: "same",
              ratio: 1.0,
              ratioLow: 0.99,
              ratioHigh: 1.01,
            },
            { ceiling: "512", mean: 100.5, samples: "6", boots: 1, verdict: "best" },
          ],
          best: "512",
          recommended: "33",
          recommendedVerdict: "same",
        },
      ],
    });
    const el = mount(<RunPage runId="7" location={at("/runs/7")} />);
    await settle();
    const recs = el.querySelector("#ceiling [data-testid=ceiling-recommendations]")!;
    expect(texts(recs, "tbody tr")).toEqual([
      "190.0061worse0.9000 [0.8500, 0.9500]",
      "33100.0061same ← recommended1.0000 [0.9900, 1.0100]",
      "512100.5061best",
    ]);
    expect(recs.querySelector("[data-testid=ceiling-recommended]")!.textContent).toBe(
      "Recommended ceiling for skylake: 33 (best 512; the smallest ceiling not worse than the best: equivalent to the best)",
    );
  });

  it("downloads the controller's CSV through the API client", async () => {
    withReport();
    const blob = new Blob(["run_id\n7\n"], { type: "text/csv" });
    const csv = vi.spyOn(api, "resultsCsv").mockResolvedValue(blob);
    const created = vi.spyOn(URL, "createObjectURL").mockReturnValue("blob:samples");
    const clicked: { href: string; download: string }[] = [];
    vi.spyOn(HTMLAnchorElement.prototype, "click").mockImplementation(function (
      this: HTMLAnchorElement,
    ) {
      clicked.push({ href: this.getAttribute("href") ?? "", download: this.download });
    });
    const el = mount(<RunPage runId="7" location={at("/runs/7")} />);
    await settle();
    const button = el.querySelector<HTMLButtonElement>("[data-testid=csv-download]")!;
    await act(async () => button.click());
    await settle();
    expect(csv).toHaveBeenCalledWith("7");
    expect(created).toHaveBeenCalledWith(blob);
    expect(clicked).toEqual([{ href: "blob:samples", download: "run-7-samples.csv" }]);
  });
});

/** A report across runs as the controller sends it for ?a=7:mmap&b=8:mmap. */
const ACROSS = {
  runId: "7",
  title: "ebizzy — run 7 (a) against run 8 (b), across runs",
  arms: ["7:mmap", "8:mmap"],
  scope: "across runs",
  level: 0.95,
  groups: [
    {
      metric: "records_per_sec",
      unit: "records/s",
      better: "BETTER_HIGHER",
      paramName: "threads",
      paramValue: "1",
      n: [3, 3],
      boots: [1, 1],
      stats: [
        {
          name: "Hmean",
          values: [100, 104],
          pctDiff: [0, 4],
          defined: [true, true],
          headline: true,
        },
      ],
      records: [
        { arm: "7:mmap", min: 99, max: 101 },
        { arm: "8:mmap", min: 103, max: 105, significant: true },
      ],
      verdicts: [
        {
          arm: "8:mmap",
          verdict: "better",
          scope: "within-boot",
          design: "unpaired-iterations",
          ratio: 1.04,
          ciLow: 1.02,
          ciHigh: 1.06,
          p: 0.001,
          q: 0.001,
          notes: [
            "across runs: these arms come from runs 7 and 8, measured at different times (perhaps on other hosts and kernels); the interval covers whatever else changed between the runs, not only the arms",
          ],
        },
      ],
    },
  ],
  hosts: [
    { arm: "7:mmap", hostname: "vm1", agentId: "a1", samples: "3", boots: 1 },
    { arm: "8:mmap", hostname: "vm2", agentId: "a2", samples: "3", boots: 1 },
  ],
};

describe("ComparePage", () => {
  it("compares arms of two runs through the controller's report across runs", async () => {
    const compare = vi
      .spyOn(api, "compare")
      .mockResolvedValue(CompareResponse.fromJSON({ report: ACROSS }));
    const el = mount(<ComparePage location={at("/compare?a=7:mmap&b=8:mmap")} />);
    await settle();
    expect(compare).toHaveBeenCalledTimes(1);
    expect(compare.mock.calls[0]!.slice(0, 2)).toEqual([
      "7",
      { withRunId: "8", arm: "mmap", withArm: "mmap" },
    ]);
    expect(el.querySelector("[data-testid=report-scope]")!.textContent).toContain(
      "Scope: across runs. 7:mmap and 8:mmap are different runs",
    );
    const verdicts = el.querySelector("[data-testid=verdicts-records_per_sec] tbody tr")!;
    const cells = texts(verdicts, "td");
    expect(cells.slice(0, 4)).toEqual([
      "threads=1",
      "8:mmap",
      "better",
      "+4.00% [+2.00%, +6.00%] (95%)",
    ]);
    expect(cells[6]).toBe("across runs, within one boot, unpaired iterations");
    expect(cells[7]).toContain("across runs: these arms come from runs 7 and 8");
    expect(texts(el, "[data-testid=table-records_per_sec] table.mmtests thead th")).toEqual([
      "statistic",
      "sweep",
      "7:mmap (baseline)",
      "8:mmap",
    ]);
    expect(texts(el, "#cmp-hosts tbody tr td:first-child")).toEqual(["7:mmap", "8:mmap"]);
  });

  it("compares two runs' every arm when no arm is named", async () => {
    const compare = vi
      .spyOn(api, "compare")
      .mockResolvedValue(CompareResponse.fromJSON({ report: ACROSS }));
    mount(<ComparePage location={at("/compare?a=7&b=8")} />);
    await settle();
    expect(compare.mock.calls[0]!.slice(0, 2)).toEqual([
      "7",
      { withRunId: "8", arm: "", withArm: "" },
    ]);
  });

  it("shows the server's refusal at the input it is about", async () => {
    vi.spyOn(api, "compare").mockRejectedValue(
      new InvalidArgumentError(
        400,
        "INVALID_ARGUMENT",
        'with_arm: run 8 has no arm named "x" (arms: mmap, malloc)',
        "with_arm",
      ),
    );
    const el = mount(<ComparePage location={at("/compare?a=7:mmap&b=8:x")} />);
    await settle();
    expect(el.querySelector("[data-testid=error-cmp-b-error]")!.textContent).toBe(
      'with_arm: run 8 has no arm named "x" (arms: mmap, malloc)',
    );
    expect(el.querySelector("#cmp-b")!.getAttribute("aria-invalid")).toBe("true");
    expect(el.querySelector("[data-testid=error-cmp-a-error]")).toBeNull();
  });

  it("shows two arms of one run from the run's own report, the first as baseline", async () => {
    const json = reportJson();
    const compare = vi.spyOn(api, "compare").mockResolvedValue(
      CompareResponse.fromJSON({
        report: {
          ...json,
          arms: ["ceiling-1", "ceiling-512", "other"],
          groups: (json.groups as Record<string, unknown>[]).map((g) => ({
            ...g,
            n: [3, 4, 5],
            verdicts: [
              { arm: "ceiling-512", verdict: "worse", scope: "within-boot" },
              { arm: "other", verdict: "better", scope: "within-boot" },
            ],
          })),
        },
      }),
    );
    const el = mount(<ComparePage location={at("/compare?a=7:ceiling-1&b=7:ceiling-512")} />);
    await settle();
    expect(compare.mock.calls[0]!.slice(0, 2)).toEqual(["7", { baseline: "ceiling-1" }]);
    const table = el.querySelector("[data-testid=table-records_per_sec]")!;
    expect(texts(table, "table.mmtests thead th").slice(2)).toEqual([
      "ceiling-1 (baseline)",
      "ceiling-512",
    ]);
    expect(texts(el, "[data-testid=verdicts-records_per_sec] tbody tr td:nth-child(3)")).toEqual([
      "worse",
      "worse",
      "worse",
    ]);
    expect(el.querySelector("[data-testid=report-scope]")).toBeNull();
    // Only the arms shown have flush profiles here.
    expect(texts(el, "#cmp-flush figure figcaption").map((t) => t.split(":")[0])).toEqual([
      "ceiling-1",
      "ceiling-512",
    ]);
  });

  it("says so when an arm of the run does not exist", async () => {
    vi.spyOn(api, "compare").mockResolvedValue(CompareResponse.fromJSON({ report: reportJson() }));
    const el = mount(<ComparePage location={at("/compare?a=7:ceiling-1&b=7:nope")} />);
    await settle();
    expect(el.querySelector("[data-testid=error-cmp-b-error]")!.textContent).toBe(
      'run 7 has no arm named "nope" (arms: ceiling-512, ceiling-1)',
    );
  });
});
