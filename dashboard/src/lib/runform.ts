// The New-run form's model and its two-way mapping to the YAML run spec (docs/run-spec.md).
// The YAML is what gets submitted, exactly as the CLI submits a file, so the server applies
// the same validation and error messages. The form covers the common fields; a spec using
// something it cannot show (an arm's per-iteration policy, an unknown key) stays editable as
// YAML and is submitted as written (`unsupported` says what).
import YAML, { isMap, isSeq, type Node } from "yaml";

export type SweepMode = "none" | "values" | "policy";
export type SweepPolicy = "linear" | "pow2" | "fib" | "topology";

export interface ArmForm {
  name: string;
  /** "" (leave the host's ceiling alone), "default", or a page count. */
  ceiling: string;
  /** Overrides of the run's parameters; values as written. */
  params: Record<string, string>;
}

export interface LevelForm {
  adaptive: boolean;
  /** The fixed count when not adaptive. */
  count: string;
  min: string;
  max: string;
}

export interface RunForm {
  name: string;
  benchmark: string;
  /** Parameters common to every arm, as written. */
  params: Record<string, string>;
  /** Parameters drawn per iteration (`{policy: mmtests, max}`): name -> max. */
  policies: Record<string, string>;
  sweep: {
    mode: SweepMode;
    param: string;
    /** Comma-separated explicit values. */
    values: string;
    policy: SweepPolicy;
    /** Integers or expressions of ncpus; "" = the default. With `values`, max caps the list. */
    min: string;
    max: string;
  };
  iterations: LevelForm;
  boots: LevelForm;
  /** Adaptive target, e.g. "1%" or "0.01"; used when iterations or boots are adaptive. */
  targetCi: string;
  arms: ArmForm[];
  hosts: {
    count: string;
    /** "k=v, k=v" */
    labels: string;
    /** comma-separated */
    microarch: string;
    names: string;
    pcid: "" | "true" | "false";
    invpcid: "" | "true" | "false";
    minDtlbEntries: string;
    kernelRelease: string;
  };
  monitors: string[];
  jobTimeoutSeconds: string;
  /**
   * `on_host_lost: {action, after}`: what a slot whose host goes silent does. action "" = not
   * in the spec (the run's design decides); after as written ("30m", "2h", "90s", seconds).
   */
  onHostLost: { action: string; after: string };
}

/** The on_host_lost actions (scheduler/host_lost.h). */
export const HOST_LOST_ACTIONS = ["wait", "fail", "restart"] as const;

export function emptyForm(benchmark = ""): RunForm {
  return {
    name: "",
    benchmark,
    params: {},
    policies: {},
    sweep: { mode: "none", param: "", values: "", policy: "linear", min: "", max: "" },
    iterations: { adaptive: false, count: "3", min: "3", max: "30" },
    boots: { adaptive: false, count: "1", min: "2", max: "6" },
    targetCi: "1%",
    arms: [
      { name: "baseline", ceiling: "", params: {} },
      { name: "variant", ceiling: "", params: {} },
    ],
    hosts: {
      count: "1",
      labels: "",
      microarch: "",
      names: "",
      pcid: "",
      invpcid: "",
      minDtlbEntries: "",
      kernelRelease: "",
    },
    monitors: [],
    jobTimeoutSeconds: "",
    onHostLost: { action: "", after: "" },
  };
}

// --- form -> YAML --------------------------------------------------------------------------

/** A scalar as YAML should carry it: integers and booleans plain, anything else a string. */
function scalar(value: string): string | number | boolean {
  const v = value.trim();
  if (/^-?\d+$/.test(v) && String(Number(v)) === v && Number.isSafeInteger(Number(v))) {
    return Number(v);
  }
  if (v === "true") return true;
  if (v === "false") return false;
  return v;
}

function list(text: string): string[] {
  return text
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

export function parseLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const item of list(text)) {
    const eq = item.indexOf("=");
    if (eq < 0) labels[item] = "";
    else labels[item.slice(0, eq).trim()] = item.slice(eq + 1).trim();
  }
  return labels;
}

function formatLabels(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(", ");
}

function paramsObject(params: Record<string, string>, policies: Record<string, string> = {}) {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(params)) if (v.trim() !== "") out[k] = scalar(v);
  for (const [k, max] of Object.entries(policies)) out[k] = { policy: "mmtests", max: scalar(max) };
  return out;
}

function level(form: LevelForm, targetCi: string): unknown {
  if (!form.adaptive) return scalar(form.count);
  return { min: scalar(form.min), max: scalar(form.max), target_ci: scalar(targetCi) };
}

