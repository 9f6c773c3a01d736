// How long to wait before asking an unreachable API again: 1 s, 2 s, 4 s, ... at most 10 s,
// so a page never makes more than one request per second while it waits.
export function backoffMs(failures: number, baseMs = 1000, maxMs = 10_000): number {
  if (failures <= 0) return 0;
  return Math.min(maxMs, baseMs * 2 ** (failures - 1));
}
