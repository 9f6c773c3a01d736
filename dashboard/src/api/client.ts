// The one module that talks to the controller's HTTP/JSON API (docs/api.md). Pages call
// these methods and never fetch() themselves. Bodies are protobuf's canonical JSON mapping
// of the messages in proto/tlbfleet/v1, decoded by the generated fromJSON functions.
//
// Failures are typed (errors.ts). The client also tells the app two things it must react
// to wherever they happen: the session is gone (401: go to login, keep what the user typed)
// and whether the API answers at all (the banner, and retries until it is back).
import {
  ApiUnavailableError,
  UnauthenticatedError,
  errorFromResponse,
  type ApiError,
} from "./errors";
import { LoginResponse, Principal, Role, WhoAmIResponse } from "./gen/tlbfleet/v1/auth";
import {
  CompareRequest,
  CompareResponse,
  GetBuildLogResponse,
  ListHostsResponse,
  ListRunsRequest,
  ListRunsResponse,
  ListWorkloadsResponse,
  Run,
  SubmitRunResponse,
} from "./gen/tlbfleet/v1/fleet";
import {
  GetBisectResponse,
  ListBisectsResponse,
  ListRegressionsResponse,
  ListSchedulesResponse,
  ListSeriesResponse,
  Regression,
  RegressionStatus,
  regressionStatusToJSON,
} from "./gen/tlbfleet/v1/nightly";

export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

export interface ClientOptions {
  /** Prefix of every path; "" when the dashboard is served by the controller itself. */
  baseUrl?: string;
  fetch?: FetchLike;
  /** Abort a request that has not answered after this long (not the event stream). */
  timeoutMs?: number;
}

export interface Decoder<T> {
  fromJSON(object: unknown): T;
}

type Listener<T> = (value: T) => void;

export const API_PREFIX = "/api/v1";

export class ApiClient {
  private readonly baseUrl: string;
  private readonly fetchImpl: FetchLike;
  private readonly timeoutMs: number;
  /** From login or whoami; sent as X-CSRF-Token on every state-changing request. */
  private csrfToken = "";
  private available = true;
  private readonly availabilityListeners = new Set<Listener<boolean>>();
  private readonly unauthenticatedListeners = new Set<Listener<UnauthenticatedError>>();

  constructor(options: ClientOptions = {}) {
    this.baseUrl = options.baseUrl ?? "";
    this.fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.timeoutMs = options.timeoutMs ?? 20_000;
  }

  // --- what the app listens to ---------------------------------------------------------

  /** Called with false when a request finds the API unreachable, true when one succeeds again. */
  onAvailability(listener: Listener<boolean>): () => void {
    this.availabilityListeners.add(listener);
    return () => this.availabilityListeners.delete(listener);
  }

  /** Called when the server says the session is missing or expired (401). */
  onUnauthenticated(listener: Listener<UnauthenticatedError>): () => void {
    this.unauthenticatedListeners.add(listener);
    return () => this.unauthenticatedListeners.delete(listener);
  }

  get isAvailable(): boolean {
    return this.available;
  }

  setCsrfToken(token: string): void {
    this.csrfToken = token;
  }

  // --- the API ------------------------------------------------------------------------

  whoami(): Promise<WhoAmIResponse> {
    return this.call("GET", "/whoami", WhoAmIResponse, { quietUnauthenticated: true }).then((r) => {
      this.csrfToken = r.csrfToken;
      return r;
    });
  }

  async login(token: string): Promise<LoginResponse> {
    const response = await this.call("POST", "/login", LoginResponse, {
      json: { token },
      quietUnauthenticated: true,
    });
    this.csrfToken = response.csrfToken;
    return response;
  }

  async logout(): Promise<void> {
    try {
      await this.call("POST", "/logout", { fromJSON: () => undefined }, { json: {} });
    } finally {
      this.csrfToken = "";
    }
  }

  hosts(signal?: AbortSignal): Promise<ListHostsResponse> {
    return this.call("GET", "/hosts", ListHostsResponse, { signal });
  }

  listRuns(request: Partial<ListRunsRequest>, signal?: AbortSignal): Promise<ListRunsResponse> {
    return this.call("GET", "/runs", ListRunsResponse, {
      query: listRunsQuery(request),
      signal,
    });
  }

  getRun(runId: string, signal?: AbortSignal): Promise<Run> {
    return this.call("GET", `/runs/${encodeURIComponent(runId)}`, Run, { signal });
  }

  cancelRun(runId: string): Promise<Run> {
    return this.call("POST", `/runs/${encodeURIComponent(runId)}/cancel`, Run, { json: {} });
  }