/** The run spec as a plain object in the YAML's key order. */
export function formToSpec(form: RunForm): Record<string, unknown> {
  const spec: Record<string, unknown> = { name: form.name.trim(), benchmark: form.benchmark };
  const params = paramsObject(form.params, form.policies);
  if (Object.keys(params).length > 0) spec.params = params;
  const s = form.sweep;
  if (s.mode === "values" && s.param) {
    const values = list(s.values).map(scalar);
    spec.sweep = { [s.param]: s.max.trim() ? { values, max: scalar(s.max) } : values };
  } else if (s.mode === "policy" && s.param) {
    const p: Record<string, unknown> = { policy: s.policy };
    if (s.min.trim()) p.min = scalar(s.min);
    if (s.max.trim()) p.max = scalar(s.max);
    spec.sweep = { [s.param]: p };
  }
  spec.iterations = level(form.iterations, form.targetCi);
  if (form.boots.adaptive || form.boots.count.trim() !== "1") {
    spec.boots = level(form.boots, form.targetCi);
  }
  spec.arms = form.arms.map((arm) => {
    const a: Record<string, unknown> = { name: arm.name.trim() };
    if (arm.ceiling.trim()) a.ceiling = scalar(arm.ceiling);
    const p = paramsObject(arm.params);
    if (Object.keys(p).length > 0) a.params = p;
    return a;
  });
  const h = form.hosts;
  const hosts: Record<string, unknown> = { count: scalar(h.count) };
  const labels = parseLabels(h.labels);
  if (Object.keys(labels).length > 0) hosts.labels = labels;
  if (list(h.microarch).length > 0) hosts.microarch = list(h.microarch);
  if (list(h.names).length > 0) hosts.names = list(h.names);
  if (h.pcid) hosts.pcid = h.pcid === "true";
  if (h.invpcid) hosts.invpcid = h.invpcid === "true";
  if (h.minDtlbEntries.trim()) hosts.min_dtlb_entries = scalar(h.minDtlbEntries);
  if (h.kernelRelease.trim()) hosts.kernel_release = h.kernelRelease.trim();
  spec.hosts = hosts;
  if (form.monitors.length > 0) spec.monitors = [...form.monitors];
  if (form.jobTimeoutSeconds.trim()) spec.job_timeout_seconds = scalar(form.jobTimeoutSeconds);
  const lost = form.onHostLost;
  if (lost.action.trim() || lost.after.trim()) {
    const policy: Record<string, unknown> = {};
    if (lost.action.trim()) policy.action = lost.action.trim();
    if (lost.after.trim()) policy.after = scalar(lost.after);
    spec.on_host_lost = policy;
  }
  return spec;
}

/** The YAML text of the form, in the style of the examples: small maps in flow style. */
export function formToYaml(form: RunForm): string {
  const doc = new YAML.Document(formToSpec(form));
  const top = doc.contents;
  if (isMap(top)) {
    for (const pair of top.items) {
      const key = String((pair.key as { value?: unknown })?.value ?? pair.key);
      const value = pair.value as Node | null;
      if (key === "arms" && isSeq(value)) {
        for (const arm of value.items) if (isMap(arm)) arm.flow = true;
      } else if (isMap(value) || isSeq(value)) {
        flowDeep(value);
      }
    }
  }
  return doc.toString({ lineWidth: 0 });
}

function flowDeep(node: Node): void {
  if (isMap(node) || isSeq(node)) node.flow = true;
}

// --- YAML -> form --------------------------------------------------------------------------

export interface YamlParseResult {
  form?: RunForm;
  /** A syntax error, with 1-based line and column. */
  error?: { message: string; line?: number; column?: number };
  /** Fields present in the YAML that the form cannot show (the YAML is then submitted as is). */
  unsupported: string[];
}

const TOP_KEYS = new Set([
  "name",
  "benchmark",
  "params",
  "sweep",
  "iterations",
  "boots",
  "arms",
  "hosts",
  "monitors",
  "job_timeout_seconds",
  "on_host_lost",
]);

