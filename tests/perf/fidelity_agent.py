#!/usr/bin/env python3
"""Fidelity of tlbfleet's workloads, measured through the path the fleet uses.

    tests/perf/fidelity_agent.py [--agent build/bin/tlbfleet-agent] [--pairs 9]
                                 [--seconds 10] [--only REGEX] [--smoke]

Each row runs one of our workloads (A) exactly as an agent runs a job -- `tlbfleet-agent
run-workload <name> --json --set k=v ...`, the child process the agent forks -- next to the
classic tool (B) with equivalent parameters, alternating A B A B for --pairs pairs so that
drift on the host hits both alike. It prints, per row, the medians of A and B and the
geometric mean of the per-pair ratios A/B with its 95 % confidence interval (a percentile
bootstrap over the pairs, 10,000 resamples, fixed seed), and every raw value on stderr.

Classic tools: ebizzy 0.3 and Alex Shi's munmap.c are packaged by nobody, so the harness
compiles reference builds written for this project from their published behaviour
(tests/perf/reference/*.c; each file says what it keeps and which single fix it applies,
the same fix tlbfleet applies). hackbench (rt-tests), `perf bench sched pipe` (linux-perf)
and iperf3 come from Debian; a row whose tool is missing is skipped, saying so.

A benchmark, not a test: it never fails on a ratio. It fails (exit 1) only when a tool
cannot be built or run, or its output cannot be read. --smoke runs every row once with tiny
parameters, to check that the harness itself works (CTest, label perf).
"""

import argparse
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def die(message):
    print(f"fidelity_agent.py: {message}", file=sys.stderr)
    sys.exit(1)


