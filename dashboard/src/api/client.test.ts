import { describe, expect, it, vi } from "vitest";
import { ApiClient, compareQuery, listRunsQuery, type FetchLike } from "./client";
import {
  ApiUnavailableError,
  InvalidArgumentError,
  NotFoundError,
  PermissionDeniedError,
  UnauthenticatedError,
  fieldOf,
} from "./errors";
import { Role } from "./gen/tlbfleet/v1/auth";
import { RunState } from "./gen/tlbfleet/v1/fleet";
import { RegressionStatus } from "./gen/tlbfleet/v1/nightly";

interface Call {
  url: string;
  init: RequestInit | undefined;
}

function fakeFetch(responses: (Response | Error)[]): { fetch: FetchLike; calls: Call[] } {
  const calls: Call[] = [];
  const fetch: FetchLike = async (url, init) => {
    calls.push({ url, init });
    const next = responses.shift();
    if (!next) throw new Error("no more responses");
    if (next instanceof Error) throw next;
    return next;
  };
  return { fetch, calls };
}

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });

describe("ApiClient", () => {
  it("decodes a run from protobuf's JSON mapping (enum names, int64 as strings)", async () => {
    const { fetch, calls } = fakeFetch([
      json(200, {
        id: "12",
        state: "RUN_STATE_RUNNING",
        createdUnix: "1764400000",
        spec: { name: "x", arms: [{ name: "a" }] },
      }),
    ]);
    const run = await new ApiClient({ fetch }).getRun("12");
    expect(calls[0]!.url).toBe("/api/v1/runs/12");
    expect(run.state).toBe(RunState.RUN_STATE_RUNNING);
    expect(run.createdUnix).toBe(1764400000);
    expect(run.spec?.arms[0]?.name).toBe("a");
  });

  it("turns an error body into a typed error with the field it names", async () => {
    const { fetch } = fakeFetch([
      json(400, {
        code: "INVALID_ARGUMENT",
        message: 'arms[0].params.threads: must be an integer in [1, 4096], got "0"',
        field: "arms[0].params.threads",
      }),
    ]);
    const error = await new ApiClient({ fetch }).submitYaml("name: x").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    const e = error as InvalidArgumentError;
    expect(e.code).toBe("INVALID_ARGUMENT");
    expect(fieldOf(e)).toBe("arms[0].params.threads");
  });

  it("finds the field in the message when the body has none", async () => {
    const { fetch } = fakeFetch([
      json(400, {
        code: "INVALID_ARGUMENT",
        message: 'sweep.threads[1]: must be an integer, got "x"',
      }),
    ]);
    const e = (await new ApiClient({ fetch })
      .submitYaml("")
      .catch((x: unknown) => x)) as InvalidArgumentError;
    expect(fieldOf(e)).toBe("sweep.threads[1]");
  });

  it("maps 403 and 404 to their own types", async () => {
    const { fetch } = fakeFetch([
      json(403, { code: "PERMISSION_DENIED", message: "viewer may not submit" }),
      json(404, { code: "NOT_FOUND", message: "no run 99" }),
    ]);
    const client = new ApiClient({ fetch });
    await expect(client.submitYaml("")).rejects.toBeInstanceOf(PermissionDeniedError);
    await expect(client.getRun("99")).rejects.toBeInstanceOf(NotFoundError);
  });

  it("tells the app when the session is gone (401), except for whoami and login", async () => {
    const { fetch } = fakeFetch([
      json(401, { code: "UNAUTHENTICATED", message: "session expired" }),
      json(401, { code: "UNAUTHENTICATED", message: "no session" }),
    ]);
    const client = new ApiClient({ fetch });
    const listener = vi.fn();
    client.onUnauthenticated(listener);
    await expect(client.hosts()).rejects.toBeInstanceOf(UnauthenticatedError);
    expect(listener).toHaveBeenCalledTimes(1);
    await expect(client.whoami()).rejects.toBeInstanceOf(UnauthenticatedError);
    expect(listener).toHaveBeenCalledTimes(1);
  });

  it("reports the API down on a network error or a proxy's 502, and up again on success", async () => {
    const { fetch } = fakeFetch([
      new TypeError("Failed to fetch"),
      new Response("<html>Bad Gateway</html>", { status: 502 }),
      json(200, { hosts: [] }),
    ]);
    const client = new ApiClient({ fetch });
    const seen: boolean[] = [];
    client.onAvailability((up) => seen.push(up));
    await expect(client.hosts()).rejects.toBeInstanceOf(ApiUnavailableError);
    expect(client.isAvailable).toBe(false);
    await expect(client.hosts()).rejects.toBeInstanceOf(ApiUnavailableError);
    await client.hosts();
    expect(client.isAvailable).toBe(true);
    expect(seen).toEqual([false, true]);
  });

  it("sends the CSRF token from login on state-changing requests only", async () => {
    const { fetch, calls } = fakeFetch([
      json(200, { csrfToken: "tok-123", principal: { name: "ops", role: "ROLE_OPERATOR" } }),
      json(200, { runs: [] }),
      json(200, { runId: "7", jobs: 4 }),
    ]);
    const client = new ApiClient({ fetch });
    const login = await client.login("secret");
    expect(login.principal?.role).toBe(Role.ROLE_OPERATOR);
    expect(JSON.parse(String(calls[0]!.init?.body))).toEqual({ token: "secret" });
    await client.listRuns({});
    expect((calls[1]!.init?.headers as Record<string, string>)["X-CSRF-Token"]).toBeUndefined();
    const submitted = await client.submitYaml("name: x\n");
    expect(submitted.runId).toBe("7");
    const headers = calls[2]!.init?.headers as Record<string, string>;
    expect(headers["X-CSRF-Token"]).toBe("tok-123");
    expect(headers["Content-Type"]).toBe("application/yaml");
    expect(calls[2]!.init?.body).toBe("name: x\n");
  });

  it("asks for series with points and regressions by status; updates one with CSRF", async () => {
    const { fetch, calls } = fakeFetch([
      json(200, { csrfToken: "tok-9", principal: { name: "ops", role: "ROLE_OPERATOR" } }),
      json(200, {
        series: [{ id: "5", key: { benchmark: "pipetest" }, points: [{ runId: "r1" }] }],
      }),
      json(200, { regressions: [{ id: "g", status: "REGRESSION_OPEN", index: 3 }] }),
      json(200, { id: "g", status: "REGRESSION_ACKNOWLEDGED" }),
    ]);
    const client = new ApiClient({ fetch });
    await client.login("secret");
    const list = await client.listSeries({ benchmark: "pipetest", withPoints: true });
    expect(calls[1]!.url).toBe("/api/v1/series?benchmark=pipetest&with_points=true");
    expect(list.series[0]?.points[0]?.runId).toBe("r1");
    const regs = await client.listRegressions([RegressionStatus.REGRESSION_OPEN]);
    expect(calls[2]!.url).toBe("/api/v1/regressions?statuses=REGRESSION_OPEN");
    expect(regs.regressions[0]?.index).toBe(3);
    const updated = await client.updateRegression("g", RegressionStatus.REGRESSION_ACKNOWLEDGED);
    expect(calls[3]!.url).toBe("/api/v1/regressions/g");
    expect(calls[3]!.init?.method).toBe("POST");
    expect(JSON.parse(String(calls[3]!.init?.body))).toEqual({
      status: "REGRESSION_ACKNOWLEDGED",
    });
    expect((calls[3]!.init?.headers as Record<string, string>)["X-CSRF-Token"]).toBe("tok-9");
    expect(updated.status).toBe(RegressionStatus.REGRESSION_ACKNOWLEDGED);
  });

  it("downloads the samples CSV the controller wrote (results.csv), bytes as sent", async () => {
    const csv = 'run_id,job_id,arm\n7,31,"a,b"\n7,32,é\n';
    const { fetch, calls } = fakeFetch([
      new Response(csv, { status: 200, headers: { "Content-Type": "text/csv; charset=utf-8" } }),
      json(404, { code: "NOT_FOUND", message: "run 99: not found" }),
    ]);
    const client = new ApiClient({ fetch });
    const blob = await client.resultsCsv("7");
    expect(calls[0]!.url).toBe("/api/v1/runs/7/results.csv");
    expect((calls[0]!.init?.headers as Record<string, string>).Accept).toBe("text/csv");
    expect(new Uint8Array(await blob.arrayBuffer())).toEqual(new TextEncoder().encode(csv));
    // An error is the API's JSON error, typed like any other.
    await expect(client.resultsCsv("99")).rejects.toBeInstanceOf(NotFoundError);
    expect(client.isAvailable).toBe(true);
  });

  it("asks for the run's report, or one across runs, with CompareRequest's fields", async () => {
    const report = { report: { runId: "7", arms: ["7:a", "8:b"], scope: "across runs" } };
    const { fetch, calls } = fakeFetch([json(200, report), json(200, report), json(200, report)]);
    const client = new ApiClient({ fetch });
    await client.compare("7");
    expect(calls[0]!.url).toBe("/api/v1/runs/7/compare");
    await client.compare("7", { baseline: "b", flushParam: "2" });
    expect(calls[1]!.url).toBe("/api/v1/runs/7/compare?baseline=b&flushParam=2");
    const r = await client.compare("7", { withRunId: "8", arm: "a", withArm: "b" });
    expect(calls[2]!.url).toBe("/api/v1/runs/7/compare?withRunId=8&arm=a&withArm=b");
    expect(r.report?.scope).toBe("across runs");
    expect(compareQuery({ baseline: "", arm: "", withRunId: "" }).toString()).toBe("");
  });

  it("reads a build's whole log by its task id (GET /builds/{id}/log)", async () => {
    const { fetch, calls } = fakeFetch([
      json(200, {
        build: { taskId: "12", arm: "fix", state: "failed", logLines: "3" },
        lines: ["  CC a.o", "  CC b.o", "make: *** [vmlinux] Error 2"],
      }),
      json(404, { code: "NOT_FOUND", message: "build 99 not found" }),
    ]);
    const client = new ApiClient({ fetch });
    const log = await client.buildLog(12);
    expect(calls[0]!.url).toBe("/api/v1/builds/12/log");
    expect(calls[0]!.init?.method).toBe("GET");
    expect(log.build).toMatchObject({ taskId: 12, arm: "fix", state: "failed", logLines: 3 });
    expect(log.lines).toEqual(["  CC a.o", "  CC b.o", "make: *** [vmlinux] Error 2"]);
    await expect(client.buildLog(99)).rejects.toBeInstanceOf(NotFoundError);
  });

  it("a caller's abort is not an outage", async () => {
    const abort = new AbortController();
    const fetch: FetchLike = (_url, init) =>
      new Promise((_resolve, reject) =>
        init?.signal?.addEventListener("abort", () =>
          reject(new DOMException("aborted", "AbortError")),
        ),
      );
    const client = new ApiClient({ fetch });
    const p = client.hosts(abort.signal);
    abort.abort();
    await expect(p).rejects.toThrow();
    expect(client.isAvailable).toBe(true);
  });

  it("gives up on a request that does not answer in time, as an outage", async () => {
    const fetch: FetchLike = (_url, init) =>
      new Promise((_resolve, reject) =>
        init?.signal?.addEventListener("abort", () =>
          reject(new DOMException("timeout", "AbortError")),
        ),
      );
    const client = new ApiClient({ fetch, timeoutMs: 5 });
    await expect(client.hosts()).rejects.toBeInstanceOf(ApiUnavailableError);
    expect(client.isAvailable).toBe(false);
  });
});

describe("listRunsQuery", () => {
  it("writes filters in the JSON mapping's names, states repeated, defaults left out", () => {
    const q = listRunsQuery({
      limit: 50,
      benchmark: "ebizzy",
      states: [RunState.RUN_STATE_RUNNING, RunState.RUN_STATE_FAILED],
      createdAfterUnix: 1700000000,
      pageToken: "",
    });
    expect(q.toString()).toBe(
      "limit=50&benchmark=ebizzy&states=RUN_STATE_RUNNING&states=RUN_STATE_FAILED&createdAfterUnix=1700000000",
    );
  });
});
