// The flush profiles as the report gives them (Report.flush_profiles), laid out for the page:
// nothing is summed in the browser, every count and share is the message's.
import { describe, expect, it } from "vitest";
import { FlushProfile } from "../api/gen/tlbfleet/v1/common";
import {
  bucketLabel,
  hasCost,
  hasWorkloadTable,
  percentsOn,
  profileNotes,
  reasonRows,
  sharedBuckets,
} from "./flush";
import { PROFILES } from "./testdata/flush";

describe("flush profiles from the report", () => {
  it("puts every arm on one axis of the buckets some arm saw, full flushes first", () => {
    expect(sharedBuckets(PROFILES)).toEqual(["-1", "2", "65-128"]);
    expect(sharedBuckets([])).toEqual([]);
    // ">512" sorts after "257-512", ranges by their first page count.
    const p = FlushProfile.fromJSON({
      pages: [">512", "257-512", "0", "64", "65-128"].map((bucket) => ({ bucket, events: 1 })),
    });
    expect(sharedBuckets([p])).toEqual(["0", "64", "65-128", "257-512", ">512"]);
    expect(bucketLabel("-1")).toBe("full flush");
    expect(bucketLabel("65-128")).toBe("65-128 pages");
  });

  it("takes each arm's share per bucket from the message, 0 where it has none", () => {
    const axis = sharedBuckets(PROFILES);
    expect(percentsOn(PROFILES[0]!, axis)).toEqual([5, 0, 95]);
    expect(percentsOn(PROFILES[1]!, axis)).toEqual([25, 75, 0]);
  });

  it("has a row per reason, by code, with the report's names and each arm's events", () => {
    expect(reasonRows(PROFILES)).toEqual([
      { code: 0, name: "task switch", events: [0, 10] },
      { code: 3, name: "local mm shootdown", events: [400, 390] },
    ]);
  });

  it("knows the workload's table and its cost, and says what makes the counts incomplete", () => {
    expect(hasWorkloadTable(PROFILES)).toBe(true);
    expect(hasWorkloadTable([FlushProfile.fromJSON({ arm: "a", scope: "system" })])).toBe(false);
    expect(hasCost(PROFILES[0]!.localMmShootdowns)).toBe(true);
    expect(hasCost(PROFILES[1]!.localMmShootdowns)).toBe(false);
    expect(profileNotes(PROFILES)).toEqual([
      "ceiling-512: 3 events lost in 1 of 6 iterations (ring buffer full): its counts are incomplete",
      "ceiling-1: ran where the kernel may flush by INVLPGB broadcast, which bypasses tlb:tlb_flush: its counts are incomplete",
      "ceiling-1: no cost per flush: kprobes are not available in this kernel",
    ]);
  });
});
