// Live run progress: the Server-Sent Events of GET /api/v1/runs/{id}/events, each a JSON
// tlbfleet.v1.RunEvent whose SSE id is RunEvent.id (increasing across the controller).
//
// We read the stream with fetch() instead of EventSource so that we decide how to resume:
// every reconnect sends Last-Event-ID with the last id we *handled*, events at or below it
// are dropped (a replay can overlap what we saw live), a 401 goes to login instead of
// retrying forever, and the stream stops for good once the run has ended.
import type { ApiClient } from "./client";
import { ApiError, ApiUnavailableError, NotFoundError, UnauthenticatedError } from "./errors";
import { RunEvent, RunState } from "./gen/tlbfleet/v1/fleet";

export interface SseMessage {
  /** The last `id:` seen so far in the stream (SSE's "last event ID buffer"), or "". */
  id: string;
  event: string;
  data: string;
}

/**
 * An incremental parser of text/event-stream (the HTML Living Standard's rules): lines end
 * in CRLF, LF or CR; ":" starts a comment; a blank line dispatches the message; `data`
 * lines are joined with "\n"; an `id` containing NUL is ignored.
 */
export class SseParser {
  private buffer = "";
  private lastId = "";
  private data: string[] = [];
  private event = "";
  /** The stream's reconnection time from its last `retry:` line, in milliseconds. */
  retryMs: number | undefined;
  private sawBom = false;
  private pendingCr = false;

  push(chunk: string): SseMessage[] {
    if (!this.sawBom) {
      if (chunk.length === 0) return [];
      if (chunk.charCodeAt(0) === 0xfeff) chunk = chunk.slice(1);
      this.sawBom = true;
    }
    // A CR at the end of the previous chunk may be the first half of CRLF.
    if (this.pendingCr && chunk.startsWith("\n")) chunk = chunk.slice(1);
    this.pendingCr = false;
    this.buffer += chunk;
    const out: SseMessage[] = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      if (!match) break;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      if (match[0] === "\r" && this.buffer.length === 0) this.pendingCr = true;
      const message = this.line(line);
      if (message) out.push(message);
    }
    return out;
  }

  private line(line: string): SseMessage | undefined {
    if (line === "") {
      const hadData = this.data.length > 0;
      const message: SseMessage = {
        id: this.lastId,
        event: this.event || "message",
        data: this.data.join("\n"),
      };
      this.data = [];
      this.event = "";
      return hadData ? message : undefined;
    }
    if (line.startsWith(":")) return undefined;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "data":
        this.data.push(value);
        break;
      case "event":
        this.event = value;
        break;
      case "id":
        if (!value.includes("\0")) this.lastId = value;
        break;
      case "retry":
        if (/^\d+$/.test(value)) this.retryMs = Number(value);
        break;
    }
    return undefined;
  }
}

/**
 * Which events have been handled, so that a resumed stream neither repeats nor skips one.
 * Ids are uint64 decimal strings; compared as BigInt.
 */
export class ResumePoint {
  private last: bigint | undefined;

  constructor(lastEventId = "") {
    if (/^\d+$/.test(lastEventId)) this.last = BigInt(lastEventId);
  }

  /** The Last-Event-ID header to send on (re)connect; "" before the first event. */
  get header(): string {
    return this.last === undefined ? "" : this.last.toString();
  }

  /**
   * True if the event with this id is new (and records it); false for a replay of one
   * already handled. An event without a usable id is always new and moves nothing.
   */
  accept(id: string): boolean {
    if (!/^\d+$/.test(id)) return true;
    const value = BigInt(id);
    if (this.last !== undefined && value <= this.last) return false;
    this.last = value;
    return true;
  }
}

export function isTerminal(state: RunState): boolean {
  return (
    state === RunState.RUN_STATE_SUCCEEDED ||
    state === RunState.RUN_STATE_FAILED ||
    state === RunState.RUN_STATE_CANCELLED
  );
}

export type StreamStatus =
  | { kind: "connecting" }
  | { kind: "live" }
  | { kind: "retrying"; inMs: number; reason: string }
  | { kind: "ended" } // the run ended; nothing more will come
  | { kind: "failed"; error: ApiError };

