import { describe, expect, it } from "vitest";
import YAML from "yaml";
import { cliCommand, emptyForm, formToSpec, formToYaml, yamlToForm, type RunForm } from "./runform";

function sample(): RunForm {
  const f = emptyForm("ebizzy");
  f.name = "ceiling-1-vs-33";
  f.params = { seconds: "10", mmap: "always" };
  f.sweep = {
    mode: "policy",
    param: "threads",
    values: "",
    policy: "pow2",
    min: "1",
    max: "2*ncpus",
  };
  f.iterations = { adaptive: false, count: "5", min: "3", max: "30" };
  f.arms = [
    { name: "default", ceiling: "default", params: {} },
    { name: "ceiling-1", ceiling: "1", params: { random_size: "yes" } },
  ];
  f.hosts = {
    ...f.hosts,
    count: "2",
    labels: "lab=tlb, rack=a",
    microarch: "ivybridge",
    pcid: "true",
  };
  f.monitors = ["flush_profile"];
  return f;
}

describe("form -> YAML", () => {
  it("writes the spec the docs show, integers plain and strings as written", () => {
    const spec = YAML.parse(formToYaml(sample()));
    expect(spec).toEqual({
      name: "ceiling-1-vs-33",
      benchmark: "ebizzy",
      params: { seconds: 10, mmap: "always" },
      sweep: { threads: { policy: "pow2", min: 1, max: "2*ncpus" } },
      iterations: 5,
      arms: [
        { name: "default", ceiling: "default" },
        { name: "ceiling-1", ceiling: 1, params: { random_size: "yes" } },
      ],
      hosts: { count: 2, labels: { lab: "tlb", rack: "a" }, microarch: ["ivybridge"], pcid: true },
      monitors: ["flush_profile"],
    });
  });

  it("writes small maps in flow style, one arm per line", () => {
    const text = formToYaml(sample());
    expect(text).toContain("params: { seconds: 10, mmap: always }");
    expect(text).toContain("  - { name: default, ceiling: default }");
  });

  it("writes adaptive levels with the one target, and leaves out boots: 1", () => {
    const f = sample();
    expect(formToSpec(f).boots).toBeUndefined();
    f.iterations = { adaptive: true, count: "", min: "3", max: "30" };
    f.boots = { adaptive: true, count: "", min: "2", max: "6" };
    f.targetCi = "1%";
    const spec = formToSpec(f);
    expect(spec.iterations).toEqual({ min: 3, max: 30, target_ci: "1%" });
    expect(spec.boots).toEqual({ min: 2, max: 6, target_ci: "1%" });
  });

  it("keeps what a person typed that is not a plain integer as a string", () => {
    const f = emptyForm("ebizzy");
    f.params = { threads: "007", seconds: "  ", mmap: "never" };
    expect(formToSpec(f).params).toEqual({ threads: "007", mmap: "never" });
  });
});

describe("on_host_lost", () => {
  it("is left out until an action or a bound is given, then written as a flow map", () => {
    const f = sample();
    expect(formToSpec(f).on_host_lost).toBeUndefined();
    f.onHostLost = { action: "fail", after: "20s" };
    expect(formToSpec(f).on_host_lost).toEqual({ action: "fail", after: "20s" });
    expect(formToYaml(f)).toContain("on_host_lost: { action: fail, after: 20s }");
    f.onHostLost = { action: "wait", after: "" };
    expect(formToSpec(f).on_host_lost).toEqual({ action: "wait" });
    f.onHostLost = { action: "", after: "90" }; // the server says the action is required
    expect(formToSpec(f).on_host_lost).toEqual({ after: 90 });
  });

  it("round-trips, and says which of its keys the form cannot show", () => {
    const f = sample();
    f.onHostLost = { action: "restart", after: "1h30m" };
    const back = yamlToForm(formToYaml(f));
    expect(back.unsupported).toEqual([]);
    expect(back.form).toEqual(f);
    const odd = yamlToForm(
      "name: x\nbenchmark: ebizzy\narms: [{name: a}]\non_host_lost: {action: wait, after: 300, when: now}\n",
    );
    expect(odd.form?.onHostLost).toEqual({ action: "wait", after: "300" });
    expect(odd.unsupported).toEqual(["on_host_lost.when"]);
    expect(yamlToForm("name: x\non_host_lost: wait\n").unsupported).toEqual(["on_host_lost"]);
  });
});

describe("YAML -> form", () => {
  it("round-trips every field the form has", () => {
    const form = sample();
    const back = yamlToForm(formToYaml(form));
    expect(back.error).toBeUndefined();
    expect(back.unsupported).toEqual([]);
    expect(back.form).toEqual(form);
  });

  it("reads the docs' examples (explicit sweep list, capped list, per-iteration policy)", () => {
    const r = yamlToForm(`name: tlbflush-entries
benchmark: tlbflush
params: {entries: {policy: mmtests, max: 512}}
sweep: {groups: {values: [1, 3, 8, 13], max: ncpus}}
iterations: 16
arms:
  - {name: default, ceiling: default}
  - {name: ceiling-1, ceiling: 1}
`);
    expect(r.unsupported).toEqual([]);
    expect(r.form?.policies).toEqual({ entries: "512" });
    expect(r.form?.sweep).toMatchObject({
      mode: "values",
      param: "groups",
      values: "1, 3, 8, 13",
      max: "ncpus",
    });
    expect(r.form?.iterations).toMatchObject({ adaptive: false, count: "16" });
    expect(r.form?.arms.map((a) => a.ceiling)).toEqual(["default", "1"]);
  });

  it("says which fields the form cannot show, and still reads the rest", () => {
    const r = yamlToForm(`name: x
benchmark: ebizzy
preset: tlbflush-performance/ebizzy
arms:
  - {name: a, param_policies: {x: 1}}
`);
    expect(r.unsupported).toEqual(["preset", "arms[0].param_policies"]);
    expect(r.form?.arms[0]?.name).toBe("a");
  });

  it("reports a syntax error with its line and column, and a key given twice", () => {
    const r = yamlToForm("name: x\narms: [{name: a}\n");
    expect(r.form).toBeUndefined();
    expect(r.error?.line).toBeGreaterThanOrEqual(2);
    expect(yamlToForm("name: a\nname: b\n").error?.message).toMatch(/unique/i);
  });

  it("refuses a document that is not a map", () => {
    expect(yamlToForm("- a\n- b\n").error?.message).toMatch(/map/);
  });
});

describe("cliCommand", () => {
  it("feeds the YAML to tlbfleet submit - through a quoted heredoc", () => {
    expect(cliCommand("name: x\n")).toBe(
      "tlbfleet submit - <<'TLBFLEET_SPEC'\nname: x\nTLBFLEET_SPEC\n",
    );
  });
  it("picks another delimiter if the spec contains it", () => {
    const cmd = cliCommand("a: 1\nTLBFLEET_SPEC\n");
    expect(cmd.split("\n").at(-2)).toBe("TLBFLEET_SPEC_");
  });
});

describe("YAML errors", () => {
  it("give the position once, as numbers, not inside the message", () => {
    const r = yamlToForm("name: x\narms: [{name: a}\n");
    expect(r.error?.message).not.toMatch(/line \d/);
    expect(r.error).toMatchObject({ line: 3, column: 1 });
  });
});
