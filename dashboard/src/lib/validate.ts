// Browser-side validation of the New-run form against the workload schemas (GET
// /api/v1/workloads), with the server's field paths and wording (docs/run-spec.md "Errors"),
// so a mistake is shown next to its field before anything is sent. The server validates
// again: what only it can check (a workload's combination rules, string canonicalizers,
// host-dependent sweeps) comes back as an error naming the field, shown the same way.
import {
  ParameterSchema_Type,
  type MonitorSchema,
  type ParameterSchema,
  type WorkloadSchema,
} from "../api/gen/tlbfleet/v1/fleet";
import { HOST_LOST_ACTIONS, parseLabels, type LevelForm, type RunForm } from "./runform";

/** Field path (as the server names it, e.g. "arms[0].params.threads") -> message. */
export type FieldErrors = Record<string, string>;

const NAME_RE = /^[A-Za-z0-9._-]{1,128}$/;
const NAME_RULE = "must be 1-128 characters of A-Z a-z 0-9 . _ -";

function quoted(v: string): string {
  return `"${v}"`;
}

function parseInt64(value: string): bigint | undefined {
  return /^-?\d+$/.test(value) ? BigInt(value) : undefined;
}

function intInRange(value: string, min: number | bigint, max: number | bigint): string | undefined {
  const v = parseInt64(value.trim());
  if (v === undefined || v < BigInt(min) || v > BigInt(max)) {
    return `must be an integer in [${min}, ${max}], got ${quoted(value)}`;
  }
  return undefined;
}

const BOOLS = ["true", "false", "yes", "no", "on", "off", "1", "0"];

/** The workload's own check of one value (ParamSpec::Check), or undefined when it is valid. */
export function checkParam(schema: ParameterSchema, value: string): string | undefined {
  switch (schema.type) {
    case ParameterSchema_Type.TYPE_INT:
      return intInRange(value, schema.min, schema.max);
    case ParameterSchema_Type.TYPE_BOOL:
      return BOOLS.includes(value)
        ? undefined
        : `must be a boolean (true/false/yes/no/on/off/1/0), got ${quoted(value)}`;
    case ParameterSchema_Type.TYPE_ENUM:
      return schema.choices.includes(value)
        ? undefined
        : `must be one of ${schema.choices.join("|")}, got ${quoted(value)}`;
    default:
      return undefined; // strings: only the server's canonicalizer knows
  }
}

/** The canonical spelling of a valid value, to find a sweep value given twice. */
function canonical(schema: ParameterSchema, value: string): string {
  if (schema.type === ParameterSchema_Type.TYPE_INT) return String(BigInt(value));
  if (schema.type === ParameterSchema_Type.TYPE_BOOL) {
    return ["true", "yes", "on", "1"].includes(value) ? "true" : "false";
  }
  return value;
}

/** An integer, or an expression of ncpus (integers, + - * /, parentheses, `ncpus`). */
const NCPUS_EXPR = /^(?:\s|\d|ncpus|[-+*/()])+$/;

function checkParams(
  errors: FieldErrors,
  prefix: string,
  params: Record<string, string>,
  workload: WorkloadSchema,
): void {
  for (const [name, value] of Object.entries(params)) {
    if (value.trim() === "") continue; // not given: the workload's default
    const schema = workload.parameters.find((p) => p.name === name);
    const path = `${prefix}.${name}`;
    if (!schema) {
      errors[path] =
        `unknown parameter for ${workload.name} (known: ${workload.parameters.map((p) => p.name).join(", ")})`;
      continue;
    }
    const problem = checkParam(schema, value.trim());
    if (problem) errors[path] = problem;
  }
}

function checkLevel(
  errors: FieldErrors,
  key: "iterations" | "boots",
  level: LevelForm,
  max: number,
): void {
  if (!level.adaptive) {
    const e = intInRange(level.count, 1, max);
    if (e) errors[key] = e;
    return;
  }
  const eMax = intInRange(level.max, 1, max);
  if (eMax) {
    errors[`${key}.max`] = eMax;
    return;
  }
  const top = Number(level.max);
  if (level.min.trim() !== "") {
    const v = parseInt64(level.min.trim());
    if (v === undefined || v < 1n || v > BigInt(top)) {
      errors[`${key}.min`] = `must be between 1 and max (${top}), got ${level.min}`;
    }
  }
}

/** "1%" or a fraction; in (0, 0.5]. Returns the fraction or an error. */
export function parseTargetCi(text: string): number | string {
  const t = text.trim();
  const m = /^(\d+(?:\.\d+)?|\.\d+)(%?)$/.exec(t);
  if (!m) return `expected a percentage such as 1% or a fraction such as 0.01, got ${quoted(t)}`;
  const value = Number(m[1]) / (m[2] ? 100 : 1);
  if (!(value >= 0.000001 && value <= 0.5)) {
    return `must be between 0.0001% and 50%, got ${quoted(t)}`;
  }
  return value;
}

