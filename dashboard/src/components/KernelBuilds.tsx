// A run's build stage (docs/kernels.md "Revisions as arms"): one row per kernel arm's build,
// with what it builds, where it stands, the commit it resolved to, the build it made, why it
// failed, and the last lines of its log (live while the run's events come). The whole log is
// read only when asked for (GET /api/v1/builds/{task_id}/log): it may be 200,000 lines.
import { useEffect, useState } from "preact/hooks";
import { api } from "../api";
import type { GetBuildLogResponse, KernelBuild } from "../api/gen/tlbfleet/v1/fleet";
import {
  buildStateClass,
  buildStateText,
  logSizeText,
  shortBuildId,
  shortCommit,
} from "../lib/builds";
import { ErrorView, Section } from "./common";

/** "linux lab-tip with 1a2b3c4d5e6f reverted" (the source, revision and revert). */
function revisionText(b: KernelBuild): string {
  const k = b.kernel;
  if (!k) return "—";
  return `${k.source} ${k.rev}${k.revert ? ` with ${shortCommit(k.revert)} reverted` : ""}`;
}

/** The whole log, read when the user asks (again: a running build's log grows). */
function WholeLog({ build }: { build: KernelBuild }) {
  const [state, setState] = useState<{
    busy: boolean;
    log?: GetBuildLogResponse;
    error?: Error;
    url?: string;
  }>({ busy: false });
  // The object URL of a saved copy lives as long as the log shown.
  useEffect(() => {
    const url = state.url;
    return () => {
      if (url) URL.revokeObjectURL(url);
    };
  }, [state.url]);
  const read = async () => {
    setState((s) => ({ ...s, busy: true, error: undefined }));
    try {
      const log = await api.buildLog(build.taskId);
      const url =
        typeof URL.createObjectURL === "function"
          ? URL.createObjectURL(
              new Blob([log.lines.join("\n") + "\n"], { type: "text/plain;charset=utf-8" }),
            )
          : undefined;
      setState({ busy: false, log, url });
    } catch (e) {
      setState((s) => ({
        ...s,
        busy: false,
        error: e instanceof Error ? e : new Error(String(e)),
      }));
    }
  };
  const hide = () => setState({ busy: false });
  const lines = state.log?.lines ?? [];
  // The controller keeps the first 200,000 lines; the count goes on past them.
  const total = Math.max(state.log?.build?.logLines ?? 0, lines.length);
  return (
    <div class="build-whole-log">
      <p>
        <button
          type="button"
          onClick={() => void read()}
          disabled={state.busy}
          data-testid={`build-log-button-${build.taskId}`}
        >
          {state.busy
            ? "Reading the log…"
            : state.log
              ? "Read the whole log again"
              : `Show the whole log (${logSizeText(build.logLines)})`}
        </button>
        {state.log && (
          <>
            {" "}
            <button type="button" onClick={hide}>
              Hide it
            </button>
            {state.url && (
              <>
                {" "}
                <a href={state.url} download={`build-${build.taskId}.log`}>
                  Save as a file
                </a>
              </>
            )}
          </>
        )}{" "}
        <span class="muted small">
          (<code>tlbfleet build-log {build.taskId}</code>)
        </span>
      </p>
      {state.error && <ErrorView error={state.error} what={`The log of build ${build.taskId}`} />}
      {state.log && (
        <>
          <p class="muted small" data-testid={`build-log-size-${build.taskId}`}>
            {logSizeText(lines.length)}
            {total > lines.length &&
              ` of ${total.toLocaleString("en")} (the controller keeps the first ${lines.length.toLocaleString("en")})`}
          </p>
          <pre class="build-log whole" data-testid={`build-log-${build.taskId}`}>
            {lines.join("\n")}
          </pre>
        </>
      )}
    </div>
  );
}

function BuildRow({ build: b }: { build: KernelBuild }) {
  const built = b.buildId || b.kernelRelease;
  return (
    <li class="build" data-testid={`build-${b.taskId}`}>
      <p class="build-head">
        <strong>arm {b.arm}</strong>: <span data-testid="build-revision">{revisionText(b)}</span>
        {b.kernel?.config && (
          <span>
            {" "}
            with config <code>{b.kernel.config}</code>
          </span>
        )}{" "}
        <span class={buildStateClass(b.state)} data-testid="build-state">
          {buildStateText(b.state, b.builder)}
        </span>
        {b.reused && (
          <>
            {" "}
            <span class="badge" data-testid="build-reused">
              built before
            </span>
          </>
        )}
      </p>
      <dl class="facts build-facts">
        {b.commit && (
          <>
            <dt>commit</dt>
            <dd data-testid="build-commit">
              <code title={b.commit}>{shortCommit(b.commit)}</code>
              {b.subject && ` ${b.subject}`}
              {b.author && <span class="muted"> ({b.author})</span>}
            </dd>
          </>
        )}
        {built && (
          <>
            <dt>build</dt>
            <dd data-testid="build-id">
              {b.buildId && <code title={b.buildId}>{shortBuildId(b.buildId)}</code>}
              {b.buildId && b.kernelRelease && ", "}
              {b.kernelRelease && <>release {b.kernelRelease}</>}
            </dd>
          </>
        )}
        {b.reason && (
          <>
            <dt>{b.state === "failed" ? "why it failed" : "reason"}</dt>
            <dd class={b.state === "failed" ? "error" : undefined} data-testid="build-reason">
              {b.reason}
            </dd>
          </>
        )}
        <dt>log</dt>
        <dd data-testid="build-log-lines">{logSizeText(b.logLines)}</dd>
      </dl>
      {b.logTail.length > 0 && (
        <pre
          class="build-log tail"
          aria-label={`the last lines of the log of arm ${b.arm}`}
          data-testid="build-tail"
        >
          {b.logTail.join("\n")}
        </pre>
      )}
      {b.logLines > 0 && <WholeLog build={b} />}
    </li>
  );
}

/** The run's kernel builds; nothing for a run without kernel arms. */
export function KernelBuildsView({ builds }: { builds: readonly KernelBuild[] }) {
  if (builds.length === 0) return null;
  return (
    <Section title="Kernel builds" id="builds">
      <ul class="builds" data-testid="builds">
        {builds.map((b) => (
          <BuildRow key={b.taskId} build={b} />
        ))}
      </ul>
    </Section>
  );
}
