#!/usr/bin/python3
"""Time to verdict in the microVM lab (issue 22): one comparison, the flush ceiling at 1
against 512, measured twice for real over several boots of one lab guest:

  fixed       boots: B, iterations: N                       (mmtests-like fixed counts)
  sequential  boots: {min: M, max: B}, iterations: N,       (stops at the first look whose
              adaptive: {stop: verdict, ...}                 verdict is sequentially valid)

A real controller runs on this host, the agent inside a guest booting Debian's kernel under
QEMU TCG (deploy/vm-lab/lab, docs/vm-lab.md), and every boot of a run is a real reboot of the
guest. For each run the script records the verdict, the estimate and its interval, the boots
and iterations used, and the machine time: the run's wall time from submission to finish and
the sum of its jobs' times (the agent's `job finished ... elapsed=` lines on the guest's
console). It prints one table (Markdown) and writes everything to OUT/result.json.

Workload (default): ebizzy with 1 thread and 8 KiB chunks (`chunk_size: 8192`, `mmap: always`),
judged on records_per_sec: every record maps, copies and unmaps 2 pages, so the ceiling decides
every flush — at 1 a 2-page unmap is a full flush, which under TCG empties the guest CPU's
whole software TLB and the copies refill it page by page; at 512 it is 2 `invlpg`s. Pilots in
the lab on 2026-12-03 (one boot each, 2 s iterations): ceiling 512 ahead in 10 of 10
iteration pairs, ratio 1.49 and 1.70. What did not show the ceiling there: tlbflush with
128-page munmaps (flush_ns ratio 0.94 [0.65, 1.36]: most likely its time is the IPI's wait for
the other vCPU's turn on single-threaded TCG, the same at both ceilings), ebizzy with 64 KiB and 512 KiB
chunks (1.07 and 1.10, and 1.01/1.08 in docs/statistics.md "Across real reboots"), and pft, whose timed
loop only faults pages in (its unmap is not timed), so the ceiling cannot change it although
it is the lab's least noisy workload (docs/vm-lab.md "Noise"). Details: docs/performance.md
"Time to verdict in the lab (issue 22)"; --benchmark/--params/--metric change the workload.

  /usr/bin/python3 tests/perf/lab_time_to_verdict.py                 # defaults: 6 boots x 6,
                                                                     # 7-8 min at load 3-4
  /usr/bin/python3 tests/perf/lab_time_to_verdict.py --boots 2 --min-boots 2 --iterations 2
                                                                     # a smoke run (~2 min)

Not in CTest (minutes of lab time, up to ~10 on a busy host); run it by hand. It starts its own
controller (ports chosen by the kernel) and its own lab directory, and stops both at the end.
"""

import argparse
import datetime
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
LAB = os.path.join(REPO, "deploy", "vm-lab", "lab")


def log(msg):
    print(f"[{datetime.datetime.utcnow().strftime('%H:%M:%S')}] {msg}", flush=True)