/** `workloads` and `monitors` are the server's catalogue (GET /api/v1/workloads). */
export function validateForm(
  form: RunForm,
  workloads: WorkloadSchema[],
  monitors: MonitorSchema[],
): FieldErrors {
  const errors: FieldErrors = {};
  if (!NAME_RE.test(form.name.trim())) errors.name = NAME_RULE;
  const workload = workloads.find((w) => w.name === form.benchmark);
  if (!form.benchmark) errors.benchmark = "required";
  else if (!workload) {
    errors.benchmark = `unknown benchmark ${quoted(form.benchmark)} (known: ${workloads.map((w) => w.name).join(", ")})`;
  }

  if (workload) {
    checkParams(errors, "params", form.params, workload);
    for (const [name, max] of Object.entries(form.policies)) {
      const schema = workload.parameters.find((p) => p.name === name);
      if (!schema) errors[`params.${name}`] = `unknown parameter for ${workload.name}`;
      else if (schema.type !== ParameterSchema_Type.TYPE_INT) {
        errors[`params.${name}`] = "the mmtests policy needs an integer parameter";
      } else {
        const e = intInRange(max, 1, 1_000_000) ?? checkParam(schema, max.trim());
        if (e) errors[`params.${name}.max`] = e;
      }
    }
    form.arms.forEach((arm, i) => checkParams(errors, `arms[${i}].params`, arm.params, workload));
    checkSweep(errors, form, workload);
  }

  checkLevel(errors, "iterations", form.iterations, 100_000);
  checkLevel(errors, "boots", form.boots, 1000);
  const adaptive = form.iterations.adaptive || form.boots.adaptive;
  if (adaptive) {
    const t = parseTargetCi(form.targetCi);
    if (typeof t === "string") {
      errors[form.iterations.adaptive ? "iterations.target_ci" : "boots.target_ci"] = t;
    }
    if (form.arms.length < 2) {
      errors.iterations =
        "an adaptive run stops when its arms' comparison settles: give at least two arms";
    }
  }

  if (form.arms.length === 0) errors.arms = "at least one arm is required";
  const seen = new Set<string>();
  form.arms.forEach((arm, i) => {
    const name = arm.name.trim();
    if (!NAME_RE.test(name)) errors[`arms[${i}].name`] = NAME_RULE;
    else if (seen.has(name)) errors[`arms[${i}].name`] = `duplicate arm name ${quoted(name)}`;
    seen.add(name);
    const c = arm.ceiling.trim();
    if (c !== "" && c !== "default" && intInRange(c, 0, 2147483647)) {
      errors[`arms[${i}].ceiling`] =
        `must be "default" or an integer in [0, 2147483647], got ${quoted(c)}`;
    }
  });

  const h = form.hosts;
  const count = intInRange(h.count, 1, 1000);
  if (count) errors["hosts.count"] = count;
  if (h.minDtlbEntries.trim()) {
    const e = intInRange(h.minDtlbEntries, 1, 65536);
    if (e) errors["hosts.min_dtlb_entries"] = e;
  }
  const names = h.names.split(",").filter((s) => s.trim() !== "");
  if (names.length > 0 && !count && names.length < Number(h.count)) {
    errors["hosts.names"] = `lists ${names.length} hosts, fewer than hosts.count (${h.count})`;
  }
  for (const key of Object.keys(parseLabels(h.labels))) {
    if (key === "") errors["hosts.labels"] = "a label needs a name (name=value)";
  }
  const known = monitors.map((m) => m.name);
  for (const m of form.monitors) {
    if (!known.includes(m)) {
      errors.monitors = `unknown monitor ${quoted(m)} (known: ${known.join(", ")})`;
    }
  }
  if (form.jobTimeoutSeconds.trim()) {
    const e = intInRange(form.jobTimeoutSeconds, 0, 604800);
    if (e) errors.job_timeout_seconds = e;
  }
  checkHostLost(errors, form.onHostLost);
  return errors;
}

const DURATION_UNITS: Record<string, number> = {
  ns: 1e-9,
  us: 1e-6,
  ms: 1e-3,
  s: 1,
  m: 60,
  h: 3600,
};

/**
 * A duration as the server reads `on_host_lost.after` (scheduler::ParseHostLostAfter): whole
 * seconds, or absl::ParseDuration's "30m", "2h", "1h30m", "1.5h", "90s". Seconds, or
 * undefined when it is neither.
 */
export function parseDurationSeconds(text: string): number | undefined {
  const t = text.trim();
  if (/^[-+]?\d+$/.test(t)) return Number(t);
  const m = /^([-+]?)((?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|ms|s|m|h))+)$/.exec(t);
  if (!m) return undefined;
  let seconds = 0;
  for (const part of m[2]!.matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|ms|s|m|h)/g)) {
    seconds += Number(part[1]) * DURATION_UNITS[part[2]!]!;
  }
  return m[1] === "-" ? -seconds : seconds;
}

