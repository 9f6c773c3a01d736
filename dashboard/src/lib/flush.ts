// The TLB flush profile per arm as the report gives it (Report.flush_profiles: the controller
// sums the flush_profile monitor's samples once, controller/report/flush_profile.cc), laid out
// for the histograms and tables. Nothing is counted here: every number is the message's.
import type { FlushProfile, FlushProfile_Bucket } from "../api/gen/tlbfleet/v1/common";

export function bucketLabel(bucket: string): string {
  return bucket === "-1" ? "full flush" : `${bucket} pages`;
}

/**
 * Where a bucket sits on an axis: by the smallest page count it holds ("-1", a full flush,
 * first; ">512" after "257-512"), which is the order the report lists an arm's buckets in.
 */
function bucketRank(bucket: string): number {
  if (bucket.startsWith(">")) return Number(bucket.slice(1)) + 0.5;
  const n = Number.parseInt(bucket, 10);
  return Number.isFinite(n) ? n : Number.POSITIVE_INFINITY;
}

/** The histograms' shared x axis: every bucket some arm has, smallest first. */
export function sharedBuckets(profiles: readonly FlushProfile[]): string[] {
  const seen = new Set<string>();
  for (const p of profiles) for (const b of p.pages) if (b.events > 0) seen.add(b.bucket);
  return [...seen].sort((a, b) => bucketRank(a) - bucketRank(b));
}

/** An arm's share of its events in each bucket of `axis`, in percent (the report's; 0 if none). */
export function percentsOn(profile: FlushProfile, axis: readonly string[]): number[] {
  const byBucket = new Map(profile.pages.map((b) => [b.bucket, b.percent]));
  return axis.map((b) => byBucket.get(b) ?? 0);
}

export interface ReasonRow {
  code: number;
  name: string;
  /** Events per profile, in the profiles' order. */
  events: number[];
}

/** Events by reason: a row per reason some arm has, by code, named as the report names it. */
export function reasonRows(profiles: readonly FlushProfile[]): ReasonRow[] {
  const names = new Map<number, string>();
  for (const p of profiles)
    for (const r of p.reasons) if (!names.has(r.code)) names.set(r.code, r.name);
  return [...names]
    .sort(([a], [b]) => a - b)
    .map(([code, name]) => ({
      code,
      name,
      events: profiles.map((p) => p.reasons.find((r) => r.code === code)?.events ?? 0),
    }));
}

/**
 * Whether the profiles have the workload's own flushes by size (the 2014 table of local mm
 * shootdowns, with their cost): an older agent's system-wide counts do not.
 */
export function hasWorkloadTable(profiles: readonly FlushProfile[]): boolean {
  return profiles.length > 0 && profiles.every((p) => p.scope === "workload");
}

/** Whether some bucket has a timed cost per call. */
export function hasCost(buckets: readonly FlushProfile_Bucket[]): boolean {
  return buckets.some((b) => b.costMean !== undefined);
}

/** A share, "97.50%"; a count, "1,234" (events are summed counts: whole numbers). */
export function percentText(p: number): string {
  return `${p.toFixed(2)}%`;
}

export function countText(n: number | undefined): string {
  return n === undefined ? "—" : Math.round(n).toLocaleString("en");
}

/** What makes a profile's counts incomplete or its cost missing, as `tlbfleet profile` says. */
export function profileNotes(profiles: readonly FlushProfile[]): string[] {
  const notes: string[] = [];
  for (const p of profiles) {
    if (p.lost > 0) {
      notes.push(
        `${p.arm}: ${countText(p.lost)} events lost in ${p.lossyIterations} of ${p.iterations} iterations (ring buffer full): its counts are incomplete`,
      );
    }
    if (p.invlpgb) {
      notes.push(
        `${p.arm}: ran where the kernel may flush by INVLPGB broadcast, which bypasses tlb:tlb_flush: its counts are incomplete`,
      );
    }
    for (const why of p.costUnavailable) notes.push(`${p.arm}: no cost per flush: ${why}`);
  }
  return notes;
}
