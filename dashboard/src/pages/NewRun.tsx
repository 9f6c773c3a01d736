// New run: a form generated from the workload schemas, the same spec as YAML (editable, kept
// in sync), browser validation, the server's errors next to the field they name, "copy as
// CLI". The draft is kept in sessionStorage, so an expired session costs nothing.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { api } from "../api";
import { ApiError, ApiUnavailableError, fieldOf, InvalidArgumentError } from "../api/errors";
import { ParameterSchema_Type, type ParameterSchema } from "../api/gen/tlbfleet/v1/fleet";
import { ErrorView, Loading } from "../components/common";
import { navigate, useResource, useSession, useTitle, type Location } from "../hooks";
import { clearDraft, draftApplies, loadDraft, saveDraft } from "../lib/draft";
import { errorId, fieldId, firstInvalid, messagesFor } from "../lib/fields";
import {
  cliCommand,
  emptyForm,
  formToYaml,
  HOST_LOST_ACTIONS,
  yamlToForm,
  type ArmForm,
  type LevelForm,
  type RunForm,
} from "../lib/runform";
import { runPath } from "../lib/url-state";
import { placeServerError, validateForm, type FieldErrors } from "../lib/validate";

/** "mmap=never, threads=2" <-> {mmap: "never", threads: "2"} for an arm's overrides. */
function overridesText(params: Record<string, string>): string {
  return Object.entries(params)
    .map(([k, v]) => `${k}=${v}`)
    .join(", ");
}
function parseOverrides(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of text.split(",")) {
    const t = item.trim();
    if (!t) continue;
    const eq = t.indexOf("=");
    out[eq < 0 ? t : t.slice(0, eq).trim()] = eq < 0 ? "" : t.slice(eq + 1).trim();
  }
  return out;
}

function bounds(p: ParameterSchema): string {
  switch (p.type) {
    case ParameterSchema_Type.TYPE_INT:
      return `integer ${p.min}–${p.max}`;
    case ParameterSchema_Type.TYPE_BOOL:
      return "true/false";
    case ParameterSchema_Type.TYPE_ENUM:
      return p.choices.join(" | ");
    default:
      return "text";
  }
}

/** A labelled input with its help and error, wired for screen readers. */
function Field(props: {
  path: string;
  label: string;
  help?: string;
  error?: string;
  children: (attrs: {
    id: string;
    "aria-describedby"?: string;
    "aria-invalid"?: boolean;
  }) => preact.JSX.Element;
}) {
  const id = fieldId(props.path);
  const helpId = `${id}-help`;
  const described = [props.help ? helpId : "", props.error ? errorId(props.path) : ""]
    .filter(Boolean)
    .join(" ");
  return (
    <div class={`field${props.error ? " invalid" : ""}`} data-field={props.path}>
      <label for={id}>{props.label}</label>
      {props.children({
        id,
        "aria-describedby": described || undefined,
        "aria-invalid": props.error ? true : undefined,
      })}
      {props.help && (
        <p class="help" id={helpId}>
          {props.help}
        </p>
      )}
      {props.error && (
        <p class="field-error" id={errorId(props.path)} data-testid={`error-${props.path}`}>
          {props.error}
        </p>
      )}
    </div>
  );
}

function ParamInput({
  schema,
  value,
  onChange,
  attrs,
}: {
  schema: ParameterSchema;
  value: string;
  onChange: (v: string) => void;
  attrs: Record<string, unknown>;
}) {
  if (
    schema.type === ParameterSchema_Type.TYPE_ENUM ||
    schema.type === ParameterSchema_Type.TYPE_BOOL
  ) {
    const choices =
      schema.type === ParameterSchema_Type.TYPE_BOOL ? ["true", "false"] : schema.choices;
    return (
      <select {...attrs} value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        <option value="">default ({schema.defaultValue})</option>
        {choices.map((c) => (
          <option key={c} value={c}>
            {c}
          </option>
        ))}
        {value && !choices.includes(value) && <option value={value}>{value}</option>}
      </select>
    );
  }
  return (
    <input
      {...attrs}
      type="text"
      inputMode={schema.type === ParameterSchema_Type.TYPE_INT ? "numeric" : undefined}
      value={value}
      placeholder={schema.defaultValue ? `default ${schema.defaultValue}` : ""}
      onInput={(e) => onChange(e.currentTarget.value)}
    />
  );
}

