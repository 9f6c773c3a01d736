#!/usr/bin/python3
"""HTTP load harness for the controller's API (a benchmark, not a test: it never fails on a
figure). Starts a real controller (development mode, loopback, temp dir) and one agent, then:

  1. SSE: while a run executes, the controller's CPU time (utime + stime from /proc) over a
     window with no watcher, then with --watchers clients on /api/v1/runs/{id}/events;
  2. seeds --runs queued runs through POST /api/v1/runs (the agent is stopped first);
  3. GET /api/v1/runs?limit=50 open-loop at --rate requests/s for --seconds;
  4. GET /api/v1/runs/{id}/compare of the finished run open-loop at --compare-rate.

Open loop: each request has a scheduled start and its latency is measured from that moment,
so a slow server is not hidden by a client that waits for it (no coordinated omission).
Prints p50/p99 latency, requests/s achieved and errors per phase.

  tests/load/http_load.py --bin-dir build/bin [--runs 10000] [--rate 500] [--seconds 20]
"""

import argparse
import http.client
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

SPEC = """name: load-{n}
benchmark: pipetest
params: {{loops: 2000}}
iterations: {iterations}
arms:
  - {{name: short, params: {{loops: 2000}}}}
  - {{name: long,  params: {{loops: 4000}}}}
"""


def wait_for(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    sys.exit(f"timed out waiting for {what}")


class Api:
    def __init__(self, port):
        self.port = port
        self.local = threading.local()

    def call(self, method, path, body=None, headers=None):
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            response = conn.getresponse()
            return response.status, response.read()
        except (OSError, http.client.HTTPException):
            self.local.conn = None
            return 0, b""

    def json(self, path):
        status, body = self.call("GET", path)
        return json.loads(body) if status == 200 else {}


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def open_loop(api, path, rate, seconds, workers=32):
    """Requests `path` at `rate`/s for `seconds`; returns (latencies, errors, elapsed)."""
    slots = queue.Queue()
    start = time.monotonic() + 0.5
    total = int(rate * seconds)
    for i in range(total):
        slots.put(start + i / rate)
    latencies, errors, lock = [], [0], threading.Lock()

    def worker():
        while True:
            try:
                slot = slots.get_nowait()
            except queue.Empty:
                return
            delay = slot - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            status, _ = api.call("GET", path)
            done = time.monotonic()
            with lock:
                if status == 200:
                    latencies.append(done - slot)
                else:
                    errors[0] += 1

    threads = [threading.Thread(target=worker) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(latencies), errors[0], time.monotonic() - start


def report(name, latencies, errors, elapsed):
    def pct(p):
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1e3 if latencies else 0

    print(f"{name}: {len(latencies)} ok, {errors} errors in {elapsed:.1f} s = "
          f"{len(latencies) / elapsed:.0f} requests/s; p50 {pct(0.50):.2f} ms, "
          f"p99 {pct(0.99):.2f} ms, max {pct(1.0):.2f} ms")


def sse_watcher(port, run_id, stop):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request("GET", f"/api/v1/runs/{run_id}/events", headers={"Accept": "text/event-stream"})
    response = conn.getresponse()
    while not stop.is_set():
        try:
            if not response.read1(4096):
                return
        except OSError:
            continue


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--runs", type=int, default=10000)
    parser.add_argument("--rate", type=float, default=500)
    parser.add_argument("--compare-rate", type=float, default=50)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--watchers", type=int, default=100)
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="tlbfleet-load-")
    procs = []
    try:
        ready = os.path.join(work, "ready")
        log = open(os.path.join(work, "controller.log"), "w")
        controller = subprocess.Popen(
            [os.path.join(args.bin_dir, "tlbfleet-controller"), "--grpc-listen", "127.0.0.1:0",
             "--http-listen", "127.0.0.1:0", "--db", os.path.join(work, "fleet.db"),
             "--ready-file", ready, "--log-level", "warn"], stdout=log, stderr=log)
        procs.append(controller)
        text = wait_for(lambda: os.path.exists(ready) and open(ready).read(), 30, "the controller")
        ports = json.loads(text)
        api = Api(ports["http_port"])
        agent = subprocess.Popen(
            [os.path.join(args.bin_dir, "tlbfleet-agent"), "--controller",
             f"127.0.0.1:{ports['grpc_port']}", "--state-dir", os.path.join(work, "agent"),
             "--log-level", "warn"], stdout=log, stderr=log)
        procs.append(agent)
        wait_for(lambda: any(h.get("connected") for h in api.json("/api/v1/hosts").get("hosts", [])),
                 30, "the agent")

        # 1. SSE cost while a run executes.
        status, body = api.call("POST", "/api/v1/runs", SPEC.format(n="sse", iterations=400),
                                {"Content-Type": "application/yaml"})
        run_id = json.loads(body)["runId"]
        wait_for(lambda: api.json(f"/api/v1/runs/{run_id}").get("state") == "RUN_STATE_RUNNING",
                 30, "the run to start")
        window = 10.0
        before = cpu_seconds(controller.pid)
        time.sleep(window)
        idle_share = (cpu_seconds(controller.pid) - before) / window
        stop = threading.Event()
        watchers = [threading.Thread(target=sse_watcher, args=(ports["http_port"], run_id, stop),
                                     daemon=True) for _ in range(args.watchers)]
        for w in watchers:
            w.start()
        time.sleep(2)  # connections established
        before = cpu_seconds(controller.pid)
        time.sleep(window)
        watched_share = (cpu_seconds(controller.pid) - before) / window
        stop.set()
        print(f"sse: controller CPU {idle_share * 100:.1f} % of a core with no watcher, "
              f"{watched_share * 100:.1f} % with {args.watchers} watchers "
              f"(cost {(watched_share - idle_share) * 100:.1f} % of a core)")
        api.call("POST", f"/api/v1/runs/{run_id}/cancel", "{}", {"Content-Type": "application/json"})

        # A small run to compare, finished, then no agent: the seeded runs stay queued.
        status, body = api.call("POST", "/api/v1/runs", SPEC.format(n="compare", iterations=5),
                                {"Content-Type": "application/yaml"})
        compare_id = json.loads(body)["runId"]
        wait_for(lambda: api.json(f"/api/v1/runs/{compare_id}").get("state") ==
                 "RUN_STATE_SUCCEEDED", 300, "the compared run")
        agent.send_signal(signal.SIGTERM)
        agent.wait(60)

        # 2. Seed.
        started = time.monotonic()
        counter = iter(range(args.runs))
        counter_lock = threading.Lock()

        def seed():
            while True:
                with counter_lock:
                    n = next(counter, None)
                if n is None:
                    return
                api.call("POST", "/api/v1/runs", SPEC.format(n=n, iterations=1),
                         {"Content-Type": "application/yaml"})

        seeders = [threading.Thread(target=seed) for _ in range(8)]
        for s in seeders:
            s.start()
        for s in seeders:
            s.join()
        print(f"seeded {args.runs} runs in {time.monotonic() - started:.0f} s")

        # 3. and 4.
        report(f"GET /api/v1/runs?limit=50 at {args.rate:.0f}/s",
               *open_loop(api, "/api/v1/runs?limit=50", args.rate, args.seconds))
        report(f"GET /api/v1/runs/{{id}}/compare at {args.compare_rate:.0f}/s",
               *open_loop(api, f"/api/v1/runs/{compare_id}/compare", args.compare_rate,
                          args.seconds, workers=8))
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