def die(msg):
    print(f"lab_time_to_verdict: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


class Fleet:
    """A controller on this host and one lab guest whose agent dials it."""

    def __init__(self, args, work):
        self.args = args
        self.work = work
        self.bin = os.path.join(args.build, "bin")
        self.lab_dir = os.path.join(work, "lab")
        self.controller = None
        self.lab_up = False
        self.env = dict(os.environ)

    def start(self):
        ready = os.path.join(self.work, "ready")
        self.controller_log = open(os.path.join(self.work, "controller.log"), "w")
        self.controller = subprocess.Popen(
            [os.path.join(self.bin, "tlbfleet-controller"), "--grpc-listen", "127.0.0.1:0",
             "--http-listen", "127.0.0.1:0", "--db", os.path.join(self.work, "fleet.db"),
             "--ready-file", ready],
            stdout=self.controller_log, stderr=subprocess.STDOUT, start_new_session=True)
        for _ in range(200):
            if os.path.exists(ready) and os.path.getsize(ready) > 0:
                break
            time.sleep(0.1)
        else:
            die(f"the controller did not write {ready} (log: {self.work}/controller.log)")
        port = json.load(open(ready))["grpc_port"]
        self.env["TLBFLEET_CONTROLLER"] = f"127.0.0.1:{port}"
        log(f"controller on 127.0.0.1:{port} (pid {self.controller.pid})")
        up = subprocess.run(
            [LAB, "up", "1", "--controller-port", str(port), "--out", self.lab_dir, "--cache",
             self.args.lab_cache, "--agent", os.path.join(self.bin, "tlbfleet-agent")],
            capture_output=True, text=True)
        self.lab_up = True
        if up.returncode != 0:
            die(f"lab up failed ({up.returncode}): {up.stdout}{up.stderr}")
        log((up.stdout + up.stderr).strip().splitlines()[0])
        deadline = time.time() + 300
        while time.time() < deadline:
            hosts = self.cli_json(["hosts"], check=False)
            if hosts and any(h.get("connected") and h.get("info", {}).get("hostname") == "vm1"
                             for h in hosts.get("hosts", [])):
                log("vm1 connected")
                return
            time.sleep(1)
        die("vm1 did not connect within 300 s")

    def stop(self):
        if self.lab_up:
            subprocess.run([LAB, "down", "--out", self.lab_dir], capture_output=True)
        if self.controller and self.controller.poll() is None:
            self.controller.send_signal(signal.SIGTERM)
            try:
                self.controller.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.controller.kill()

    def cli(self, argv, check=True, timeout=120):
        done = subprocess.run([os.path.join(self.bin, "tlbfleet")] + argv, capture_output=True,
                              text=True, env=self.env, timeout=timeout)
        if check and done.returncode != 0:
            die(f"tlbfleet {' '.join(argv)}: exit {done.returncode}: {done.stdout}{done.stderr}")
        return done

    def cli_json(self, argv, check=True):
        done = self.cli(argv + ["--format", "json"], check=check)
        if done.returncode != 0:
            return None
        return json.loads(done.stdout)

    def job_times(self, run_id):
        """Seconds of every job attempt of the run, from the guest's console (all boots)."""
        pattern = re.compile(r"job finished (\S+) .*elapsed=([0-9.]+)s run=(\d+) job=(\d+)")
        times = []
        with open(os.path.join(self.lab_dir, "run", "vm1.log"), errors="replace") as f:
            for line in f:
                m = pattern.search(line)
                if m and int(m.group(3)) == int(run_id):
                    times.append(float(m.group(2)))
        return times


def spec_text(args, design):
    params = args.params
    if design == "fixed":
        plan = f"iterations: {args.iterations}\nboots: {args.boots}\n"
    else:
        plan = (f"iterations: {args.iterations}\n"
                f"boots: {{min: {args.min_boots}, max: {args.boots}, metrics: [{args.metric}]}}\n"
                f"adaptive: {{stop: verdict, level: {args.level}, margin: {args.margin}, "
                f"spending: {args.spending}}}\n")
    return (f"name: lab-time-to-verdict-{design}\n"
            f"benchmark: {args.benchmark}\n"
            f"params: {params}\n"
            f"{plan}"
            f"arms:\n"
            f"  - {{name: ceiling-1, ceiling: 1}}\n"
            f"  - {{name: ceiling-512, ceiling: 512}}\n"
            f"hosts: {{labels: {{vmlab: \"1\"}}}}\n")


def measure(fleet, args, design):
    path = os.path.join(fleet.work, f"{design}.yaml")
    with open(path, "w") as f:
        f.write(spec_text(args, design))
    load_before = loadavg()
    t0 = time.time()
    run_id = fleet.cli(["submit", path]).stdout.strip().splitlines()[-1]
    log(f"{design}: run {run_id} submitted")
    waited = fleet.cli(["wait", run_id, "--quiet", "--timeout", str(args.run_timeout)],
                       check=False, timeout=args.run_timeout + 60)
    t1 = time.time()
    load_after = loadavg()
    run = fleet.cli_json(["run", run_id])
    log(f"{design}: run {run_id} {run['state']} after {t1 - t0:.0f} s: {run['stop_reason']}")
    if waited.returncode != 0:
        print(fleet.cli(["run", run_id], check=False).stdout, file=sys.stderr)
        die(f"{design}: run {run_id} did not succeed (wait exit {waited.returncode}); "
            f"controller log {fleet.work}/controller.log, console {fleet.lab_dir}/run/vm1.log")
    report = fleet.cli_json(["compare", run_id, "--unadjusted", "--margin", args.margin,
                             "--level", str(args.level)])
    verdict = None
    for group in report["groups"]:
        if group["metric"] == args.metric:
            verdict = next(v for v in group["verdicts"] if v["arm"] == "ceiling-512")
            n = group["n"]
    if verdict is None:
        die(f"{design}: run {run_id} has no {args.metric} row in compare")
    rows = [r for r in run.get("adaptive_rows", []) if r.get("metric") == args.metric]
    jobs = fleet.job_times(run_id)
    return {
        "design": design,
        "run_id": run_id,
        "spec": spec_text(args, design),
        "state": run["state"],
        "stop_reason": run["stop_reason"],
        "boots": run["boots"],
        "iterations_per_boot": run["iterations_per_boot"],
        "adaptive_rounds": run.get("adaptive_rounds", 0),
        "jobs": int(run["jobs"]["total"]),
        "samples_per_arm": n,
        "wall_s": t1 - t0,
        "wall_controller_s": int(run["finished_unix"]) - int(run["created_unix"]),
        "job_attempts": len(jobs),
        "job_seconds_sum": sum(jobs),
        "job_seconds_median": statistics.median(jobs) if jobs else None,
        "load_before": load_before,
        "load_after": load_after,
        "compare": {k: verdict.get(k) for k in ("verdict", "ratio", "ci_low", "ci_high", "p",
                                                "same_p", "design", "scope", "units_base",
                                                "units_other")},
        "sequential_row": rows[0] if rows else None,
    }


def fmt_row(r):
    c = r["compare"]
    seq = r["sequential_row"]
    if seq is not None:
        look = seq.get("decided_round", 0) + 1
        verdict = (f"{seq.get('verdict') or 'unknown'} (sequential, at look {look}, "
                   f"{seq.get('arm_boots')} boots)" if seq.get("decided") else
                   f"unknown (sequential, open at the maximum)")
    else:
        verdict = f"{c['verdict']} (fixed-sample)"
    return (f"| {r['design']} | {verdict} | {c['ratio']:.4f} [{c['ci_low']:.4f}, "
            f"{c['ci_high']:.4f}], p {c['p']:.3g} | {r['boots']} × {r['iterations_per_boot']} "
            f"({r['samples_per_arm'][0]} + {r['samples_per_arm'][1]} samples, {r['jobs']} jobs) | "
            f"{r['wall_s']:.0f} s | {r['job_seconds_sum']:.0f} s ({r['job_attempts']} jobs, "
            f"median {r['job_seconds_median']:.2f} s) | {r['load_before']:.1f} → "
            f"{r['load_after']:.1f} |")


def print_table(doc):
    args = doc["args"]
    results = doc["runs"]
    print()
    print(f"{args['benchmark']} {args['params']}, metric {args['metric']}, ratio ceiling-512 / "
          f"ceiling-1; level {args['level']}, margin {args['margin']}; sequential: boots "
          f"{args['min_boots']}..{args['boots']}, {args['spending']}")
    print()
    print("| run | verdict | estimate [95 % interval], p (`compare`: every sample of the run) | "
          "boots × iterations per arm (samples, jobs) | wall, submit → finished | "
          "sum of job times | load before → after |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        print(fmt_row(r))
    print()
    for r in results:
        print(f"{r['design']} (run {r['run_id']}): {r['stop_reason']}")
        if r["sequential_row"]:
            s = r["sequential_row"]
            print(f"  sequential row: verdict {s.get('verdict') or '-'}, ratio {s.get('ratio')}, "
                  f"p {s.get('p')}, look level {s.get('look_alpha')}, boots {s.get('base_boots')}/"
                  f"{s.get('arm_boots')}, samples {s.get('base_samples')}/"
                  f"{s.get('arm_samples')}: {s.get('reason')}")
    if len(results) == 2:
        f, s = (results if results[0]["design"] == "fixed" else results[::-1])
        print(f"\nsequential / fixed: wall {s['wall_s'] / f['wall_s']:.2f}, job time "
              f"{s['job_seconds_sum'] / f['job_seconds_sum']:.2f}, jobs {s['jobs']}/{f['jobs']}")
    print(f"\nuptime at start: {doc['uptime_start']}\nuptime at end:   {doc['uptime_end']}\n"
          f"ended: {doc['ended']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build"),
                    help="build tree with bin/tlbfleet-controller, tlbfleet-agent, tlbfleet")
    ap.add_argument("--lab-cache", default=os.environ.get("TLBFLEET_VM_LAB_CACHE",
                                                          os.path.join(REPO, "build", "vm-lab")),
                    help="where the lab's kernel package is cached (lab up --cache)")
    ap.add_argument("--out", help="work directory (default: a new /tmp/tlbfleet-lab-ttv.*)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--boots", type=int, default=6,
                    help="fixed: boots per arm; sequential: boots.max (default 6)")
    ap.add_argument("--min-boots", type=int, default=2, help="sequential: boots.min (default 2)")
    ap.add_argument("--iterations", type=int, default=6,
                    help="iterations of each arm per boot, both designs (default 6)")
    ap.add_argument("--level", default="0.95")
    ap.add_argument("--margin", default="1%", help="margin of 'same', both designs (default 1%%)")
    ap.add_argument("--spending", default="obrien-fleming", choices=["obrien-fleming", "pocock"])
    ap.add_argument("--benchmark", default="ebizzy")
    ap.add_argument("--params", default="{threads: 1, seconds: 2, mmap: always, chunk_size: 8192}",
                    help="the workload's params (flow-style YAML)")
    ap.add_argument("--metric", default="records_per_sec",
                    help="the judged metric (the sequential run's boots.metrics)")
    ap.add_argument("--order", default="fixed,sequential",
                    help="the order of the two runs (default fixed,sequential)")
    ap.add_argument("--run-timeout", type=int, default=1500, help="seconds per run")
    ap.add_argument("--table-from", metavar="JSON",
                    help="print the table of an earlier result.json and exit (no lab)")
    args = ap.parse_args()
    if args.table_from:
        print_table(json.load(open(args.table_from)))
        return

    work = args.out or tempfile.mkdtemp(prefix="tlbfleet-lab-ttv.")
    os.makedirs(work, exist_ok=True)
    started = datetime.datetime.utcnow().replace(microsecond=0).isoformat() + "Z"
    up_start = uptime()
    print(f"date: {started}\nuptime at start: {up_start}\nnproc: {os.cpu_count()}\n"
          f"command: {' '.join([sys.executable] + sys.argv)}\nwork: {work}", flush=True)

    fleet = Fleet(args, work)
    results = []
    try:
        fleet.start()
        for design in args.order.split(","):
            if design not in ("fixed", "sequential"):
                die(f"--order: expected fixed and sequential, got {design!r}")
            results.append(measure(fleet, args, design))
    finally:
        fleet.stop()
    up_end = uptime()
    ended = datetime.datetime.utcnow().replace(microsecond=0).isoformat() + "Z"

    with open(os.path.join(work, "result.json"), "w") as out:
        doc = {"started": started, "ended": ended, "uptime_start": up_start,
               "uptime_end": up_end, "args": vars(args), "runs": results}
        json.dump(doc, out, indent=1)
    print_table(doc)
    print(f"results: {work}/result.json")
    if not args.keep and not args.out:
        # Keep what explains a surprise: the console and the controller's log stay with the JSON.
        keep = os.path.join(tempfile.gettempdir(), f"tlbfleet-lab-ttv-{int(time.time())}")
        os.makedirs(keep, exist_ok=True)
        for name in ("result.json", "controller.log"):
            shutil.copy(os.path.join(work, name), keep)
        shutil.copy(os.path.join(work, "lab", "run", "vm1.log"), keep)
        shutil.rmtree(work, ignore_errors=True)
        print(f"kept: {keep}/result.json, controller.log, vm1.log")


if __name__ == "__main__":
    main()
