#!/usr/bin/env python3
"""How precision per second of machine time depends on iteration length (issue 22, item 3).

    /usr/bin/python3 tests/perf/iteration_length.py [--agent build/bin/tlbfleet-agent]
        [--workloads ebizzy,tlbflush,pipetest] [--lengths 0.25,0.5,1,2,5,10]
        [--budget 480 | --long] [--rounds 2] [--fleet-jobs 20] [--json FILE] [--smoke]
        [--lab-guest N --lab-out DIR] [--set WORKLOAD:name=value]

For each workload and each target length L it runs iterations back to back, one child process
per iteration exactly as an agent runs a job (`tlbfleet-agent run-workload <name> --json
--set k=v ...`: one job is one iteration, docs/agent.md), and times each process. How a
length is asked for:

  ebizzy    seconds=L (the schema's `seconds` is a whole number >= 1, so L is rounded and
            lengths below 1 s are not run: `seconds: auto` cannot choose them either);
  pipetest  loops = L x the round-trip rate measured by a short calibration run;
  tlbflush  region_mb = L / the flush time per MiB of a calibration run (tlbflush flushes its
            whole region once per iteration; there is no time knob). Its start-up, faulting
            in 2 x region_mb, grows with the length, and the region is capped at a sixteenth of
            MemAvailable.

Per length it prints: iterations, the measured phase per iteration (ebizzy: `seconds`;
pipetest: loops x usecs_per_op; tlbflush: flush_ms), the wall time per iteration, the
start-up cost (wall minus measured phase: exec, memory set-up, thread start), the CoV of the
workload's primary metric and a robust CoV (rCoV: 1.4826 MAD / median, which one starved
iteration moves little), the lag-1 autocorrelation r1 of consecutive iterations, and the
precision per second of machine time, as
  rse@1s = CoV x sqrt(wall x (1 + r) / (1 - r)),  r = r1 clamped to [0, 0.95],
the relative standard error of the mean of iterations filling one second of wall time,
start-up included, with the effective sample size n (1 - r) / (1 + r) of an AR(1) series
(a negative r1 is taken as 0: the harness never claims better than independent samples),
and t(1%) = (rse@1s / 1 %)^2, the machine seconds for a +-1 % standard error.

Budget: the time is split evenly over the workloads and their lengths and each length's share
over --rounds blocks, the lengths taken in alternating order per round, so that a change in
the host's load hits every length alike. CoV and r1 are pooled within blocks. Each block runs
at least --min-iterations iterations, so a long length can overrun its share.

Then per workload it fits the model of docs/iteration-length.md,
  CoV(L)^2 = A / L + B      (noise that averages out over the length, plus a floor that does
                             not: per-iteration set-up luck, placement, frequency),
  wall(L)  = (1 + c1) L + c0
and prints the length that minimises CoV^2 x wall, i.e. maximises precision per second:
  L* = sqrt(A c0 / (B (1 + c1)))    (B = 0: as long as allowed).
These A, B, c0 are the figures controller/scheduler/iteration_length.cc carries for
`seconds: auto`.

--fleet-jobs N (default 20) also submits N ebizzy jobs of 1 s to a local controller and agent
(tlbfleet-controller and tlbfleet beside --agent) and prints the seconds per job beyond the
1 s: the start-up a run pays per iteration (lease, child process, samples, next lease).

--lab-guest N --lab-out DIR runs every iteration inside microVM lab guest vmN instead
(docs/vm-lab.md: `lab up` first), a block of iterations per `lab exec`, each timed inside the
guest from /proc/uptime (10 ms steps).

A benchmark, not a test: it never fails on a figure; exit 1 only when a run fails or its
output cannot be read. --smoke runs two short lengths per workload with 3 iterations each
(CTest: iteration_length_smoke). docs/iteration-length.md has the figures and the model.
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# The primary metric of each workload (catalogue/workloads/*.cc, PrimaryMetric()).
PRIMARY = {"ebizzy": "records_per_sec", "tlbflush": "cost_ns", "pipetest": "usecs_per_op"}
DEFAULT_PARAMS = {"ebizzy": {"threads": "2"}, "tlbflush": {"threads": "1"}, "pipetest": {}}


def die(message):
    print(f"iteration_length.py: {message}", file=sys.stderr)
    sys.exit(1)


class Runner:
    def __init__(self, agent, prefix):
        self.agent = agent
        self.prefix = prefix

    def iteration(self, workload, params, timeout):
        """Runs one iteration; returns (wall seconds, {metric: aggregate value})."""
        argv = self.prefix + [self.agent, "run-workload", workload, "--json"]
        for k, v in sorted(params.items()):
            argv += ["--set", f"{k}={v}"]
        start = time.monotonic()
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            die(f"{' '.join(argv)}: {e}")
        wall = time.monotonic() - start
        if done.returncode != 0:
            die(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()[-500:]}")
        return wall, parse_values(workload, done.stdout.splitlines())

    def block(self, workload, params, n, timeout):
        return [self.iteration(workload, params, timeout) for _ in range(n)]

    def mem_available_mb(self):
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) // 1024
        return 4096


def parse_values(workload, lines):
    values = {}
    for line in lines:
        try:
            m = json.loads(line)
        except json.JSONDecodeError:
            die(f"{workload}: not a JSON line: {line[:200]}")
        if "series" not in m and m.get("value") is not None:
            values[m["metric"]] = float(m["value"])
    if PRIMARY[workload] not in values:
        die(f"{workload}: no {PRIMARY[workload]} in its output")
    return values


class GuestRunner:
    """Runs iterations inside a microVM lab guest (docs/vm-lab.md), a block per `lab exec`: the
    guest times each child process itself (/proc/uptime, 10 ms steps), so the control
    channel's latency is not counted as start-up."""

    def __init__(self, lab, guest, lab_out):
        self.lab = [lab] + (["--out", lab_out] if lab_out else [])
        self.guest = str(guest)

    def block(self, workload, params, n, timeout):
        sets = " ".join(f"--set {k}={v}" for k, v in sorted(params.items()))
        # busybox's date has no %N: /proc/uptime's centiseconds time each iteration.
        script = (f"i=0; while [ $i -lt {n} ]; do read t0 _ < /proc/uptime; "
                  f"/usr/bin/tlbfleet-agent run-workload {workload} --json {sets} "
                  f"> /tmp/il.out 2>&1 || {{ echo ILFAIL; cat /tmp/il.out; exit 1; }}; "
                  f"read t1 _ < /proc/uptime; grep -v series /tmp/il.out; "
                  f"echo \"ILITER $t0 $t1\"; i=$((i+1)); done")
        argv = self.lab + ["exec", self.guest, "--timeout", str(int(timeout)), script]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            die(f"lab exec {self.guest}: exit {done.returncode}: "
                f"{(done.stdout + done.stderr).strip()[-500:]}")
        out, pending = [], []
        for line in done.stdout.splitlines():
            if line.startswith("ILITER "):
                _, t0, t1 = line.split()
                out.append((float(t1) - float(t0), parse_values(workload, pending)))
                pending = []
            elif line.startswith("{"):
                pending.append(line)
        if len(out) != n:
            die(f"lab exec {self.guest}: {len(out)} iterations reported, {n} asked")
        return out

    def iteration(self, workload, params, timeout):
        return self.block(workload, params, 1, timeout)[0]

    def mem_available_mb(self):
        done = subprocess.run(self.lab + ["exec", self.guest, "grep MemAvailable /proc/meminfo"],
                              capture_output=True, text=True, check=False)
        fields = done.stdout.split()
        return int(fields[1]) // 1024 if done.returncode == 0 and len(fields) > 1 else 256


