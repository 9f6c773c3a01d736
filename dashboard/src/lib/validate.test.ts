import { describe, expect, it } from "vitest";
import { emptyForm, type RunForm } from "./runform";
import { MONITORS, WORKLOADS } from "./testdata/workloads";
import {
  checkParam,
  parseDurationSeconds,
  parseTargetCi,
  placeServerError,
  validateForm,
} from "./validate";

function valid(): RunForm {
  const f = emptyForm("ebizzy");
  f.name = "ebizzy-mmap-vs-malloc";
  f.params = { seconds: "1" };
  f.sweep = { ...f.sweep, mode: "values", param: "threads", values: "1, 2" };
  f.arms = [
    { name: "mmap", ceiling: "", params: { mmap: "always" } },
    { name: "malloc", ceiling: "", params: { mmap: "never" } },
  ];
  return f;
}

describe("validateForm", () => {
  it("accepts the quickstart's spec", () => {
    expect(validateForm(valid(), WORKLOADS, MONITORS)).toEqual({});
  });

  it("refuses a parameter out of its bounds with the server's field and words", () => {
    const f = valid();
    f.arms[0]!.params.seconds = "0";
    expect(validateForm(f, WORKLOADS, MONITORS)).toEqual({
      "arms[0].params.seconds": 'must be an integer in [1, 3600], got "0"',
    });
  });

  it("knows the monitors the server's catalogue lists, and only those", () => {
    const f = valid();
    f.monitors = ["vmstat", "flush_profile"];
    expect(validateForm(f, WORKLOADS, MONITORS)).toEqual({});
    f.monitors = ["vmstat", "pmu"];
    expect(validateForm(f, WORKLOADS, MONITORS)).toEqual({
      monitors: 'unknown monitor "pmu" (known: flush_profile, interrupts, vmstat, perf)',
    });
    // A server whose catalogue has no vmstat refuses it too: nothing is hard-coded here.
    f.monitors = ["vmstat"];
    expect(validateForm(f, WORKLOADS, MONITORS.slice(0, 1)).monitors).toMatch(
      /\(known: flush_profile\)$/,
    );
  });

  it("checks enums, booleans in every spelling, and unknown parameters", () => {
    const f = valid();
    f.params = { mmap: "sometimes", random_size: "yes", colour: "red" };
    const e = validateForm(f, WORKLOADS, MONITORS);
    expect(e["params.mmap"]).toBe('must be one of always|never, got "sometimes"');
    expect(e["params.random_size"]).toBeUndefined();
    expect(e["params.colour"]).toMatch(/^unknown parameter for ebizzy \(known: threads, seconds/);
  });

  it("finds sweep values out of bounds and repeats in another spelling", () => {
    const f = valid();
    f.sweep.values = "1, 01, 0";
    const e = validateForm(f, WORKLOADS, MONITORS);
    expect(e["sweep.threads[1]"]).toBe('"01" repeats an earlier value');
    expect(e["sweep.threads[2]"]).toBe('must be an integer in [1, 4096], got "0"');
  });

  it("accepts ncpus expressions as sweep bounds and refuses other names", () => {
    const f = valid();
    f.sweep = { ...f.sweep, mode: "policy", policy: "fib", min: "ncpus/2", max: "2*ncpus" };
    expect(validateForm(f, WORKLOADS, MONITORS)).toEqual({});
    f.sweep.max = "2*cpus";
    expect(validateForm(f, WORKLOADS, MONITORS)["sweep.threads.max"]).toMatch(
      /expression of ncpus/,
    );
  });

  it("refuses a swept parameter that is also fixed", () => {
    const f = valid();
    f.arms[1]!.params.threads = "4";
    expect(validateForm(f, WORKLOADS, MONITORS)["arms[1].params.threads"]).toMatch(/is swept/);
  });

  it("checks arm names, duplicates and ceilings", () => {
    const f = valid();
    f.arms[1]!.name = "mmap";
    f.arms[0]!.ceiling = "-1";
    const e = validateForm(f, WORKLOADS, MONITORS);
    expect(e["arms[1].name"]).toBe('duplicate arm name "mmap"');
    expect(e["arms[0].ceiling"]).toBe(
      'must be "default" or an integer in [0, 2147483647], got "-1"',
    );
    f.arms[0]!.ceiling = "default";
    f.arms[1]!.ceiling = "2147483647";
    f.arms[1]!.name = "big";
    expect(validateForm(f, WORKLOADS, MONITORS)).toEqual({});
  });

  it("checks iterations, boots and adaptive runs", () => {
    const f = valid();
    f.iterations.count = "three";
    f.boots.count = "0";
    let e = validateForm(f, WORKLOADS, MONITORS);
    expect(e.iterations).toBe('must be an integer in [1, 100000], got "three"');
    expect(e.boots).toBe('must be an integer in [1, 1000], got "0"');
    f.iterations = { adaptive: true, count: "", min: "5", max: "3" };
    f.boots.count = "1";
    f.targetCi = "60%";
    e = validateForm(f, WORKLOADS, MONITORS);
    expect(e["iterations.min"]).toBe("must be between 1 and max (3), got 5");
    expect(e["iterations.target_ci"]).toMatch(/between 0.0001% and 50%/);
    f.arms.pop();
    f.iterations.min = "2";
    f.targetCi = "1%";
    expect(validateForm(f, WORKLOADS, MONITORS).iterations).toMatch(/at least two arms/);
  });

  it("checks host selectors and the run name", () => {
    const f = valid();
    f.name = "has space";
    f.hosts = { ...f.hosts, count: "0", minDtlbEntries: "70000" };
    const e = validateForm(f, WORKLOADS, MONITORS);
    expect(e.name).toMatch(/A-Z a-z 0-9/);
    expect(e["hosts.count"]).toBe('must be an integer in [1, 1000], got "0"');
    expect(e["hosts.min_dtlb_entries"]).toBe('must be an integer in [1, 65536], got "70000"');
  });

  it("cannot check a string parameter: only the server can", () => {
    const f = valid();
    f.benchmark = "netperf";
    f.sweep.mode = "none";
    f.arms = [{ name: "a", ceiling: "", params: {} }];
    f.params = { server: "192.0.2.1" };
    expect(validateForm(f, WORKLOADS, MONITORS)).toEqual({});
  });
});

describe("on_host_lost", () => {
  const check = (action: string, after: string) => {
    const f = valid();
    f.onHostLost = { action, after };
    return validateForm(f, WORKLOADS, MONITORS);
  };
  it("accepts each action, with or without a bound", () => {
    for (const action of ["wait", "fail", "restart"]) expect(check(action, "")).toEqual({});
    expect(check("fail", "20s")).toEqual({});
    expect(check("restart", "1h30m")).toEqual({});
    expect(check("restart", "604800")).toEqual({});
    expect(check("", "")).toEqual({}); // not in the spec
  });
  it("refuses what the server refuses, with its field and words", () => {
    expect(check("retry", "")).toEqual({
      "on_host_lost.action": 'unknown action "retry" (known: wait, fail, restart)',
    });
    expect(check("", "30m")).toEqual({ "on_host_lost.action": "required" });
    expect(check("fail", "soon")).toEqual({
      "on_host_lost.after": 'expected a duration such as 30m, 2h or 90s, got "soon"',
    });
    for (const after of ["0", "500ms", "169h", "604801"]) {
      expect(check("fail", after)).toEqual({
        "on_host_lost.after": `must be at least 1 s and at most 7 days (168h), got "${after}"`,
      });
    }
  });
  it("reads durations as absl::ParseDuration does", () => {
    expect(parseDurationSeconds("30m")).toBe(1800);
    expect(parseDurationSeconds("1h30m")).toBe(5400);
    expect(parseDurationSeconds("1.5h")).toBe(5400);
    expect(parseDurationSeconds("90")).toBe(90);
    expect(parseDurationSeconds("-2s")).toBe(-2);
    expect(parseDurationSeconds("1500ms")).toBe(1.5);
    expect(parseDurationSeconds("30 m")).toBeUndefined();
    expect(parseDurationSeconds("m")).toBeUndefined();
    expect(parseDurationSeconds("1d")).toBeUndefined();
  });
});

describe("checkParam and parseTargetCi", () => {
  it("reads the schema's bounds as int64", () => {
    const threads = WORKLOADS[0]!.parameters[0]!;
    expect(checkParam(threads, "4096")).toBeUndefined();
    expect(checkParam(threads, "99999999999999999999")).toMatch(/must be an integer/);
    expect(checkParam(threads, "+3")).toMatch(/must be an integer/);
  });
  it("takes 1% or 0.01", () => {
    expect(parseTargetCi("1%")).toBeCloseTo(0.01);
    expect(parseTargetCi("0.01")).toBeCloseTo(0.01);
    expect(parseTargetCi("0")).toMatch(/between/);
    expect(parseTargetCi("one")).toMatch(/expected/);
  });
});

describe("placeServerError", () => {
  const shown = new Set([
    "name",
    "params.threads",
    "sweep.threads",
    "arms[0].params",
    "arms[0].name",
  ]);
  it("puts the message at the field the form shows, without the repeated path", () => {
    expect(
      placeServerError("arms[0].params.server", "arms[0].params.server: not loopback", shown),
    ).toEqual({
      field: "arms[0].params",
      message: "not loopback",
    });
    expect(placeServerError("sweep.threads[3]", "sweep.threads[3]: bad", shown).field).toBe(
      "sweep.threads",
    );
  });
  it("keeps the path in the message when the form has no such field", () => {
    expect(placeServerError("preset", "unknown preset", shown)).toEqual({
      message: "preset: unknown preset",
    });
    expect(placeServerError(undefined, "boom", shown)).toEqual({ message: "boom" });
  });
});