  /**
   * The samples as CSV, the bytes `tlbfleet results RUN --format csv` prints (the controller's
   * one writer): what the Run page downloads.
   */
  resultsCsv(runId: string, signal?: AbortSignal): Promise<Blob> {
    // The bytes as sent, read whole: a body read as a blob is passed to the page with no copy
    // in Chromium's network log, and the browser test compares the download with that answer.
    const read = async (r: Response) =>
      new Blob([await r.arrayBuffer()], { type: r.headers.get("Content-Type") ?? "text/csv" });
    return this.request("GET", `/runs/${encodeURIComponent(runId)}/results.csv`, read, {
      accept: "text/csv",
      signal,
    });
  }

  /**
   * The run's one report (CompareRequest: baseline, verdict options, `withRunId` with `arm` and
   * `withArm` across runs, `flushParam`); unset fields are the server's defaults.
   */
  compare(
    runId: string,
    request: CompareQuery = {},
    signal?: AbortSignal,
  ): Promise<CompareResponse> {
    return this.call("GET", `/runs/${encodeURIComponent(runId)}/compare`, CompareResponse, {
      query: compareQuery(request),
      signal,
    });
  }

  /**
   * The whole log of a kernel build of a run (Run.builds[].taskId; up to 200,000 lines): read
   * only when the user asks for it; the run itself gives the last lines.
   */
  buildLog(taskId: number, signal?: AbortSignal): Promise<GetBuildLogResponse> {
    return this.call(
      "GET",
      `/builds/${encodeURIComponent(String(taskId))}/log`,
      GetBuildLogResponse,
      {
        signal,
      },
    );
  }

  workloads(signal?: AbortSignal): Promise<ListWorkloadsResponse> {
    return this.call("GET", "/workloads", ListWorkloadsResponse, { signal });
  }

  /** Series of estimates (one point per finished run), optionally filtered exactly. */
  listSeries(
    request: { benchmark?: string; metric?: string; withPoints?: boolean },
    signal?: AbortSignal,
  ): Promise<ListSeriesResponse> {
    const query = new URLSearchParams();
    if (request.benchmark) query.set("benchmark", request.benchmark);
    if (request.metric) query.set("metric", request.metric);
    if (request.withPoints) query.set("with_points", "true");
    return this.call("GET", "/series", ListSeriesResponse, { query, signal });
  }

  /** Regressions found in the series; `statuses` empty = any. */
  listRegressions(
    statuses: RegressionStatus[] = [],
    signal?: AbortSignal,
  ): Promise<ListRegressionsResponse> {
    const query = new URLSearchParams();
    if (statuses.length > 0) query.set("statuses", statuses.map(regressionStatusToJSON).join(","));
    return this.call("GET", "/regressions", ListRegressionsResponse, { query, signal });
  }

  /** Acknowledge, mark fixed or reopen a regression (operator). */
  updateRegression(id: string, status: RegressionStatus): Promise<Regression> {
    return this.call("POST", `/regressions/${encodeURIComponent(id)}`, Regression, {
      json: { status: regressionStatusToJSON(status) },
    });
  }

  listSchedules(signal?: AbortSignal): Promise<ListSchedulesResponse> {
    return this.call("GET", "/schedules", ListSchedulesResponse, { signal });
  }

  listBisects(signal?: AbortSignal): Promise<ListBisectsResponse> {
    return this.call("GET", "/bisects", ListBisectsResponse, { signal });
  }

  getBisect(id: string, signal?: AbortSignal): Promise<GetBisectResponse> {
    return this.call("GET", `/bisects/${encodeURIComponent(id)}`, GetBisectResponse, { signal });
  }

  /** Submits a run spec as the CLI does: YAML, validated by the server like a file. */
  submitYaml(specYaml: string): Promise<SubmitRunResponse> {
    return this.call("POST", "/runs", SubmitRunResponse, {
      body: specYaml,
      contentType: "application/yaml",
    });
  }

  /** The URL of a run's event stream (Server-Sent Events); see sse.ts. */
  eventsUrl(runId: string): string {
    return `${this.baseUrl}${API_PREFIX}/runs/${encodeURIComponent(runId)}/events`;
  }

  /**
   * The URL of a finished run's export as one download (GET /runs/{id}/export/{format},
   * docs/formats.md): a link, so the browser saves it with the session's cookie.
   */
  exportUrl(runId: string, format: string): string {
    return `${this.baseUrl}${API_PREFIX}/runs/${encodeURIComponent(runId)}/export/${encodeURIComponent(format)}`;
  }

  /** fetch() for the event stream: same credentials, no timeout, errors typed. */
  async openStream(url: string, headers: Record<string, string>, signal: AbortSignal) {
    let response: Response;
    try {
      response = await this.fetchImpl(url, {
        method: "GET",
        headers: { Accept: "text/event-stream", ...headers },
        credentials: "same-origin",
        cache: "no-store",
        signal,
      });
    } catch (e) {
      if (signal.aborted) throw e;
      throw this.unavailable(e);
    }
    if (!response.ok) throw this.failed(response.status, await response.text(), false);
    this.setAvailable(true);
    return response;
  }

  // --- one request ----------------------------------------------------------------------