def run(argv, timeout):
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        die(f"{' '.join(argv)}: {e}")
    if done.returncode != 0:
        die(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return done.stdout


# --- extractors: each returns one number from a tool's stdout -----------------------------


def agent_metric(metric):
    """The aggregate (no series) value of `metric` in run-workload's JSON lines."""

    def get(out):
        for line in out.splitlines():
            if not line.strip():
                continue
            m = json.loads(line)
            if m.get("metric") == metric and not m.get("series"):
                return float(m["value"])
        raise ValueError(f"no {metric} in {out[:300]!r}")

    return get


def regex(pattern, group=1):
    def get(out):
        m = re.search(pattern, out, re.M)
        if not m:
            raise ValueError(f"{pattern!r} not in {out[:300]!r}")
        return float(m.group(group))

    return get


def iperf3_mbit(out):
    return json.loads(out)["end"]["sum_received"]["bits_per_second"] / 1e6


# --- statistics --------------------------------------------------------------------------


def geomean_ci(ratios, resamples=10000, seed=1):
    """Geometric mean of the ratios and a 95 % percentile-bootstrap interval."""
    logs = [math.log(r) for r in ratios]
    point = math.exp(statistics.fmean(logs))
    if len(logs) < 2:
        return point, float("nan"), float("nan")
    rng = random.Random(seed)
    means = sorted(
        statistics.fmean(rng.choices(logs, k=len(logs))) for _ in range(resamples)
    )
    lo = means[int(0.025 * resamples)]
    hi = means[int(0.975 * resamples) - 1]
    return point, math.exp(lo), math.exp(hi)


# --- the rows ----------------------------------------------------------------------------


def rows(args, refs):
    agent = [args.agent, "run-workload"]
    s = 1 if args.smoke else args.seconds
    tiny = args.smoke
    iperf_port = args.iperf_port
    return [
        # name, unit, A argv, A extractor, B argv, B extractor, B needs
        ("ebizzy -m -t 2 vs ebizzy 0.3 (reference build)", "records/s",
         agent + ["ebizzy", "--json", "--set", "threads=2", "--set", f"seconds={s}",
                  "--set", "mmap=always"], agent_metric("records_per_sec"),
         [refs["ebizzy"], "-m", "-t", "2", "-S", str(s)], regex(r"^(\d+) records/s"), None),
        ("ebizzy -t 2 (malloc, mmtests' path) vs ebizzy 0.3 (reference build)", "records/s",
         agent + ["ebizzy", "--json", "--set", "threads=2", "--set", f"seconds={s}",
                  "--set", "mmap=auto"], agent_metric("records_per_sec"),
         [refs["ebizzy"], "-t", "2", "-S", str(s)], regex(r"^(\d+) records/s"), None),
        # munmap.c prints the cost per access as a whole number of ns (1 to 5 here): the
        # accesses per thread per ms (its reciprocal, x 10^6) carry the same figure with
        # five digits.
        ("tlbflush -t 2 -n 8 vs munmap.c (reference build): accesses", "accesses/thread/ms",
         agent + ["tlbflush", "--json", "--set", "threads=2", "--set", "entries=8"]
         + (["--set", "region_mb=8"] if tiny else []), agent_metric("accesses_per_thread_ms"),
         [refs["munmap_small" if tiny else "munmap"], "-t", "2", "-n", "8"],
         regex(r"uses (\d+) times/thread/ms"), None),
        # munmap.c prints the cost per access as a whole number of ns (1 to 5 here): the
        # accesses per thread per ms (its reciprocal, x 10^6) carry the same figure with
        # five digits.
        ("tlbflush -t 2 -n 64 vs munmap.c (reference build): accesses", "accesses/thread/ms",
         agent + ["tlbflush", "--json", "--set", "threads=2", "--set", "entries=64"]
         + (["--set", "region_mb=8"] if tiny else []), agent_metric("accesses_per_thread_ms"),
         [refs["munmap_small" if tiny else "munmap"], "-t", "2", "-n", "64"],
         regex(r"uses (\d+) times/thread/ms"), None),
        ("tlbflush -t 2 -n 8 vs munmap.c (reference build): time per munmap", "ns/flush",
         agent + ["tlbflush", "--json", "--set", "threads=2", "--set", "entries=8"]
         + (["--set", "region_mb=8"] if tiny else []), agent_metric("flush_ns"),
         [refs["munmap_small" if tiny else "munmap"], "-t", "2", "-n", "8"],
         regex(r"munmap use \d+ms (\d+)ns/time"), None),
        ("hackbench -g 4 -l 200 vs rt-tests hackbench", "s",
         agent + ["hackbench", "--json", "--set", "groups=4", "--set",
                  f"loops={20 if tiny else 200}"], agent_metric("time"),
         ["hackbench", "-g", "4", "-l", "20" if tiny else "200"], regex(r"^Time: ([0-9.]+)"),
         "hackbench"),
        # Both sides use pipes and threads (rt-tests' -p -T), as the table above compares.
        ("hackbench -p -T -g 4 -l 200 vs rt-tests hackbench -p -T", "s",
         agent + ["hackbench", "--json", "--set", "groups=4", "--set", "mode=threads", "--set",
                  "ipc=pipe", "--set", f"loops={20 if tiny else 200}"], agent_metric("time"),
         ["hackbench", "-p", "-T", "-g", "4", "-l", "20" if tiny else "200"],
         regex(r"^Time: ([0-9.]+)"), "hackbench"),
        ("pipetest -l 200000 vs perf bench sched pipe", "usecs/op",
         agent + ["pipetest", "--json", "--set", f"loops={2000 if tiny else 200000}"],
         agent_metric("usecs_per_op"),
         ["perf", "bench", "sched", "pipe", "-l", "2000" if tiny else "200000"],
         regex(r"^\s*([0-9.]+) usecs/op"), "perf"),
        ("netperf tcp_stream 128 KiB vs iperf3 loopback", "Mbit/s",
         agent + ["netperf", "--json", "--set", "test=tcp_stream", "--set", "message_size=131072",
                  "--set", f"seconds={s}"], agent_metric("mbit_per_sec"),
         ["iperf3", "-c", "127.0.0.1", "-p", str(iperf_port), "-t", str(s), "-J"], iperf3_mbit,
         "iperf3"),
    ]


def build_references(workdir):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        die("no C compiler (cc) to build the reference programs")
    out = {}
    for name, src, extra in [
        ("ebizzy", "ebizzy_ref.c", []),
        ("munmap", "munmap_ref.c", []),
        ("munmap_small", "munmap_ref.c", ["-DFILE_SIZE=(8L<<20)"]),
    ]:
        exe = os.path.join(workdir, name)
        run([cc, "-O2", "-pthread", *extra, "-o", exe, os.path.join(HERE, "reference", src)], 120)
        out[name] = exe
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--agent", default=os.path.join(REPO, "build", "bin", "tlbfleet-agent"))
    p.add_argument("--pairs", type=int, default=9)
    p.add_argument("--seconds", type=int, default=10, help="ebizzy and netperf run length")
    p.add_argument("--only", default=".", help="regular expression of row names to run")
    p.add_argument("--smoke", action="store_true", help="one pair of tiny runs per row")
    p.add_argument("--iperf-port", type=int, default=5399)
    args = p.parse_args()
    if args.smoke:
        args.pairs = 1
    if not os.access(args.agent, os.X_OK):
        die(f"no tlbfleet-agent at {args.agent} (build it, or pass --agent)")

    with tempfile.TemporaryDirectory(prefix="tlbfleet-fidelity-") as workdir:
        refs = build_references(workdir)
        iperf = None
        if shutil.which("iperf3") and re.search(args.only, "netperf"):
            iperf = subprocess.Popen(["iperf3", "-s", "-p", str(args.iperf_port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            report(args, refs)
        finally:
            if iperf is not None:
                iperf.terminate()
                iperf.wait()


def report(args, refs):
    print(f"# {args.pairs} pairs, A B A B; A = {args.agent} run-workload, B = classic tool")
    print("| comparison (A vs B) | unit | A median | B median | A/B (geometric mean of pairs) "
          "| 95 % CI |")
    print("| --- | --- | --- | --- | --- | --- |")
    timeout = 600
    for name, unit, a_argv, a_get, b_argv, b_get, needs in rows(args, refs):
        if not re.search(args.only, name):
            continue
        if needs is not None and shutil.which(needs) is None:
            print(f"| {name} | {unit} | - | - | skipped: `{needs}` not installed | |")
            continue
        a_vals, b_vals = [], []
        for _ in range(args.pairs):
            try:
                a_vals.append(a_get(run(a_argv, timeout)))
                b_vals.append(b_get(run(b_argv, timeout)))
            except ValueError as e:
                die(f"{name}: {e}")
        ratios = [a / b for a, b in zip(a_vals, b_vals) if a > 0 and b > 0]
        if not ratios:
            die(f"{name}: no usable pair (A {a_vals}, B {b_vals})")
        point, lo, hi = geomean_ci(ratios)
        ci = "-" if math.isnan(lo) else f"{lo:.3f} – {hi:.3f}"
        print(f"| {name} | {unit} | {statistics.median(a_vals):.4g} | "
              f"{statistics.median(b_vals):.4g} | {point:.3f} | {ci} |", flush=True)
        print(f"#   {name}\n#     A: {a_vals}\n#     B: {b_vals}", file=sys.stderr)


if __name__ == "__main__":
    main()