export interface StreamHandlers {
  onEvent(event: RunEvent): void;
  onStatus(status: StreamStatus): void;
}

export interface StreamOptions {
  /** First reconnect delay; doubled after each failure in a row, up to maxRetryMs. */
  retryMs?: number;
  maxRetryMs?: number;
  lastEventId?: string;
  /**
   * Asked before reconnecting after the server closed the stream cleanly: a stream that
   * ends without the run's final state may mean the run ended before we subscribed.
   */
  runEnded?: () => Promise<boolean>;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/**
 * Follows a run's events until the run ends or close() is called, reconnecting with
 * Last-Event-ID after a dropped connection or an outage. One connection at a time, and never
 * more than one connection attempt per `retryMs`, so an idle page costs almost nothing.
 */
export class RunEventStream {
  private readonly abort = new AbortController();
  readonly resume: ResumePoint;
  private readonly retryMs: number;
  private readonly maxRetryMs: number;
  private readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  private serverRetryMs: number | undefined;
  private readonly runEnded: (() => Promise<boolean>) | undefined;

  constructor(
    private readonly client: ApiClient,
    private readonly runId: string,
    private readonly handlers: StreamHandlers,
    options: StreamOptions = {},
  ) {
    this.resume = new ResumePoint(options.lastEventId);
    this.retryMs = options.retryMs ?? 1000;
    this.maxRetryMs = options.maxRetryMs ?? 10_000;
    this.sleep = options.sleep ?? sleepMs;
    this.runEnded = options.runEnded;
  }

  close(): void {
    this.abort.abort();
  }

  /** Runs until the run ends, a fatal error, or close(). Never rejects. */
  async run(): Promise<void> {
    const signal = this.abort.signal;
    let failures = 0;
    while (!signal.aborted) {
      this.handlers.onStatus({ kind: "connecting" });
      let reason = "the connection closed";
      try {
        const ended = await this.once(signal);
        if (ended) {
          this.handlers.onStatus({ kind: "ended" });
          return;
        }
        failures = 0;
        if (this.runEnded && (await this.runEnded())) {
          this.handlers.onStatus({ kind: "ended" });
          return;
        }
      } catch (e) {
        if (signal.aborted) return;
        if (
          e instanceof UnauthenticatedError ||
          e instanceof NotFoundError ||
          (e instanceof ApiError && !(e instanceof ApiUnavailableError))
        ) {
          this.handlers.onStatus({ kind: "failed", error: e });
          return;
        }
        failures += 1;
        reason = e instanceof Error ? e.message : String(e);
      }
      const base = this.serverRetryMs ?? this.retryMs;
      const delay = Math.min(this.maxRetryMs, base * 2 ** Math.max(0, failures - 1));
      this.handlers.onStatus({ kind: "retrying", inMs: delay, reason });
      try {
        await this.sleep(delay, signal);
      } catch {
        return;
      }
    }
  }

  /** One connection. True when the run has ended (no reconnect). */
  private async once(signal: AbortSignal): Promise<boolean> {
    const headers: Record<string, string> = {};
    if (this.resume.header) headers["Last-Event-ID"] = this.resume.header;
    const response = await this.client.openStream(
      this.client.eventsUrl(this.runId),
      headers,
      signal,
    );
    if (!response.body) throw new ApiUnavailableError("the event stream has no body");
    this.handlers.onStatus({ kind: "live" });
    const parser = new SseParser();
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let ended = false;
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const messages = parser.push(value);
        if (parser.retryMs !== undefined) this.serverRetryMs = parser.retryMs;
        for (const message of messages) {
          // The server's last word on a run that has ended (docs/api.md): it then closes.
          if (message.event === "end") {
            ended = true;
            continue;
          }
          if (message.event !== "message") continue;
          if (!this.resume.accept(message.id)) continue;
          let json: unknown;
          try {
            json = JSON.parse(message.data);
          } catch {
            console.warn(`run ${this.runId}: event ${message.id} is not JSON; skipped`);
            continue;
          }
          const event = RunEvent.fromJSON(json);
          this.handlers.onEvent(event);
          if (event.state && isTerminal(event.state.state)) ended = true;
        }
      }
    } finally {
      reader.releaseLock();
    }
    return ended;
  }
}

function sleepMs(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}