def measured_seconds(workload, params, values):
    """The measured phase of one iteration: the part that is not start-up."""
    if workload == "ebizzy":
        return float(params["seconds"])
    if workload == "pipetest":
        return int(params["loops"]) * values["usecs_per_op"] / 1e6
    return values["flush_ms"] / 1e3  # tlbflush


def length_params(runner, workload, base, lengths, smoke):
    """[(target L, params)] for the workload, calibrating pipetest and tlbflush first."""
    out = []
    if workload == "ebizzy":
        seen = set()
        for L in lengths:
            s = max(1, round(L))
            if s != L and L < 1:
                print(f"# ebizzy: {L} s skipped (seconds is a whole number >= 1)",
                      file=sys.stderr)
                continue
            if s in seen:
                continue
            seen.add(s)
            out.append((float(s), dict(base, seconds=str(s))))
        return out
    if workload == "pipetest":
        p = dict(base, loops="20000")
        _, v = runner.iteration(workload, p, 120)
        rate = 1e6 / v["usecs_per_op"]  # round trips per second
        print(f"# pipetest: calibration {rate:.0f} round trips/s", file=sys.stderr)
        return [(L, dict(base, loops=str(max(1000, round(L * rate))))) for L in lengths]
    # tlbflush
    p = dict(base, region_mb="64")
    _, v = runner.iteration(workload, p, 300)
    per_mb = v["flush_ms"] / 1e3 / 64
    cap = max(16, runner.mem_available_mb() // 16)  # two regions: an eighth of MemAvailable
    if smoke:
        cap = min(cap, 64)
    print(f"# tlbflush: calibration {per_mb * 1e3:.2f} ms of flushing per MiB; region cap "
          f"{cap} MiB", file=sys.stderr)
    seen = set()
    for L in lengths:
        mb = min(cap, max(4, round(L / per_mb)))
        if mb in seen:
            print(f"# tlbflush: {L} s skipped (region capped at {cap} MiB)", file=sys.stderr)
            continue
        seen.add(mb)
        out.append((L, dict(base, region_mb=str(mb))))
    return out


def fleet_overhead(bin_dir, jobs):
    """Seconds per job beyond `seconds` of an ebizzy run of `jobs` 1-s iterations through a local
    controller and agent: lease, child process, samples, completion, next lease."""
    import shutil
    import tempfile
    work = tempfile.mkdtemp(prefix="tlbfleet-iterlen.")
    procs = []
    try:
        ready = os.path.join(work, "ready")
        log = open(os.path.join(work, "controller.log"), "w")
        procs.append(subprocess.Popen(
            [os.path.join(bin_dir, "tlbfleet-controller"), "--grpc-listen", "127.0.0.1:0",
             "--http-listen", "127.0.0.1:0", "--db", os.path.join(work, "fleet.db"),
             "--ready-file", ready], stdout=log, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + 30
        while not (os.path.exists(ready) and os.path.getsize(ready) > 0):
            if time.monotonic() > deadline:
                die("--fleet-jobs: the controller did not start (see its log)")
            time.sleep(0.1)
        port = json.load(open(ready))["grpc_port"]
        env = dict(os.environ, TLBFLEET_CONTROLLER=f"127.0.0.1:{port}")
        alog = open(os.path.join(work, "agent.log"), "w")
        procs.append(subprocess.Popen(
            [os.path.join(bin_dir, "tlbfleet-agent"), "--controller", f"127.0.0.1:{port}",
             "--state-dir", os.path.join(work, "agent")], stdout=alog, stderr=subprocess.STDOUT))
        cli = os.path.join(bin_dir, "tlbfleet")
        deadline = time.monotonic() + 30
        while '"connected": true' not in subprocess.run(
                [cli, "hosts", "--format", "json"], env=env, capture_output=True,
                text=True).stdout:
            if time.monotonic() > deadline:
                die("--fleet-jobs: the agent did not connect")
            time.sleep(0.1)
        spec = os.path.join(work, "spec.yaml")
        with open(spec, "w") as f:
            f.write(f"name: iteration-length-overhead\nbenchmark: ebizzy\n"
                    f"params: {{seconds: 1, threads: 2}}\niterations: {jobs}\n"
                    f"arms: [{{name: only}}]\n")
        start = time.monotonic()
        out = subprocess.run([cli, "submit", spec], env=env, capture_output=True, text=True)
        if out.returncode != 0:
            die(f"--fleet-jobs: submit: {out.stderr.strip()}")
        run_id = out.stdout.strip().splitlines()[-1]
        waited = subprocess.run([cli, "wait", run_id, "--quiet", "--interval", "0.05",
                                 "--timeout", str(jobs * 5 + 60)], env=env)
        elapsed = time.monotonic() - start
        if waited.returncode != 0:
            die(f"--fleet-jobs: run {run_id} did not succeed (logs in {work})")
        return elapsed / jobs - 1.0
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)


def lag1(xs):
    n = len(xs)
    if n < 3:
        return float("nan")
    m = statistics.fmean(xs)
    den = sum((x - m) ** 2 for x in xs)
    if den == 0:
        return 0.0
    return sum((xs[i] - m) * (xs[i + 1] - m) for i in range(n - 1)) / den


def summarise(blocks):
    """Pooled within-block figures of one length. blocks: lists of (wall, measured, value)."""
    values = [v for b in blocks for (_, _, v) in b]
    walls = [w for b in blocks for (w, _, _) in b]
    measured = [s for b in blocks for (_, s, _) in b]
    ss, dof, r_num, r_den = 0.0, 0, 0.0, 0.0
    for b in blocks:
        xs = [v for (_, _, v) in b]
        if len(xs) < 2:
            continue
        m = statistics.fmean(xs)
        ss += sum((x - m) ** 2 for x in xs)
        dof += len(xs) - 1
        if len(xs) >= 3:
            r_num += sum((xs[i] - m) * (xs[i + 1] - m) for i in range(len(xs) - 1))
            r_den += sum((x - m) ** 2 for x in xs)
    # A robust CoV beside it (1.4826 MAD / median, pooled over blocks by their medians): one
    # iteration starved by a busy host moves the CoV a lot and this little.
    devs = []
    for b in blocks:
        xs = [v for (_, _, v) in b]
        med = statistics.median(xs)
        devs += [abs(x - med) / abs(med) for x in xs if med]
    rcov = 1.4826 * statistics.median(devs) if devs else float("nan")
    mean = statistics.fmean(values)
    cov = math.sqrt(ss / dof) / abs(mean) if dof > 0 and mean else float("nan")
    r1 = r_num / r_den if r_den > 0 else float("nan")
    wall = statistics.fmean(walls)
    meas = statistics.fmean(measured)
    r = min(0.95, max(0.0, r1)) if not math.isnan(r1) else 0.0
    rse1 = cov * math.sqrt(wall * (1 + r) / (1 - r))
    return {"n": len(values), "mean": mean, "cov": cov, "robust_cov": rcov, "r1": r1, "wall": wall,
            "measured": meas, "startup": wall - meas, "rse_1s": rse1,
            "seconds_for_1pct": (rse1 / 0.01) ** 2}


def fit(rows):
    """Least squares of CoV^2 = A/L + B and wall = (1 + c1) L + c0 over the rows."""
    pts = [(r["measured"], r["cov"] ** 2, r["wall"]) for r in rows
           if r["measured"] > 0 and not math.isnan(r["cov"])]
    if len(pts) < 2:
        return None
    xs = [1 / L for (L, _, _) in pts]
    ys = [y for (_, y, _) in pts]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    A = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx > 0 else 0.0
    B = my - A * mx
    if A < 0:  # noise does not fall with length: all floor
        A, B = 0.0, my
    if B < 0:  # no floor: the model is A / L through the origin
        A, B = sum(x * y for x, y in zip(xs, ys)) / sum(x * x for x in xs), 0.0
    Ls = [L for (L, _, _) in pts]
    ws = [w for (_, _, w) in pts]
    mL, mw = statistics.fmean(Ls), statistics.fmean(ws)
    sLL = sum((L - mL) ** 2 for L in Ls)
    slope = sum((L - mL) * (w - mw) for L, w in zip(Ls, ws)) / sLL if sLL > 0 else 1.0
    c1 = max(0.0, slope - 1)
    c0 = max(0.0, mw - (1 + c1) * mL)
    best = math.inf if B == 0 else math.sqrt(A * c0 / (B * (1 + c1)))
    rho = fit_rho(rows)
    return {"A": A, "B": B, "c0": c0, "c1": c1, "rho": rho, "best_length": best,
            "best_length_with_rho": best_length(A, B, c0, c1, rho, max(Ls)),
            "cov_floor": math.sqrt(B), "cov_at_1s": math.sqrt(A + B)}


def fit_rho(rows):
    """rho of r(L) = rho^L: least squares over the lengths, each weighted by its n.

    A drift of the host that outlasts an iteration correlates consecutive iterations, the
    shorter the more; rho is that of consecutive seconds. Negative r1 pull rho towards 0; it
    is never fitted below 0 (the controller's model never claims better than independence)."""
    pts = [(r["measured"], r["r1"], r["n"]) for r in rows
           if r["measured"] > 0 and not math.isnan(r["r1"])]
    if not pts:
        return 0.0
    grid = [i / 100 for i in range(96)]
    return min(grid, key=lambda rho: sum(n * (r1 - rho ** L) ** 2 for (L, r1, n) in pts))


def variance_per_machine_second(A, B, c0, c1, rho, L):
    """V(L) of controller/scheduler/iteration_length.h, autocorrelation included."""
    r = min(0.95, max(0.0, rho ** L))
    return (A / L + B) * ((1 + c1) * L + c0) * (1 + r) / (1 - r)


def best_length(A, B, c0, c1, rho, longest):
    """The length with the smallest V among tenths of a second up to twice the longest."""
    grid = [i / 10 for i in range(1, int(20 * max(longest, 1)) + 1)]
    return min(grid, key=lambda L: variance_per_machine_second(A, B, c0, c1, rho, L))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--agent", default=os.path.join(REPO, "build", "bin", "tlbfleet-agent"))
    ap.add_argument("--prefix", default="",
                    help="command prefix for every iteration, e.g. 'taskset -c 0-1'")
    ap.add_argument("--workloads", default="ebizzy,tlbflush,pipetest")
    ap.add_argument("--lengths", default="0.25,0.5,1,2,5,10", help="target seconds, comma list")
    ap.add_argument("--budget", type=float, default=480,
                    help="seconds of iterations in all (default 480: about 10 min with "
                    "calibration and overruns)")
    ap.add_argument("--long", action="store_true", help="budget 3600 s and 3 rounds")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--min-iterations", type=int, default=4, help="per block")
    ap.add_argument("--set", action="append", default=[],
                    help="WORKLOAD:name=value, a parameter of every iteration of WORKLOAD")
    ap.add_argument("--fleet-jobs", type=int, default=20,
                    help="also time this many 1-s ebizzy jobs through a local controller and "
                    "agent (tlbfleet-controller and tlbfleet beside --agent), for the start-up "
                    "a run sees per job; 0: skip")
    ap.add_argument("--lab-guest", type=int, default=0,
                    help="run inside microVM lab guest vmN (deploy/vm-lab/lab exec N), its "
                    "own tlbfleet-agent; the lab must be up (docs/vm-lab.md)")
    ap.add_argument("--lab-out", default="", help="the lab directory (lab --out)")
    ap.add_argument("--json", help="write every iteration and the tables to this file")
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args()

    workloads = [w for w in args.workloads.split(",") if w]
    for w in workloads:
        if w not in PRIMARY:
            die(f"--workloads: {w}: not one of {', '.join(PRIMARY)}")
    lengths = [float(x) for x in args.lengths.split(",") if x]
    if any(L <= 0 for L in lengths):
        die("--lengths: every length must be > 0")
    budget, rounds, min_it = args.budget, args.rounds, args.min_iterations
    if args.long:
        budget, rounds = 3600, max(rounds, 3)
    if args.smoke:
        lengths, budget, rounds, min_it = [0.05, 1], 1, 1, 3
        args.fleet_jobs = min(args.fleet_jobs, 2)
    params = {w: dict(DEFAULT_PARAMS[w]) for w in workloads}
    for s in args.set:
        w, _, kv = s.partition(":")
        k, eq, v = kv.partition("=")
        if w not in params or not eq or not k:
            die(f"--set: expected WORKLOAD:name=value for one of {', '.join(workloads)}, "
                f"got {s!r}")
        params[w][k] = v
    if args.lab_guest:
        runner = GuestRunner(os.path.join(REPO, "deploy", "vm-lab", "lab"), args.lab_guest,
                             args.lab_out)
        args.fleet_jobs = 0
    else:
        if not os.access(args.agent, os.X_OK):
            die(f"--agent: {args.agent} is not an executable (build tlbfleet-agent first)")
        runner = Runner(args.agent, args.prefix.split())

    started = time.monotonic()
    report = {"host": os.uname().nodename, "kernel": os.uname().release,
              "loadavg_start": os.getloadavg()[0], "workloads": {}}
    for w in workloads:
        plan = length_params(runner, w, params[w], lengths, args.smoke)
        share = budget / len(workloads) / len(plan) / rounds
        blocks = {i: [] for i in range(len(plan))}
        probe = {}
        for rnd in range(rounds):
            order = range(len(plan)) if rnd % 2 == 0 else reversed(range(len(plan)))
            for i in order:
                _, p = plan[i]
                block, t0 = [], time.monotonic()
                if args.lab_guest:
                    # One exec per block: as many iterations as the share holds, by the
                    # wall time of the one before (a probe the first time).
                    if i not in probe:
                        probe[i] = runner.iteration(w, p, 600)[0]
                    n = max(min_it, int(share / max(probe[i], 1e-3)))
                    for wall, values in runner.block(w, p, n, n * probe[i] * 3 + 120):
                        block.append((wall, measured_seconds(w, p, values), values[PRIMARY[w]]))
                while len(block) < min_it or time.monotonic() - t0 < share:
                    wall, values = runner.iteration(w, p, 600)
                    block.append((wall, measured_seconds(w, p, values), values[PRIMARY[w]]))
                blocks[i].append(block)
        rows = []
        for i, (target, p) in enumerate(plan):
            row = summarise(blocks[i])
            row["target"] = target
            row["params"] = p
            row["raw"] = [[list(x) for x in b] for b in blocks[i]]
            rows.append(row)
        report["workloads"][w] = {"metric": PRIMARY[w], "rows": rows, "model": fit(rows)}
        print_table(w, rows, report["workloads"][w]["model"])
        sys.stdout.flush()
    if args.fleet_jobs > 0:
        per_job = fleet_overhead(os.path.dirname(os.path.abspath(args.agent)), args.fleet_jobs)
        report["fleet_seconds_per_job"] = per_job
        print(f"\nfleet: {args.fleet_jobs} ebizzy jobs of 1 s through a local controller and "
              f"agent took {per_job:.3f} s each beyond their 1 s (start-up as a run sees it: "
              f"lease, child process, samples, next lease)")
        model = report["workloads"].get("ebizzy", {}).get("model")
        if model:
            best = best_length(model["A"], model["B"], per_job, model["c1"], model["rho"],
                               max(r["measured"] for r in report["workloads"]["ebizzy"]["rows"]))
            print(f"ebizzy with c0 = {per_job:.3f} s (the fleet's) and r1 = "
                  f"{model['rho']:.2f}^L: best length {best:.1f} s")
    report["elapsed_seconds"] = time.monotonic() - started
    report["loadavg_end"] = os.getloadavg()[0]
    print(f"\n# {report['elapsed_seconds']:.0f} s in all; load average "
          f"{report['loadavg_start']:.2f} at the start, {report['loadavg_end']:.2f} at the end "
          f"({os.cpu_count()} CPUs): figures under load are noisier than on a quiet machine")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


def print_table(w, rows, model):
    knob = {"ebizzy": "seconds", "pipetest": "loops", "tlbflush": "region_mb"}[w]
    print(f"\n{w} ({PRIMARY[w]}; length set by {knob})")
    print(f"{'target':>7} {knob:>10} {'n':>4} {'measured':>9} {'wall':>8} {'startup':>8} "
          f"{'CoV':>7} {'rCoV':>7} {'r1':>6} {'rse@1s':>7} {'t(1%)':>8}")
    for r in rows:
        print(f"{r['target']:>6.2f}s {r['params'][knob]:>10} {r['n']:>4} "
              f"{r['measured']:>8.3f}s {r['wall']:>7.3f}s {r['startup']:>7.3f}s "
              f"{100 * r['cov']:>6.2f}% {100 * r['robust_cov']:>6.2f}% {r['r1']:>6.2f} "
              f"{100 * r['rse_1s']:>6.2f}% "
              f"{r['seconds_for_1pct']:>7.1f}s")
    if model is None:
        print("model: too few lengths to fit")
        return
    best = model["best_length"]
    print(f"model: CoV^2 = {model['A']:.3g}/L + {model['B']:.3g} (CoV at 1 s "
          f"{100 * model['cov_at_1s']:.2f} %, floor {100 * model['cov_floor']:.2f} %); "
          f"wall = {1 + model['c1']:.3f} L + {model['c0']:.3f} s; r1 = {model['rho']:.2f}^L; "
          "best length without autocorrelation "
          + ("unbounded (no floor: longer is always better)" if math.isinf(best)
             else f"{best:.2f} s")
          + f", with it {model['best_length_with_rho']:.1f} s")


if __name__ == "__main__":
    main()
