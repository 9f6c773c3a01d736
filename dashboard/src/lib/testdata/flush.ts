// Report.flush_profiles as GET /api/v1/runs/{id}/compare sends them: buckets in table order,
// each with its share of the arm's events; one arm with timed local mm shootdowns and lost
// events, one without cost and with INVLPGB.
import { FlushProfile } from "../../api/gen/tlbfleet/v1/common";

export const PROFILES = [
  FlushProfile.fromJSON({
    arm: "ceiling-512",
    iterations: 6,
    lossyIterations: 1,
    total: 400,
    lost: 3,
    scope: "workload",
    pages: [
      { bucket: "-1", events: 20, percent: 5, cumulativePercent: 5 },
      { bucket: "65-128", events: 380, percent: 95, cumulativePercent: 100 },
    ],
    localMmShootdowns: [
      {
        bucket: "65-128",
        events: 380,
        percent: 100,
        cumulativePercent: 100,
        calls: 380,
        costMean: 5123.4,
        costP50: 5000,
        costP90: 6100,
        costP99: 7300,
      },
    ],
    reasons: [{ code: 3, name: "local mm shootdown", events: 400 }],
    costUnit: "cycles",
  }),
  FlushProfile.fromJSON({
    arm: "ceiling-1",
    iterations: 6,
    total: 400,
    scope: "workload",
    pages: [
      { bucket: "-1", events: 100, percent: 25, cumulativePercent: 25 },
      { bucket: "2", events: 300, percent: 75, cumulativePercent: 100 },
      { bucket: ">512", events: 0, percent: 0, cumulativePercent: 100 },
    ],
    reasons: [
      { code: 3, name: "local mm shootdown", events: 390 },
      { code: 0, name: "task switch", events: 10 },
    ],
    costUnavailable: ["kprobes are not available in this kernel"],
    invlpgb: true,
  }),
];
