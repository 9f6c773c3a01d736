import { describe, expect, it } from "vitest";
import { Better } from "../api/gen/tlbfleet/v1/common";
import { formatP, formatPct, formatValue } from "./format";
import { Report } from "../api/gen/tlbfleet/v1/common";
import { buildBlocks, formatVerdict, ratioAsBetterPct } from "./table";
import { REPORT } from "./testdata/report";

describe("number formats", () => {
  it("prints values as mmtests does and percentages signed", () => {
    expect(formatValue(4900.456)).toBe("4900.46");
    expect(formatValue(0.000123456)).toBe("0.0001235");
    expect(formatValue(undefined)).toBe("—");
    expect(formatPct(3.214)).toBe("+3.21%");
    expect(formatPct(-0.5)).toBe("-0.50%");
    expect(formatPct(-0.001)).toBe("0.00%");
    expect(formatP(0.0004)).toBe("<0.001");
    expect(formatP(0.0123)).toBe("0.012");
  });
});

describe("buildBlocks", () => {
  const [block] = buildBlocks(REPORT);

  it("makes one block per metric with a row per statistic and sweep value", () => {
    expect(block!.title).toBe("records_per_sec (records/s, higher is better)");
    expect(block!.rows.map((r) => `${r.stat} ${r.sweep}`).slice(0, 5)).toEqual([
      "Min threads=2",
      "Hmean threads=2",
      "Stddev threads=2",
      "Max threads=2",
      "Min threads=10",
    ]);
  });

  it("shows the baseline without %, others with a signed % and a tone; a spread has no tone", () => {
    const hmean = block!.rows[1]!;
    expect(hmean.headline).toBe(true);
    expect(hmean.cells.map((c) => [c.value, c.pct, c.tone])).toEqual([
      ["1000.00", "", "none"],
      ["2000.00", "+100.00%", "better"],
    ]);
    expect(block!.rows[5]!.cells[1]).toMatchObject({ pct: "-5.00%", tone: "worse" });
    // Stddev: the report marks it a spread (its % reads lower-is-better): shown, not coloured.
    expect(block!.rows[2]).toMatchObject({ stat: "Stddev", spread: true, headline: false });
    expect(block!.rows[2]!.cells[1]).toMatchObject({ pct: "-20.00%", tone: "none" });
  });

  it("reads spread and headline from the report, not from the statistics' names", () => {
    const [b] = buildBlocks(
      Report.fromJSON({
        arms: ["a", "b"],
        groups: [
          {
            metric: "m",
            better: "BETTER_LOWER",
            stats: [
              // A spread by any name gets no colour; "Stddev" unmarked is an ordinary row.
              {
                name: "IQR",
                values: [2, 3],
                pctDiff: [0, -50],
                defined: [true, true],
                spread: true,
              },
              { name: "Stddev", values: [2, 3], pctDiff: [0, -50], defined: [true, true] },
              {
                name: "Amean",
                values: [10, 9],
                pctDiff: [0, 10],
                defined: [true, true],
                headline: true,
              },
              { name: "Max", values: [10, 9], pctDiff: [0, 10], defined: [true, true] },
            ],
            records: [{ arm: "a" }, { arm: "b", significant: true }],
          },
        ],
      }),
    );
    const cells = b!.rows.map((r) => r.cells[1]!);
    expect(cells.map((c) => c.tone)).toEqual(["none", "worse", "better", "better"]);
    // The headline row marks the arm whose verdict test is significant, as the text's * *.
    expect(cells.map((c) => c.significant)).toEqual([false, false, true, false]);
    expect(b!.rows.map((r) => r.headline)).toEqual([false, false, true, false]);
  });

  it("gives no % where the baseline is undefined, or zero against a non-zero value", () => {
    const [b] = buildBlocks(
      Report.fromJSON({
        arms: ["a", "b"],
        groups: [
          {
            metric: "m",
            stats: [
              { name: "Min", values: [0, 3], pctDiff: [0, 0], defined: [true, true] },
              { name: "Max", values: [0, 3], pctDiff: [0, 5], defined: [false, true] },
              { name: "Hmean", values: [0, 0], pctDiff: [0, 0], defined: [true, true] },
            ],
          },
        ],
      }),
    );
    expect(b!.rows.map((r) => r.cells[1]!.pct)).toEqual(["", "", "0.00%"]);
  });

  it("shows an undefined value as a dash", () => {
    const row = block!.rows.find((r) => r.stat === "Hmean" && r.sweep === "threads=1")!;
    expect(row.cells[1]).toMatchObject({ value: "—", defined: false, pct: "" });
  });

  it("has a verdict row per sweep value and non-baseline arm, filled by verdictOf", () => {
    const [b] = buildBlocks(REPORT, (g, arm) =>
      g.paramValue === "2" ? { kind: "better", ratio: 1.0 + arm } : undefined,
    );
    expect(b!.verdicts.map((v) => [v.sweep, v.arm, v.verdict?.kind])).toEqual([
      ["threads=2", "malloc", "better"],
      ["threads=10", "malloc", undefined],
      ["threads=1", "malloc", undefined],
    ]);
  });
});

