// The TLB flush profile per arm, from the samples the agent's flush_profile monitor sends
// (metric tlb_flush_events, series "pages=<bucket>", "reason=<code>", "total"; metric
// tlb_flush_lost). The same sums as controller/report/flush_profile.cc (BuildFlushProfiles),
// shaped for a histogram: this is counting, not statistics.
import type { Sample } from "../api/gen/tlbfleet/v1/common";

export const FLUSH_EVENTS = "tlb_flush_events";
export const FLUSH_LOST = "tlb_flush_lost";

/** Table order: GLOBAL (-1) first, then 0, 1..64, 65-128, 129-256, 257-512, >512. */
export const PAGE_BUCKETS: readonly string[] = [
  "-1",
  "0",
  ...Array.from({ length: 64 }, (_, i) => String(i + 1)),
  "65-128",
  "129-256",
  "257-512",
  ">512",
];

const REASONS: Record<number, string> = {
  0: "task switch",
  1: "remote shootdown",
  2: "local shootdown",
  3: "local mm shootdown",
  4: "remote IPI send",
  5: "remote wrong CPU",
};

export function flushReasonName(code: number): string {
  return REASONS[code] ?? `reason ${code}`;
}

export function bucketLabel(bucket: string): string {
  return bucket === "-1" ? "full flush" : `${bucket} pages`;
}

export interface ArmFlushProfile {
  arm: string;
  pages: Map<string, number>;
  reasons: Map<number, number>;
  lost: number;
  /** Iterations that reported a profile ((boot, sweep value, iteration) triples). */
  iterations: number;
  total: number;
}

/** One profile per arm that has one, in `armOrder` (others follow as they first appear). */
export function buildFlushProfiles(
  samples: readonly Sample[],
  armOrder: readonly string[],
  paramValue?: string,
): ArmFlushProfile[] {
  const order = [...armOrder];
  const byArm = new Map<string, ArmFlushProfile>();
  const iterations = new Map<string, Set<string>>();
  for (const s of samples) {
    if (s.metric !== FLUSH_EVENTS && s.metric !== FLUSH_LOST) continue;
    if (paramValue !== undefined && s.paramValue !== paramValue) continue;
    if (!order.includes(s.arm)) order.push(s.arm);
    let p = byArm.get(s.arm);
    if (!p) {
      p = { arm: s.arm, pages: new Map(), reasons: new Map(), lost: 0, iterations: 0, total: 0 };
      byArm.set(s.arm, p);
      iterations.set(s.arm, new Set());
    }
    iterations.get(s.arm)!.add(`${s.bootId}/${s.paramValue}/${s.iteration}`);
    if (s.metric === FLUSH_LOST) {
      p.lost += s.value;
      continue;
    }
    if (s.series.startsWith("pages=")) {
      const bucket = s.series.slice(6);
      p.pages.set(bucket, (p.pages.get(bucket) ?? 0) + s.value);
      p.total += s.value;
    } else if (/^reason=-?\d+$/.test(s.series)) {
      const code = Number(s.series.slice(7));
      p.reasons.set(code, (p.reasons.get(code) ?? 0) + s.value);
    }
  }
  const out: ArmFlushProfile[] = [];
  for (const arm of order) {
    const p = byArm.get(arm);
    if (!p) continue;
    p.iterations = iterations.get(arm)!.size;
    out.push(p);
  }
  return out;
}

/** The histogram's x axis: the buckets some arm saw, in table order. */
export function seenBuckets(profiles: readonly ArmFlushProfile[]): string[] {
  return PAGE_BUCKETS.filter((b) => profiles.some((p) => (p.pages.get(b) ?? 0) > 0));
}

export function seenReasons(profiles: readonly ArmFlushProfile[]): number[] {
  const codes = new Set<number>();
  for (const p of profiles) for (const [code, n] of p.reasons) if (n > 0) codes.add(code);
  return [...codes].sort((a, b) => a - b);
}

/** Share of an arm's events in each bucket, in percent (0 when the arm saw none). */
export function bucketPercents(profile: ArmFlushProfile, buckets: readonly string[]): number[] {
  return buckets.map((b) =>
    profile.total > 0 ? (100 * (profile.pages.get(b) ?? 0)) / profile.total : 0,
  );
}
