import { describe, expect, it } from "vitest";
import { ApiClient, type FetchLike } from "./client";
import { UnauthenticatedError } from "./errors";
import type { RunEvent } from "./gen/tlbfleet/v1/fleet";
import { ResumePoint, RunEventStream, SseParser, type StreamStatus } from "./sse";

describe("SseParser", () => {
  it("joins data lines, keeps the last id, skips comments, dispatches on a blank line", () => {
    const p = new SseParser();
    const out = p.push(': keep-alive\nid: 7\ndata: {"a":\ndata: 1}\n\nevent: other\ndata: x\n\n');
    expect(out).toEqual([
      { id: "7", event: "message", data: '{"a":\n1}' },
      { id: "7", event: "other", data: "x" },
    ]);
  });

  it("handles CRLF, CR and lines split across chunks (also a CRLF split in two)", () => {
    const p = new SseParser();
    expect(p.push("id: 1\r\nda")).toEqual([]);
    expect(p.push("ta: one\r")).toEqual([]);
    expect(p.push("\n\r\nid: 2\rdata: two\r\r")).toEqual([
      { id: "1", event: "message", data: "one" },
      { id: "2", event: "message", data: "two" },
    ]);
  });

  it("reads retry, ignores an id with NUL and a message without data", () => {
    const p = new SseParser();
    expect(p.push("retry: 2500\nid: 3\n\nid: 4\u0000x\ndata: d\n\n")).toEqual([
      { id: "3", event: "message", data: "d" },
    ]);
    expect(p.retryMs).toBe(2500);
  });

  it("drops a leading byte order mark", () => {
    expect(new SseParser().push("\ufeffdata: x\n\n")).toEqual([
      { id: "", event: "message", data: "x" },
    ]);
  });
});

describe("ResumePoint", () => {
  it("accepts increasing ids, refuses replays, and compares as uint64", () => {
    const r = new ResumePoint();
    expect(r.header).toBe("");
    expect(r.accept("9")).toBe(true);
    expect(r.accept("10")).toBe(true); // not "10" < "9" as strings
    expect(r.accept("10")).toBe(false);
    expect(r.accept("3")).toBe(false);
    expect(r.accept("18446744073709551615")).toBe(true);
    expect(r.header).toBe("18446744073709551615");
  });

  it("starts from a given Last-Event-ID", () => {
    const r = new ResumePoint("41");
    expect(r.header).toBe("41");
    expect(r.accept("41")).toBe(false);
    expect(r.accept("42")).toBe(true);
  });
});

function sse(events: { id: number; body: unknown }[], close = true): Response {
  const text = events.map((e) => `id: ${e.id}\ndata: ${JSON.stringify(e.body)}\n\n`).join("");
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      const bytes = new TextEncoder().encode(text);
      // Two chunks, split inside a message.
      const cut = Math.floor(bytes.length / 2);
      controller.enqueue(bytes.slice(0, cut));
      controller.enqueue(bytes.slice(cut));
      if (close) controller.close();
    },
  });
  return new Response(stream, { status: 200, headers: { "Content-Type": "text/event-stream" } });
}

const job = (id: number) => ({
  id: String(id),
  runId: "5",
  samples: String(id),
  job: { jobId: String(id), state: "JOB_STATE_SUCCEEDED" },
});
const done = (id: number) => ({
  id: String(id),
  runId: "5",
  state: { state: "RUN_STATE_SUCCEEDED", reason: "all jobs done" },
});

async function follow(
  responses: (Response | Error)[],
  options: { runEnded?: () => Promise<boolean> } = {},
) {
  const requests: Record<string, string>[] = [];
  const fetch: FetchLike = async (_url, init) => {
    requests.push({ ...(init?.headers as Record<string, string>) });
    const next = responses.shift();
    if (!next) throw new Error("test: no more responses");
    if (next instanceof Error) throw next;
    return next;
  };
  const events: RunEvent[] = [];
  const statuses: StreamStatus[] = [];
  const delays: number[] = [];
  const stream = new RunEventStream(
    new ApiClient({ fetch }),
    "5",
    { onEvent: (e) => events.push(e), onStatus: (s) => statuses.push(s) },
    {
      sleep: async (ms) => {
        delays.push(ms);
        // A stream that would reconnect for ever fails the test instead of hanging it.
        if (delays.length > 20) stream.close();
      },
      ...options,
    },
  );
  await stream.run();
  return { events, statuses, requests, delays, stream };
}

