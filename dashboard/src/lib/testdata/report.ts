// A comparison as GET /api/v1/runs/{id}/compare answers it (Report in the JSON mapping):
// two arms, a thread sweep, one higher-is-better metric; each group's records carry every
// figure per arm (here only Min and Max, the charts' band).
import { Report } from "../../api/gen/tlbfleet/v1/common";

const stats = (min: number[], hmean: number[], pct: number[], max: number[]) => [
  { name: "Min", values: min, pctDiff: [0, 0], defined: [true, true] },
  { name: "Hmean", values: hmean, pctDiff: pct, defined: [true, true], headline: true },
  { name: "Stddev", values: [10, 12], pctDiff: [0, -20], defined: [true, true], spread: true },
  { name: "Max", values: max, pctDiff: [0, 0], defined: [true, true] },
];

const records = (min: (number | undefined)[], max: (number | undefined)[]) =>
  ["mmap", "malloc"].map((arm, i) => ({ arm, min: min[i], max: max[i] }));

export const REPORT = Report.fromJSON({
  runId: "7",
  title: "ebizzy-mmap-vs-malloc",
  arms: ["mmap", "malloc"],
  groups: [
    {
      metric: "records_per_sec",
      unit: "records/s",
      better: "BETTER_HIGHER",
      paramName: "threads",
      paramValue: "2",
      n: [3, 3],
      stats: stats([900, 1800], [1000, 2000], [0, 100], [1100, 2200]),
      records: records([900, 1800], [1100, 2200]),
      boots: [3, 1],
      variance: [
        { boots: 3, iterations: 2, within: 16, between: 48, betweenShare: 0.75, whyUndefined: "" },
        {
          boots: 1,
          iterations: 3,
          within: 100,
          whyUndefined: "one boot: between-boot variance unknown",
        },
      ],
    },
    {
      metric: "records_per_sec",
      unit: "records/s",
      better: "BETTER_HIGHER",
      paramName: "threads",
      paramValue: "10",
      n: [3, 3],
      stats: stats([1900, 1700], [2000, 1900], [0, -5], [2100, 2000]),
      records: records([1900, 1700], [2100, 2000]),
    },
    {
      metric: "records_per_sec",
      unit: "records/s",
      better: "BETTER_HIGHER",
      paramName: "threads",
      paramValue: "1",
      n: [3, 2],
      stats: [
        { name: "Min", values: [400, 0], pctDiff: [0, 0], defined: [true, false] },
        {
          name: "Hmean",
          values: [500, 0],
          pctDiff: [0, 0],
          defined: [true, false],
          headline: true,
        },
        { name: "Max", values: [600, 0], pctDiff: [0, 0], defined: [true, false] },
      ],
      records: records([400, undefined], [600, undefined]),
    },
  ],
});
