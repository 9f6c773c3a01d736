// The state a person would share lives in the URL: routes, filters, the run's baseline and
// metric, the runs compared. These functions map URLs to that state and back.
import { RunState, type ListRunsRequest } from "../api/gen/tlbfleet/v1/fleet";
import { runStateFromName, runStateName } from "./format";

export type Route =
  | { page: "fleet" }
  | { page: "runs" }
  | { page: "new" }
  | { page: "run"; runId: string }
  | { page: "compare" }
  | { page: "history" }
  | { page: "login" }
  | { page: "notfound" };

/** Run ids are what the controller prints: letters, digits, - and _. */
const RUN_ID = /^[A-Za-z0-9_-]{1,64}$/;

export function matchRoute(pathname: string): Route {
  const path = pathname.replace(/\/+$/, "") || "/";
  if (path === "/" || path === "/fleet") return { page: "fleet" };
  if (path === "/runs") return { page: "runs" };
  if (path === "/runs/new") return { page: "new" };
  if (path === "/compare") return { page: "compare" };
  if (path === "/history") return { page: "history" };
  if (path === "/login") return { page: "login" };
  const m = /^\/runs\/([^/]+)$/.exec(path);
  if (m) {
    const id = decodeURIComponent(m[1]!);
    if (RUN_ID.test(id)) return { page: "run", runId: id };
  }
  return { page: "notfound" };
}

export function runPath(runId: string): string {
  return `/runs/${encodeURIComponent(runId)}`;
}

/** A login URL that brings the user back to where they were. */
export function loginPath(returnTo: string): string {
  if (!returnTo || returnTo.startsWith("/login")) return "/login";
  return `/login?next=${encodeURIComponent(returnTo)}`;
}

/** Where to go after login: only a path of this site (no open redirect). */
export function safeNext(next: string | null): string {
  if (!next || !next.startsWith("/") || next.startsWith("//") || next.startsWith("/login")) {
    return "/";
  }
  return next;
}

// --- Runs page -----------------------------------------------------------------------------

export interface RunsFilter {
  benchmark: string;
  host: string;
  states: string[];
  name: string;
  /** YYYY-MM-DD (UTC), inclusive. */
  from: string;
  /** YYYY-MM-DD (UTC), inclusive. */
  to: string;
  /** Keyset token of the page shown; "" = newest. */
  page: string;
  /** Tokens of the pages before this one, oldest first, for "previous". */
  trail: string[];
}

export const PAGE_SIZE = 50;

export function runsFilterFromQuery(q: URLSearchParams): RunsFilter {
  return {
    benchmark: q.get("benchmark") ?? "",
    host: q.get("host") ?? "",
    states: q.getAll("state").filter((s) => runStateFromName(s) !== undefined),
    name: q.get("name") ?? "",
    from: validDate(q.get("from")),
    to: validDate(q.get("to")),
    page: q.get("page") ?? "",
    trail: (q.get("trail") ?? "").split(",").filter((t) => t !== ""),
  };
}

function validDate(d: string | null): string {
  return d && /^\d{4}-\d{2}-\d{2}$/.test(d) && !Number.isNaN(Date.parse(`${d}T00:00:00Z`)) ? d : "";
}

export function queryFromRunsFilter(f: RunsFilter): URLSearchParams {
  const q = new URLSearchParams();
  if (f.benchmark) q.set("benchmark", f.benchmark);
  if (f.host) q.set("host", f.host);
  for (const s of f.states) q.append("state", s);
  if (f.name) q.set("name", f.name);
  if (f.from) q.set("from", f.from);
  if (f.to) q.set("to", f.to);
  if (f.page) q.set("page", f.page);
  if (f.trail.length > 0) q.set("trail", f.trail.join(","));
  return q;
}

/** The API request for a filter. Dates are whole UTC days: `to` includes its day. */
export function listRunsRequest(f: RunsFilter): Partial<ListRunsRequest> {
  const day = (d: string) => Math.floor(Date.parse(`${d}T00:00:00Z`) / 1000);
  return {
    limit: PAGE_SIZE,
    benchmark: f.benchmark,
    host: f.host,
    states: f.states.map((s) => runStateFromName(s)).filter((s): s is RunState => s !== undefined),
    name: f.name,
    createdAfterUnix: f.from ? day(f.from) : 0,
    createdBeforeUnix: f.to ? day(f.to) + 86400 : 0,
    pageToken: f.page,
  };
}

/** A changed filter starts again at the first page. */
export function withFilter(f: RunsFilter, change: Partial<RunsFilter>): RunsFilter {
  return { ...f, ...change, page: "", trail: [] };
}

export function nextPage(f: RunsFilter, token: string): RunsFilter {
  return { ...f, page: token, trail: [...f.trail, f.page] };
}

export function previousPage(f: RunsFilter): RunsFilter {
  const trail = [...f.trail];
  const page = trail.pop() ?? "";
  return { ...f, page, trail };
}

export { runStateName };

// --- Compare page --------------------------------------------------------------------------

/** "RUN" or "RUN:arm": a run, or one arm of it. */
export interface CompareRef {
  runId: string;
  arm: string;
}

export function parseCompareRef(text: string | null): CompareRef | undefined {
  if (!text) return undefined;
  const colon = text.indexOf(":");
  const runId = colon < 0 ? text : text.slice(0, colon);
  const arm = colon < 0 ? "" : text.slice(colon + 1);
  if (!RUN_ID.test(runId)) return undefined;
  return { runId, arm };
}

export function formatCompareRef(ref: CompareRef): string {
  return ref.arm ? `${ref.runId}:${ref.arm}` : ref.runId;
}