describe("RunEventStream", () => {
  it("resumes after a dropped connection with Last-Event-ID and drops the overlap", async () => {
    const { events, requests, statuses } = await follow([
      sse([
        { id: 11, body: job(11) },
        { id: 12, body: job(12) },
      ]),
      // The server replays from the table after 12, but also resends 12 (overlap).
      sse([
        { id: 12, body: job(12) },
        { id: 13, body: job(13) },
        { id: 14, body: done(14) },
      ]),
    ]);
    expect(events.map((e) => e.id)).toEqual([11, 12, 13, 14]);
    expect(requests[0]!["Last-Event-ID"]).toBeUndefined();
    expect(requests[1]!["Last-Event-ID"]).toBe("12");
    expect(statuses.at(-1)).toEqual({ kind: "ended" });
  });

  it("stops for good once the run has ended", async () => {
    const { events, requests } = await follow([sse([{ id: 1, body: done(1) }])]);
    expect(events).toHaveLength(1);
    expect(requests).toHaveLength(1);
  });

  it("waits as long as the server's retry: asks before reconnecting", async () => {
    const first = new Response("retry: 3000\nid: 1\ndata: " + JSON.stringify(job(1)) + "\n\n");
    const { delays } = await follow([first, sse([{ id: 2, body: done(2) }])]);
    expect(delays).toEqual([3000]);
  });

  it("retries an outage with growing delays and keeps the resume point", async () => {
    const { events, requests, delays } = await follow([
      sse([{ id: 3, body: job(3) }]),
      new TypeError("connection refused"),
      new TypeError("connection refused"),
      new Response("bad gateway", { status: 502 }),
      sse([{ id: 4, body: done(4) }]),
    ]);
    expect(events.map((e) => e.id)).toEqual([3, 4]);
    expect(requests.map((r) => r["Last-Event-ID"])).toEqual([undefined, "3", "3", "3", "3"]);
    expect(delays).toEqual([1000, 1000, 2000, 4000]);
  });

  it("does not retry a 401: the session is gone", async () => {
    const { statuses, requests } = await follow([
      new Response(JSON.stringify({ code: "UNAUTHENTICATED", message: "expired" }), {
        status: 401,
      }),
    ]);
    expect(requests).toHaveLength(1);
    const last = statuses.at(-1);
    expect(last?.kind).toBe("failed");
    expect(last?.kind === "failed" && last.error).toBeInstanceOf(UnauthenticatedError);
  });

  it("asks whether the run ended when the stream closes without its final state", async () => {
    let asked = 0;
    const { events, requests, statuses } = await follow([sse([{ id: 1, body: job(1) }])], {
      runEnded: async () => {
        asked += 1;
        return true;
      },
    });
    expect(asked).toBe(1);
    expect(events).toHaveLength(1);
    expect(requests).toHaveLength(1);
    expect(statuses.at(-1)).toEqual({ kind: "ended" });
  });

  it("ends on the server's `end` event, even when the final state came before the resume point", async () => {
    // The controller's exact framing: retry first, then the events, then `event: end`.
    const server = new Response(
      "retry: 2000\n\nid: 7\ndata: " + JSON.stringify(job(7)) + "\n\nevent: end\ndata: {}\n\n",
    );
    const { events, requests, statuses } = await follow([server]);
    expect(events.map((e) => e.id)).toEqual([7]);
    expect(requests).toHaveLength(1);
    expect(statuses.at(-1)).toEqual({ kind: "ended" });
  });

  it("skips an event that is not JSON without losing the next", async () => {
    const bad = new Response(
      "id: 1\ndata: {oops\n\nid: 2\ndata: " + JSON.stringify(done(2)) + "\n\n",
    );
    const { events } = await follow([bad]);
    expect(events.map((e) => e.id)).toEqual([2]);
  });
});