  async call<T>(
    method: "GET" | "POST",
    path: string,
    decoder: Decoder<T>,
    options: RequestOptions = {},
  ): Promise<T> {
    const parsed = await this.request(
      method,
      path,
      async (r) => {
        const text = await r.text();
        try {
          return text === "" ? {} : (JSON.parse(text) as unknown);
        } catch {
          throw new Error(`${method} ${path}: the answer is not JSON`);
        }
      },
      options,
    );
    return decoder.fromJSON(parsed);
  }

  /**
   * One request. `read` takes the body of a successful answer (an error's is decoded); a body
   * that cannot be read means the API is not answering properly.
   */
  private async request<T>(
    method: "GET" | "POST",
    path: string,
    read: (response: Response) => Promise<T>,
    options: RequestOptions = {},
  ): Promise<T> {
    const headers: Record<string, string> = { Accept: options.accept ?? "application/json" };
    let body: string | undefined;
    if (options.json !== undefined) {
      body = JSON.stringify(options.json);
      headers["Content-Type"] = "application/json";
    } else if (options.body !== undefined) {
      body = options.body;
      headers["Content-Type"] = options.contentType ?? "text/plain";
    }
    if (method !== "GET" && this.csrfToken) headers["X-CSRF-Token"] = this.csrfToken;
    const query = options.query?.toString();
    const url = `${this.baseUrl}${API_PREFIX}${path}${query ? `?${query}` : ""}`;

    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), this.timeoutMs);
    const signal = options.signal ? anySignal([options.signal, timeout.signal]) : timeout.signal;
    let response: Response;
    let result: T | undefined;
    let errorText = "";
    try {
      response = await this.fetchImpl(url, {
        method,
        headers,
        body,
        credentials: "same-origin",
        cache: "no-store",
        signal,
      });
      if (response.ok) result = await read(response);
      else errorText = await response.text();
    } catch (e) {
      if (options.signal?.aborted) throw e; // the caller gave up: not an outage
      throw this.unavailable(e);
    } finally {
      clearTimeout(timer);
    }
    if (!response.ok) {
      throw this.failed(response.status, errorText, options.quietUnauthenticated ?? false);
    }
    this.setAvailable(true);
    return result as T;
  }

  private unavailable(cause: unknown): ApiUnavailableError {
    const error = new ApiUnavailableError(
      `the controller is not answering (${cause instanceof Error ? cause.message : String(cause)})`,
    );
    this.setAvailable(false);
    return error;
  }

  private failed(status: number, text: string, quiet: boolean): ApiError | ApiUnavailableError {
    const error = errorFromResponse(status, text);
    if (error instanceof ApiUnavailableError) {
      this.setAvailable(false);
      return error;
    }
    // An error body from the API itself: it is up.
    this.setAvailable(true);
    if (error instanceof UnauthenticatedError && !quiet) {
      for (const listener of this.unauthenticatedListeners) listener(error);
    }
    return error;
  }

  private setAvailable(available: boolean): void {
    if (available === this.available) return;
    this.available = available;
    for (const listener of this.availabilityListeners) listener(available);
  }
}

interface RequestOptions {
  query?: URLSearchParams;
  json?: unknown;
  body?: string;
  contentType?: string;
  /** The Accept header; JSON unless said. */
  accept?: string;
  signal?: AbortSignal;
  quietUnauthenticated?: boolean;
}

/** What a page may ask of a comparison: CompareRequest but the run, which is in the path. */
export type CompareQuery = Partial<Omit<CompareRequest, "runId">>;

/** CompareRequest as query parameters: its JSON mapping, defaults left out. */
export function compareQuery(request: CompareQuery): URLSearchParams {
  return queryOf(CompareRequest.toJSON(CompareRequest.fromJSON(request)));
}

/** ListRunsRequest as query parameters: its JSON mapping, repeated fields repeated. */
export function listRunsQuery(request: Partial<ListRunsRequest>): URLSearchParams {
  return queryOf(ListRunsRequest.toJSON(ListRunsRequest.fromJSON(request)));
}

function queryOf(message: unknown): URLSearchParams {
  const json = message as Record<string, unknown>;
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(json)) {
    if (Array.isArray(value)) for (const v of value) query.append(key, String(v));
    else if (value !== undefined && value !== null) query.set(key, String(value));
  }
  return query;
}

function anySignal(signals: AbortSignal[]): AbortSignal {
  const controller = new AbortController();
  for (const s of signals) {
    if (s.aborted) {
      controller.abort(s.reason);
      break;
    }
    s.addEventListener("abort", () => controller.abort(s.reason), { once: true });
  }
  return controller.signal;
}

/** What a principal may do in the UI; the server checks again on every request. */
export function canOperate(principal: Principal | undefined, developmentMode: boolean): boolean {
  if (developmentMode) return true;
  const role = principal?.role ?? Role.ROLE_UNSPECIFIED;
  return role === Role.ROLE_OPERATOR || role === Role.ROLE_ADMIN;
}