describe("the variance split", () => {
  it("shows each arm's standard deviations within and between boots and the share", () => {
    const [block] = buildBlocks(REPORT);
    expect(block!.variance.map((r) => r.sweep)).toEqual(["threads=2"]);
    expect(block!.variance[0]!.arms).toEqual([
      {
        arm: "mmap",
        boots: 3,
        iterations: "2",
        sdWithin: "4.00",
        sdBetween: "6.93",
        betweenShare: "75%",
        why: "",
      },
      {
        arm: "malloc",
        boots: 1,
        iterations: "3",
        sdWithin: "10.00",
        sdBetween: "—",
        betweenShare: "—",
        why: "one boot: between-boot variance unknown",
      },
    ]);
  });

  it("has no rows for a report without the split", () => {
    const [block] = buildBlocks(Report.fromJSON({ arms: ["a"], groups: [{ metric: "m" }] }));
    expect(block!.variance).toEqual([]);
  });
});

describe("formatVerdict", () => {
  it("states the change with its interval, p, q and scope (higher is better)", () => {
    const t = formatVerdict(
      {
        kind: "better",
        ratio: 1.032,
        low: 1.011,
        high: 1.054,
        level: 0.95,
        p: 0.003,
        q: 0.012,
        scope: "across-boots",
        boots: 5,
      },
      Better.BETTER_HIGHER,
    );
    expect(t).toEqual({
      label: "better",
      interval: "+3.20% [+1.10%, +5.40%] (95%)",
      p: "0.0030",
      q: "0.012",
      scope: "across 5 boots",
      sentence: "better (+3.20% [+1.10%, +5.40%] (95%), p 0.0030, q 0.012, across 5 boots)",
    });
  });

  it("turns a ratio below 1 into an improvement when lower is better, bounds swapped", () => {
    expect(ratioAsBetterPct(0.9, Better.BETTER_LOWER)).toBeCloseTo(10);
    const t = formatVerdict(
      { kind: "better", ratio: 0.9, low: 0.85, high: 0.95, scope: "within-boot" },
      Better.BETTER_LOWER,
    );
    expect(t.interval).toBe("+10.00% [+5.00%, +15.00%]");
    expect(t.scope).toBe("within one boot");
  });

  it("says across runs first when the report compares arms of different runs", () => {
    const t = formatVerdict(
      {
        kind: "same",
        ratio: 1.001,
        low: 0.995,
        high: 1.007,
        scope: "within-boot",
        reportScope: "across runs",
        design: "unpaired-iterations",
      },
      Better.BETTER_HIGHER,
    );
    expect(t.scope).toBe("across runs, within one boot, unpaired iterations");
    expect(formatVerdict({ kind: "unknown" }, Better.BETTER_HIGHER).scope).toBe("—");
  });

  it("says can't tell, and a dash when the report has no verdict", () => {
    expect(
      formatVerdict({ kind: "unknown", ratio: 1.01, low: 0.98, high: 1.04 }, Better.BETTER_HIGHER)
        .label,
    ).toBe("can't tell");
    expect(formatVerdict(undefined, Better.BETTER_HIGHER).label).toBe("—");
  });
});

describe("the report's own verdicts", () => {
  // Report.Group.verdicts as GET /api/v1/runs/{id}/compare sends them (canonical JSON: an
  // unset optional is absent), one per arm but the baseline.
  const json = Report.toJSON(REPORT) as { groups: Record<string, unknown>[] };
  const report = Report.fromJSON({
    ...json,
    level: 0.95,
    margin: 0.01,
    adjusted: true,
    groups: json.groups.map((g, i) => ({
      ...g,
      boots: [4, 4],
      verdicts:
        i === 0
          ? [
              {
                arm: "malloc",
                verdict: "worse",
                scope: "across-boots",
                design: "paired-boots",
                ratio: 0.95,
                ciLow: 0.9,
                ciHigh: 0.99,
                p: 0.002,
                q: 0.006,
                notes: ["worse: the 95 % interval lies below 1"],
              },
            ]
          : [{ arm: "malloc", verdict: "unknown", scope: "within-boot" }],
    })),
  });

  it("fills each row from its group's verdict for that arm, with the report's level", () => {
    const [b] = buildBlocks(report);
    const [two, ten] = b!.verdicts;
    expect(two!.verdict).toMatchObject({
      kind: "worse",
      ratio: 0.95,
      low: 0.9,
      high: 0.99,
      level: 0.95,
      p: 0.002,
      q: 0.006,
      scope: "across-boots",
      boots: 4,
      design: "paired-boots",
      notes: ["worse: the 95 % interval lies below 1"],
    });
    const t = formatVerdict(two!.verdict, b!.better);
    expect(t.interval).toBe("-5.00% [-10.00%, -1.00%] (95%)");
    expect(t.scope).toBe("across 4 boots, paired boots");
    expect(t.q).toBe("0.0060");
    // No ratio: "can't tell" and dashes, never invented numbers.
    expect(ten!.verdict).toMatchObject({ kind: "unknown", ratio: undefined, p: undefined });
    expect(formatVerdict(ten!.verdict, b!.better).interval).toBe("—");
  });
});