/** The bound of `on_host_lost.after`: 1 s .. 7 days (scheduler::kMaxHostLostAfterSeconds). */
const MAX_HOST_LOST_AFTER_SECONDS = 7 * 24 * 3600;

/**
 * `on_host_lost` as the server checks it (scheduler::CheckHostLostPolicy), with its wording.
 * Restart on a run whose hosts.names pins every slot is refused by the server alone.
 */
function checkHostLost(errors: FieldErrors, policy: RunForm["onHostLost"]): void {
  const action = policy.action.trim();
  const after = policy.after.trim();
  if (!action && !after) return; // not in the spec: the run's design decides
  if (after) {
    const seconds = parseDurationSeconds(after);
    if (seconds === undefined) {
      errors["on_host_lost.after"] =
        `expected a duration such as 30m, 2h or 90s, got ${quoted(after)}`;
    } else if (!(seconds >= 1 && seconds <= MAX_HOST_LOST_AFTER_SECONDS)) {
      errors["on_host_lost.after"] =
        `must be at least 1 s and at most 7 days (168h), got ${quoted(after)}`;
    }
  }
  if (!action) errors["on_host_lost.action"] = "required";
  else if (!(HOST_LOST_ACTIONS as readonly string[]).includes(action)) {
    errors["on_host_lost.action"] =
      `unknown action ${quoted(action)} (known: ${HOST_LOST_ACTIONS.join(", ")})`;
  }
}

function checkSweep(errors: FieldErrors, form: RunForm, workload: WorkloadSchema): void {
  const s = form.sweep;
  if (s.mode === "none") return;
  const base = `sweep.${s.param}`;
  const schema = workload.parameters.find((p) => p.name === s.param);
  if (!s.param) {
    errors.sweep = "choose the parameter to sweep";
    return;
  }
  if (!schema) {
    errors[base] = `unknown parameter for ${workload.name}`;
    return;
  }
  if (s.param in form.policies || (form.params[s.param] ?? "").trim() !== "") {
    errors[base] = `${s.param} is swept: remove it from params`;
  }
  form.arms.forEach((arm, i) => {
    if ((arm.params[s.param] ?? "").trim() !== "") {
      errors[`arms[${i}].params.${s.param}`] = `${s.param} is swept: remove it from the arm`;
    }
  });
  const bound = (key: "min" | "max", text: string) => {
    const t = text.trim();
    if (t === "") return;
    if (/^-?\d+$/.test(t)) {
      const e = checkParam(schema, t) ?? intInRange(t, 1, 1_000_000);
      if (e) errors[`${base}.${key}`] = e;
    } else if (!NCPUS_EXPR.test(t)) {
      errors[`${base}.${key}`] = `expected an integer or an expression of ncpus, got ${quoted(t)}`;
    }
  };
  if (s.mode === "values") {
    const values = s.values.split(",").map((v) => v.trim());
    if (values.every((v) => v === "")) {
      errors[base] = "give at least one value";
      return;
    }
    const seen = new Set<string>();
    values.forEach((v, i) => {
      const problem = v === "" ? "empty value" : checkParam(schema, v);
      if (problem) {
        errors[`${base}[${i}]`] ??= problem;
        return;
      }
      const c = canonical(schema, v);
      if (seen.has(c)) errors[`${base}[${i}]`] ??= `${quoted(v)} repeats an earlier value`;
      seen.add(c);
    });
    bound("max", s.max);
    return;
  }
  if (schema.type !== ParameterSchema_Type.TYPE_INT) {
    errors[base] = `a ${s.policy} sweep needs an integer parameter`;
    return;
  }
  if (s.max.trim() === "" && s.policy !== "topology") errors[`${base}.max`] = "required";
  bound("min", s.min);
  bound("max", s.max);
  const lo = s.min.trim() === "" ? 1 : Number(s.min);
  const hi = Number(s.max);
  if (Number.isInteger(lo) && Number.isInteger(hi) && s.max.trim() !== "" && lo > hi) {
    errors[`${base}.min`] ??= `must be at most max (${hi}), got ${s.min}`;
  }
}

/** Errors of the server, placed: a field the form shows gets the message next to it. */
export function placeServerError(
  field: string | undefined,
  message: string,
  formFields: ReadonlySet<string>,
): { field?: string; message: string } {
  if (!field) return { message };
  // The most specific field the form shows: "sweep.threads[3]" -> "sweep.threads".
  let f = field;
  for (;;) {
    if (formFields.has(f)) break;
    const cut = Math.max(f.lastIndexOf("."), f.lastIndexOf("["));
    if (cut <= 0) return { message: `${field}: ${message}` };
    f = f.slice(0, cut);
  }
  const prefix = `${field}: `;
  return { field: f, message: message.startsWith(prefix) ? message.slice(prefix.length) : message };
}