export function NewRunPage({ location }: { location: Location }) {
  useTitle("New run");
  const session = useSession();
  const workloads = useResource("workloads", (s) => api.workloads(s));
  const [form, setForm] = useState<RunForm | undefined>();
  const [yamlText, setYamlText] = useState("");
  const [yamlOnly, setYamlOnly] = useState<string[]>([]);
  const [yamlError, setYamlError] = useState("");
  const [submitted, setSubmitted] = useState(false);
  const [serverError, setServerError] = useState<{ field?: string; message: string } | undefined>();
  const [busy, setBusy] = useState(false);
  const [cli, setCli] = useState("");
  const formRef = useRef<HTMLFormElement>(null);

  const schemas = workloads.data?.workloads ?? [];
  const monitors = workloads.data?.monitors ?? [];
  const workload = schemas.find((w) => w.name === form?.benchmark);

  // The first render with the catalogue: the saved draft, or the URL's benchmark/preset.
  useEffect(() => {
    if (form || !workloads.data) return;
    const preset = schemas
      .flatMap((w) => w.presets)
      .find((p) => p.ref === location.query.get("preset"));
    const presetBenchmark = preset
      ? schemas.find((w) => w.presets.includes(preset))?.name
      : undefined;
    const draft = loadDraft(sessionStorage);
    if (draft && draftApplies(draft, location.query.get("benchmark") ?? presetBenchmark)) {
      editYaml(draft.yaml, false);
      return;
    }
    const benchmark = location.query.get("benchmark") ?? schemas[0]?.name ?? "";
    if (preset) editYaml(preset.specYaml, false);
    else changeForm({ ...emptyForm(benchmark), name: `${benchmark}-run` }, false);
  }, [workloads.data]);

  const clientErrors: FieldErrors = useMemo(
    () => (form ? validateForm(form, schemas, monitors) : {}),
    [form, schemas, monitors],
  );
  const shownErrors: FieldErrors = useMemo(() => {
    const e: FieldErrors = submitted ? { ...clientErrors } : {};
    if (serverError?.field) e[serverError.field] = serverError.message;
    return e;
  }, [submitted, clientErrors, serverError]);

  function changeForm(next: RunForm, keepDraft = true) {
    const text = formToYaml(next);
    setForm(next);
    setYamlText(text);
    setYamlOnly([]);
    setYamlError("");
    setServerError(undefined);
    if (keepDraft) saveDraft(sessionStorage, { yaml: text, yamlOnly: false, savedMs: Date.now() });
  }

  function editYaml(text: string, keepDraft = true) {
    setYamlText(text);
    setServerError(undefined);
    const parsed = yamlToForm(text);
    if (parsed.error) {
      const at = parsed.error.line
        ? ` (line ${parsed.error.line}, column ${parsed.error.column})`
        : "";
      setYamlError(`${parsed.error.message}${at}`);
    } else if (parsed.form) {
      setForm(parsed.form);
      setYamlOnly(parsed.unsupported);
      setYamlError("");
    }
    if (keepDraft)
      saveDraft(sessionStorage, {
        yaml: text,
        yamlOnly: parsed.unsupported.length > 0,
        savedMs: Date.now(),
      });
  }

  const update = (change: Partial<RunForm>) => form && changeForm({ ...form, ...change });
  const updateArm = (i: number, change: Partial<ArmForm>) =>
    form &&
    changeForm({ ...form, arms: form.arms.map((a, j) => (j === i ? { ...a, ...change } : a)) });
  const updateLevel = (key: "iterations" | "boots", change: Partial<LevelForm>) =>
    form && changeForm({ ...form, [key]: { ...form[key], ...change } });
  const updateHosts = (change: Partial<RunForm["hosts"]>) =>
    form && changeForm({ ...form, hosts: { ...form.hosts, ...change } });
  const updateHostLost = (change: Partial<RunForm["onHostLost"]>) =>
    form && changeForm({ ...form, onHostLost: { ...form.onHostLost, ...change } });

  /** The field paths the form shows now, in the order a keyboard user meets them. */
  const domFields = (): string[] =>
    [...(formRef.current?.querySelectorAll<HTMLElement>("[data-field]") ?? [])].map(
      (el) => el.dataset.field ?? "",
    );
  const focusField = (path: string) => {
    const el = formRef.current?.querySelector<HTMLElement>(
      `[data-field="${CSS.escape(path)}"] :is(input,select,textarea)`,
    );
    el?.focus();
  };

  const submit = async (e: Event) => {
    e.preventDefault();
    if (!form) return;
    setSubmitted(true);
    setServerError(undefined);
    if (yamlError) {
      focusField("yaml");
      return;
    }
    const fields = domFields();
    if (yamlOnly.length === 0) {
      const first = firstInvalid(clientErrors, fields);
      if (first) {
        focusField(first);
        return;
      }
    }
    setBusy(true);
    try {
      const response = await api.submitYaml(yamlText);
      clearDraft(sessionStorage);
      navigate(runPath(response.runId));
    } catch (err) {
      if (err instanceof InvalidArgumentError) {
        const placed = placeServerError(fieldOf(err), err.message, new Set(fields));
        setServerError(placed);
        if (placed.field)
          focusField(firstInvalid({ [placed.field]: placed.message }, fields) ?? placed.field);
      } else if (err instanceof ApiUnavailableError) {
        setServerError({
          message:
            "The controller is not answering; your spec is kept here. Try again when it is back.",
        });
      } else if (err instanceof ApiError) {
        setServerError({ message: `${err.code}: ${err.message}` });
      } else setServerError({ message: String(err) });
    } finally {
      setBusy(false);
    }
  };

  if (workloads.error && !workloads.data)
    return <ErrorView error={workloads.error} what="The workload catalogue" />;
  if (!form) return <Loading what="the workload catalogue" />;
  const err = (path: string) => messagesFor(shownErrors, path);
  /** A text input of the host selection, bound to form.hosts[key]. */
  const hostInput = (
    key: Exclude<keyof RunForm["hosts"], "pcid" | "invpcid">,
    path: string,
    label: string,
    extra: { help?: string; numeric?: boolean },
  ) => (
    <Field path={path} label={label} help={extra.help} error={err(path)}>
      {(a) => (
        <input
          {...a}
          inputMode={extra.numeric ? "numeric" : undefined}
          value={form.hosts[key]}
          onInput={(e) => updateHosts({ [key]: e.currentTarget.value })}
        />
      )}
    </Field>
  );
  const sweepable = workload?.parameters ?? [];

  return (
    <>
      <h1>New run</h1>
      {!session.canOperate && (
        <p class="notice">
          Your role may read runs but not submit them. The form stays here to write a spec for the
          CLI.
        </p>
      )}
      <form ref={formRef} class="newrun" noValidate onSubmit={submit} aria-label="New run">
        <div class="cols">
          <div class="col">
            <fieldset>
              <legend>Benchmark</legend>
              <Field
                path="benchmark"
                label="Benchmark"
                help={workload?.description}
                error={err("benchmark")}
              >
                {(a) => (
                  <select
                    {...a}
                    value={form.benchmark}
                    onChange={(e) =>
                      changeForm({
                        ...emptyForm(e.currentTarget.value),
                        name: form.name,
                        arms: form.arms.map((x) => ({ ...x, params: {} })),
                      })
                    }
                  >
                    {schemas.map((w) => (
                      <option key={w.name}>{w.name}</option>
                    ))}
                  </select>
                )}
              </Field>
              {workload && workload.presets.length > 0 && (
                <Field
                  path="preset"
                  label="Start from a preset"
                  help="Replaces the whole form with the preset's spec."
                >
                  {(a) => (
                    <select
                      {...a}
                      value=""
                      onChange={(e) => {
                        const p = workload.presets.find((x) => x.ref === e.currentTarget.value);
                        if (p) editYaml(p.specYaml);
                      }}
                    >
                      <option value="">choose…</option>
                      {workload.presets.map((p) => (
                        <option key={p.ref} value={p.ref}>
                          {p.ref}
                        </option>
                      ))}
                    </select>
                  )}
                </Field>
              )}
              <Field
                path="name"
                label="Run name"
                help="1–128 characters of A-Z a-z 0-9 . _ -"
                error={err("name")}
              >
                {(a) => (
                  <input
                    {...a}
                    value={form.name}
                    onInput={(e) => update({ name: e.currentTarget.value })}
                  />
                )}
              </Field>
            </fieldset>
            <fieldset>
              <legend>Parameters (every arm)</legend>
              {workload?.parameters.map((p) =>
                form.policies[p.name] !== undefined ? (
                  <Field
                    key={p.name}
                    path={`params.${p.name}`}
                    label={`${p.name}: drawn per iteration (mmtests), max`}
                    help={p.help}
                    error={err(`params.${p.name}`)}
                  >
                    {(a) => (
                      <input
                        {...a}
                        value={form.policies[p.name]}
                        onInput={(e) =>
                          update({
                            policies: { ...form.policies, [p.name]: e.currentTarget.value },
                          })
                        }
                      />
                    )}
                  </Field>
                ) : (
                  <Field
                    key={p.name}
                    path={`params.${p.name}`}
                    label={`${p.name} (${bounds(p)})`}
                    help={p.help}
                    error={err(`params.${p.name}`)}
                  >
                    {(a) => (
                      <ParamInput
                        schema={p}
                        value={form.params[p.name] ?? ""}
                        attrs={a}
                        onChange={(v) => update({ params: { ...form.params, [p.name]: v } })}
                      />
                    )}
                  </Field>
                ),
              )}
            </fieldset>
            <fieldset>
              <legend>Sweep</legend>
              <Field path="sweep" label="Sweep" error={err("sweep")}>
                {(a) => (
                  <select
                    {...a}
                    value={form.sweep.mode}
                    onChange={(e) =>
                      update({
                        sweep: {
                          ...form.sweep,
                          mode: e.currentTarget.value as RunForm["sweep"]["mode"],
                          param: form.sweep.param || (sweepable[0]?.name ?? ""),
                        },
                      })
                    }
                  >
                    <option value="none">no sweep</option>
                    <option value="values">a list of values</option>
                    <option value="policy">a policy (linear, pow2, fib, topology)</option>
                  </select>
                )}
              </Field>
              {form.sweep.mode !== "none" && (
                <>
                  <Field
                    path={`sweep.${form.sweep.param}`}
                    label="Swept parameter"
                    error={err(`sweep.${form.sweep.param}`)}
                  >
                    {(a) => (
                      <select
                        {...a}
                        value={form.sweep.param}
                        onChange={(e) =>
                          update({ sweep: { ...form.sweep, param: e.currentTarget.value } })
                        }
                      >
                        {sweepable.map((p) => (
                          <option key={p.name}>{p.name}</option>
                        ))}
                      </select>
                    )}
                  </Field>
                  {form.sweep.mode === "values" ? (
                    <Field
                      path="sweep.values"
                      label="Values (comma-separated)"
                      help="Run in this order; max (optional) caps the list, e.g. ncpus."
                    >
                      {(a) => (
                        <input
                          {...a}
                          value={form.sweep.values}
                          onInput={(e) =>
                            update({ sweep: { ...form.sweep, values: e.currentTarget.value } })
                          }
                        />
                      )}
                    </Field>
                  ) : (
                    <Field path="sweep.policy" label="Policy">
                      {(a) => (
                        <select
                          {...a}
                          value={form.sweep.policy}
                          onChange={(e) =>
                            update({
                              sweep: {
                                ...form.sweep,
                                policy: e.currentTarget.value as RunForm["sweep"]["policy"],
                              },
                            })
                          }
                        >
                          {["linear", "pow2", "fib", "topology"].map((p) => (
                            <option key={p}>{p}</option>
                          ))}
                        </select>
                      )}
                    </Field>
                  )}
                  {form.sweep.mode === "policy" && (
                    <Field
                      path="sweep.min"
                      label="min"
                      help="An integer or an expression of ncpus (e.g. ncpus/2); default 1."
                    >
                      {(a) => (
                        <input
                          {...a}
                          value={form.sweep.min}
                          onInput={(e) =>
                            update({ sweep: { ...form.sweep, min: e.currentTarget.value } })
                          }
                        />
                      )}
                    </Field>
                  )}
                  <Field
                    path="sweep.max"
                    label="max"
                    help="An integer or an expression of ncpus (e.g. 2*ncpus)."
                  >
                    {(a) => (
                      <input
                        {...a}
                        value={form.sweep.max}
                        onInput={(e) =>
                          update({ sweep: { ...form.sweep, max: e.currentTarget.value } })
                        }
                      />
                    )}
                  </Field>
                </>
              )}
            </fieldset>
            <fieldset>
              <legend>Repetitions</legend>
              {(["iterations", "boots"] as const).map((key) => {
                const l = form[key];
                return (
                  <div key={key} class="level">
                    <label class="check">
                      <input
                        type="checkbox"
                        checked={l.adaptive}
                        onChange={(e) => updateLevel(key, { adaptive: e.currentTarget.checked })}
                      />
                      adaptive {key}
                    </label>
                    {l.adaptive ? (
                      <>
                        <Field path={`${key}.min`} label={`${key}: min`} error={err(`${key}.min`)}>
                          {(a) => (
                            <input
                              {...a}
                              inputMode="numeric"
                              value={l.min}
                              onInput={(e) => updateLevel(key, { min: e.currentTarget.value })}
                            />
                          )}
                        </Field>
                        <Field path={`${key}.max`} label={`${key}: max`} error={err(`${key}.max`)}>
                          {(a) => (
                            <input
                              {...a}
                              inputMode="numeric"
                              value={l.max}
                              onInput={(e) => updateLevel(key, { max: e.currentTarget.value })}
                            />
                          )}
                        </Field>
                      </>
                    ) : (
                      <Field
                        path={key}
                        label={
                          key === "iterations"
                            ? "Iterations per boot (1–100000)"
                            : "Boots per arm (1–1000; >1 reboots the host)"
                        }
                        error={err(key)}
                      >
                        {(a) => (
                          <input
                            {...a}
                            inputMode="numeric"
                            value={l.count}
                            onInput={(e) => updateLevel(key, { count: e.currentTarget.value })}
                          />
                        )}
                      </Field>
                    )}
                  </div>
                );
              })}
              {(form.iterations.adaptive || form.boots.adaptive) && (
                <Field
                  path="targetCi"
                  label="Target CI half-width"
                  help="Stop when every ratio's interval is this narrow: 1% or 0.01."
                  error={err("iterations.target_ci") ?? err("boots.target_ci")}
                >
                  {(a) => (
                    <input
                      {...a}
                      value={form.targetCi}
                      onInput={(e) => update({ targetCi: e.currentTarget.value })}
                    />
                  )}
                </Field>
              )}
            </fieldset>
          </div>
          <div class="col">
            <fieldset>
              <legend>Arms (the first is the baseline)</legend>
              {err("arms") && <p class="field-error">{err("arms")}</p>}
              {form.arms.map((arm, i) => (
                <div class="arm" key={i} role="group" aria-label={`arm ${i + 1}`}>
                  <Field
                    path={`arms[${i}].name`}
                    label={`Arm ${i + 1} name`}
                    error={err(`arms[${i}].name`)}
                  >
                    {(a) => (
                      <input
                        {...a}
                        value={arm.name}
                        onInput={(e) => updateArm(i, { name: e.currentTarget.value })}
                      />
                    )}
                  </Field>
                  <Field
                    path={`arms[${i}].ceiling`}
                    label="Flush ceiling"
                    help='Pages, "default" (33), or empty to leave the host alone.'
                    error={err(`arms[${i}].ceiling`)}
                  >
                    {(a) => (
                      <input
                        {...a}
                        value={arm.ceiling}
                        onInput={(e) => updateArm(i, { ceiling: e.currentTarget.value })}
                      />
                    )}
                  </Field>
                  <Field
                    path={`arms[${i}].params`}
                    label="Parameter overrides"
                    help="name=value, comma-separated"
                    error={err(`arms[${i}].params`)}
                  >
                    {(a) => (
                      <input
                        {...a}
                        value={overridesText(arm.params)}
                        onChange={(e) =>
                          updateArm(i, { params: parseOverrides(e.currentTarget.value) })
                        }
                      />
                    )}
                  </Field>
                  {form.arms.length > 1 && (
                    <button
                      type="button"
                      class="linkish"
                      onClick={() => update({ arms: form.arms.filter((_, j) => j !== i) })}
                    >
                      Remove arm {i + 1}
                    </button>
                  )}
                </div>
              ))}
              <button
                type="button"
                onClick={() =>
                  update({
                    arms: [
                      ...form.arms,
                      { name: `arm${form.arms.length + 1}`, ceiling: "", params: {} },
                    ],
                  })
                }
              >
                Add an arm
              </button>
            </fieldset>
            <fieldset>
              <legend>Hosts</legend>
              {hostInput("count", "hosts.count", "How many hosts (each runs every job)", {
                numeric: true,
              })}
              {hostInput("labels", "hosts.labels", "Labels", {
                help: "name=value, comma-separated; every one must match",
              })}
              {hostInput("microarch", "hosts.microarch", "Microarchitectures", {
                help: "comma-separated; empty = any",
              })}
              {hostInput("names", "hosts.names", "Host names", {
                help: "comma-separated; empty = any",
              })}
              {(["pcid", "invpcid"] as const).map((k) => (
                <Field
                  key={k}
                  path={`hosts.${k}`}
                  label={k.toUpperCase()}
                  error={err(`hosts.${k}`)}
                >
                  {(a) => (
                    <select
                      {...a}
                      value={form.hosts[k]}
                      onChange={(e) =>
                        updateHosts({ [k]: e.currentTarget.value as "" | "true" | "false" })
                      }
                    >
                      <option value="">any</option>
                      <option value="true">required</option>
                      <option value="false">absent</option>
                    </select>
                  )}
                </Field>
              ))}
              {hostInput(
                "minDtlbEntries",
                "hosts.min_dtlb_entries",
                "At least this many dTLB entries (4K)",
                { numeric: true },
              )}
              {hostInput("kernelRelease", "hosts.kernel_release", "Kernel release (glob)", {
                help: 'e.g. "6.1.*"',
              })}
            </fieldset>
            <fieldset data-field="monitors">
              <legend>Monitors</legend>
              {monitors.map(({ name: m, help }) => (
                <label class="check" key={m} title={help}>
                  <input
                    type="checkbox"
                    name="monitors"
                    value={m}
                    checked={form.monitors.includes(m)}
                    onChange={(e) =>
                      update({
                        monitors: e.currentTarget.checked
                          ? [...form.monitors, m]
                          : form.monitors.filter((x) => x !== m),
                      })
                    }
                  />
                  {m}
                </label>
              ))}
              {err("monitors") && <p class="field-error">{err("monitors")}</p>}
            </fieldset>
            <fieldset data-field="on_host_lost">
              <legend>If a host is lost</legend>
              <Field
                path="on_host_lost.action"
                label="When a slot's host goes silent"
                help="A slot is one machine for the whole run: its jobs never move to another host. Default: restart, or fail when hosts.names pins every slot or an arm names a boot entry."
                error={err("on_host_lost.action")}
              >
                {(a) => (
                  <select
                    {...a}
                    value={form.onHostLost.action}
                    onChange={(e) => updateHostLost({ action: e.currentTarget.value })}
                  >
                    <option value="">the run's default</option>
                    <option value="wait">wait for it, however long</option>
                    <option value="fail">fail the run</option>
                    <option value="restart">restart the slot on another host</option>
                    {form.onHostLost.action &&
                      !(HOST_LOST_ACTIONS as readonly string[]).includes(
                        form.onHostLost.action,
                      ) && <option value={form.onHostLost.action}>{form.onHostLost.action}</option>}
                  </select>
                )}
              </Field>
              <Field
                path="on_host_lost.after"
                label="After how long a silence"
                help="30m, 2h, 90s or seconds; 1 s to 7 days; empty = 30m. Fail and restart act then (a restarted slot's samples are kept, left out of comparisons); wait never does."
                error={err("on_host_lost.after")}
              >
                {(a) => (
                  <input
                    {...a}
                    value={form.onHostLost.after}
                    placeholder="30m"
                    onInput={(e) => updateHostLost({ after: e.currentTarget.value })}
                  />
                )}
              </Field>
              {shownErrors.on_host_lost && (
                <p class="field-error" data-testid="error-on_host_lost">
                  {shownErrors.on_host_lost}
                </p>
              )}
            </fieldset>
            <Field
              path="job_timeout_seconds"
              label="Job timeout (seconds; empty = from the workload)"
              error={err("job_timeout_seconds")}
            >
              {(a) => (
                <input
                  {...a}
                  inputMode="numeric"
                  value={form.jobTimeoutSeconds}
                  onInput={(e) => update({ jobTimeoutSeconds: e.currentTarget.value })}
                />
              )}
            </Field>
          </div>
          <div class="col yaml">
            <Field
              path="yaml"
              label="Run spec (YAML)"
              help={
                yamlOnly.length > 0
                  ? `The form cannot show ${yamlOnly.join(", ")}: the YAML is submitted as written.`
                  : "Edit either side; the other follows."
              }
              error={yamlError || undefined}
            >
              {(a) => (
                <textarea
                  {...a}
                  rows={28}
                  spellcheck={false}
                  value={yamlText}
                  onInput={(e) => editYaml(e.currentTarget.value)}
                />
              )}
            </Field>
          </div>
        </div>
        {serverError && !serverError.field && (
          <p class="field-error" role="alert" data-testid="server-error">
            {serverError.message}
          </p>
        )}
        {serverError?.field && (
          <p class="field-error" role="alert">
            The controller refused the spec: see {serverError.field}.
          </p>
        )}
        <div class="actions">
          {session.canOperate && (
            <button type="submit" disabled={busy} data-testid="submit-run">
              {busy ? "Submitting…" : "Submit run"}
            </button>
          )}
          <button
            type="button"
            onClick={() => {
              const text = cliCommand(yamlText);
              setCli(text);
              void navigator.clipboard?.writeText(text).catch(() => undefined);
            }}
          >
            Copy as CLI
          </button>
          <button
            type="button"
            class="linkish"
            onClick={() => {
              clearDraft(sessionStorage);
              changeForm({ ...emptyForm(form.benchmark), name: `${form.benchmark}-run` });
              setSubmitted(false);
            }}
          >
            Start over
          </button>
        </div>
        {cli && (
          <pre class="cli" data-testid="cli-command" aria-label="CLI command">
            {cli}
          </pre>
        )}
      </form>
    </>
  );
}
