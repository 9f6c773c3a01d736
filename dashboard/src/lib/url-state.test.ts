import { describe, expect, it } from "vitest";
import { RunState } from "../api/gen/tlbfleet/v1/fleet";
import {
  formatCompareRef,
  listRunsRequest,
  loginPath,
  matchRoute,
  nextPage,
  parseCompareRef,
  previousPage,
  queryFromRunsFilter,
  runsFilterFromQuery,
  safeNext,
  withFilter,
} from "./url-state";

describe("routes", () => {
  it("maps paths to pages; anything else is not found", () => {
    expect(matchRoute("/")).toEqual({ page: "fleet" });
    expect(matchRoute("/runs/")).toEqual({ page: "runs" });
    expect(matchRoute("/runs/new")).toEqual({ page: "new" });
    expect(matchRoute("/runs/42")).toEqual({ page: "run", runId: "42" });
    expect(matchRoute("/history/")).toEqual({ page: "history" });
    expect(matchRoute("/runs/4%202")).toEqual({ page: "notfound" });
    expect(matchRoute("/runs/42/extra")).toEqual({ page: "notfound" });
    expect(matchRoute("/nope")).toEqual({ page: "notfound" });
  });

  it("returns to the page after login, never to another site", () => {
    expect(loginPath("/runs/new?benchmark=ebizzy")).toBe(
      "/login?next=%2Fruns%2Fnew%3Fbenchmark%3Debizzy",
    );
    expect(safeNext("/runs/new?benchmark=ebizzy")).toBe("/runs/new?benchmark=ebizzy");
    expect(safeNext("//evil.example/")).toBe("/");
    expect(safeNext("https://evil.example/")).toBe("/");
    expect(safeNext("/login?next=/x")).toBe("/");
    expect(safeNext(null)).toBe("/");
  });
});

describe("runs filter in the URL", () => {
  it("round-trips through the query string", () => {
    const q = new URLSearchParams(
      "benchmark=ebizzy&host=lab1&state=running&state=failed&name=ceil&from=2026-11-01&to=2026-11-30&page=120&trail=,200",
    );
    const f = runsFilterFromQuery(q);
    expect(f).toEqual({
      benchmark: "ebizzy",
      host: "lab1",
      states: ["running", "failed"],
      name: "ceil",
      from: "2026-11-01",
      to: "2026-11-30",
      page: "120",
      trail: ["200"],
    });
    expect(runsFilterFromQuery(queryFromRunsFilter(f))).toEqual(f);
  });

  it("drops unknown states and malformed dates", () => {
    const f = runsFilterFromQuery(
      new URLSearchParams("state=exploded&from=yesterday&to=2026-02-31"),
    );
    expect(f.states).toEqual([]);
    expect(f.from).toBe("");
  });

  it("asks the API for whole UTC days, the end day included", () => {
    const r = listRunsRequest(
      runsFilterFromQuery(new URLSearchParams("from=2026-11-01&to=2026-11-01&state=queued")),
    );
    expect(r.createdAfterUnix).toBe(Date.UTC(2026, 10, 1) / 1000);
    expect(r.createdBeforeUnix).toBe(Date.UTC(2026, 10, 2) / 1000);
    expect(r.states).toEqual([RunState.RUN_STATE_QUEUED]);
    expect(r.limit).toBe(50);
  });

  it("pages forward and back with a trail of tokens; a new filter starts over", () => {
    let f = runsFilterFromQuery(new URLSearchParams("benchmark=pft"));
    f = nextPage(f, "t1");
    f = nextPage(f, "t2");
    expect(f.page).toBe("t2");
    expect(f.trail).toEqual(["", "t1"]);
    f = previousPage(f);
    expect(f.page).toBe("t1");
    f = previousPage(f);
    expect(f.page).toBe("");
    f = nextPage(f, "t1");
    expect(withFilter(f, { name: "x" })).toMatchObject({
      page: "",
      trail: [],
      name: "x",
      benchmark: "pft",
    });
  });
});

describe("compare refs", () => {
  it("parses RUN and RUN:arm", () => {
    expect(parseCompareRef("12")).toEqual({ runId: "12", arm: "" });
    expect(parseCompareRef("12:ceiling-1")).toEqual({ runId: "12", arm: "ceiling-1" });
    expect(parseCompareRef("../x")).toBeUndefined();
    expect(formatCompareRef({ runId: "12", arm: "a" })).toBe("12:a");
  });
});