function str(value: unknown): string {
  if (value === null || value === undefined) return "";
  return String(value);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function yamlToForm(text: string): YamlParseResult {
  const unsupported: string[] = [];
  const doc = YAML.parseDocument(text, { uniqueKeys: true, prettyErrors: true });
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    const pos = e.linePos?.[0];
    return {
      error: {
        message: (e.message.split("\n")[0] ?? e.message).replace(/ at line \d+, column \d+:?$/, ""),
        line: pos?.line,
        column: pos?.col,
      },
      unsupported,
    };
  }
  const spec: unknown = doc.toJS();
  if (!isObject(spec)) {
    return {
      error: { message: "a run spec is a map (name:, benchmark:, arms: ...)" },
      unsupported,
    };
  }
  const form = emptyForm(str(spec.benchmark));
  form.name = str(spec.name);
  form.iterations = { ...form.iterations, count: "1" };
  form.arms = [];
  for (const key of Object.keys(spec)) if (!TOP_KEYS.has(key)) unsupported.push(key);

  if (isObject(spec.params)) {
    for (const [k, v] of Object.entries(spec.params)) {
      if (isObject(v)) {
        if (v.policy === "mmtests" && Object.keys(v).every((x) => x === "policy" || x === "max")) {
          form.policies[k] = str(v.max);
        } else unsupported.push(`params.${k}`);
      } else form.params[k] = str(v);
    }
  } else if (spec.params !== undefined && spec.params !== null) unsupported.push("params");

  if (isObject(spec.sweep)) {
    const entries = Object.entries(spec.sweep);
    if (entries.length === 1) {
      const [param, value] = entries[0]!;
      form.sweep.param = param;
      if (Array.isArray(value)) {
        form.sweep.mode = "values";
        form.sweep.values = value.map(str).join(", ");
      } else if (isObject(value) && Array.isArray(value.values)) {
        form.sweep.mode = "values";
        form.sweep.values = value.values.map(str).join(", ");
        form.sweep.max = str(value.max);
        for (const k of Object.keys(value)) {
          if (k !== "values" && k !== "max") unsupported.push(`sweep.${param}.${k}`);
        }
      } else if (isObject(value)) {
        form.sweep.mode = "policy";
        const policy = str(value.policy) || "linear";
        form.sweep.policy = (["linear", "pow2", "fib", "topology"] as const).includes(
          policy as SweepPolicy,
        )
          ? (policy as SweepPolicy)
          : "linear";
        if (policy !== form.sweep.policy) unsupported.push(`sweep.${param}.policy`);
        form.sweep.min = str(value.min);
        form.sweep.max = str(value.max);
        for (const k of Object.keys(value)) {
          if (!["policy", "min", "max"].includes(k)) unsupported.push(`sweep.${param}.${k}`);
        }
      } else unsupported.push(`sweep.${param}`);
    } else if (entries.length > 1) unsupported.push("sweep");
  } else if (spec.sweep !== undefined && spec.sweep !== null) unsupported.push("sweep");

  const readLevel = (key: "iterations" | "boots", value: unknown) => {
    if (value === undefined || value === null) return;
    if (isObject(value)) {
      form[key] = {
        adaptive: true,
        count: form[key].count,
        min: str(value.min),
        max: str(value.max),
      };
      if (value.target_ci !== undefined) form.targetCi = str(value.target_ci);
      for (const k of Object.keys(value)) {
        if (!["min", "max", "target_ci"].includes(k)) unsupported.push(`${key}.${k}`);
      }
    } else form[key] = { ...form[key], adaptive: false, count: str(value) };
  };
  readLevel("iterations", spec.iterations);
  readLevel("boots", spec.boots);

  if (Array.isArray(spec.arms)) {
    spec.arms.forEach((arm, i) => {
      if (!isObject(arm)) {
        unsupported.push(`arms[${i}]`);
        return;
      }
      const a: ArmForm = { name: str(arm.name), ceiling: str(arm.ceiling), params: {} };
      if (isObject(arm.params)) {
        for (const [k, v] of Object.entries(arm.params)) {
          if (isObject(v)) unsupported.push(`arms[${i}].params.${k}`);
          else a.params[k] = str(v);
        }
      }
      for (const k of Object.keys(arm)) {
        if (!["name", "ceiling", "params"].includes(k)) unsupported.push(`arms[${i}].${k}`);
      }
      form.arms.push(a);
    });
  }

  if (isObject(spec.hosts)) {
    const h = spec.hosts;
    const known = [
      "count",
      "labels",
      "microarch",
      "names",
      "pcid",
      "invpcid",
      "min_dtlb_entries",
      "kernel_release",
    ];
    for (const k of Object.keys(h)) if (!known.includes(k)) unsupported.push(`hosts.${k}`);
    form.hosts = {
      count: h.count === undefined ? "1" : str(h.count),
      labels: isObject(h.labels)
        ? formatLabels(Object.fromEntries(Object.entries(h.labels).map(([k, v]) => [k, str(v)])))
        : "",
      microarch: Array.isArray(h.microarch) ? h.microarch.map(str).join(", ") : str(h.microarch),
      names: Array.isArray(h.names) ? h.names.map(str).join(", ") : str(h.names),
      pcid: h.pcid === true ? "true" : h.pcid === false ? "false" : "",
      invpcid: h.invpcid === true ? "true" : h.invpcid === false ? "false" : "",
      minDtlbEntries: str(h.min_dtlb_entries),
      kernelRelease: str(h.kernel_release),
    };
  }
  if (Array.isArray(spec.monitors)) form.monitors = spec.monitors.map(str);
  form.jobTimeoutSeconds = str(spec.job_timeout_seconds);
  if (isObject(spec.on_host_lost)) {
    const p = spec.on_host_lost;
    form.onHostLost = { action: str(p.action), after: str(p.after) };
    for (const k of Object.keys(p)) {
      if (k !== "action" && k !== "after") unsupported.push(`on_host_lost.${k}`);
    }
  } else if (spec.on_host_lost !== undefined && spec.on_host_lost !== null) {
    unsupported.push("on_host_lost");
  }
  return { form, unsupported };
}

/** The shell command that submits this spec with the CLI. */
export function cliCommand(yaml: string): string {
  let delimiter = "TLBFLEET_SPEC";
  while (yaml.split("\n").includes(delimiter)) delimiter += "_";
  const body = yaml.endsWith("\n") ? yaml : `${yaml}\n`;
  return `tlbfleet submit - <<'${delimiter}'\n${body}${delimiter}\n`;
}
