// Small pieces every page uses.
import type { ComponentChildren } from "preact";
import { ApiError, ApiUnavailableError, NotFoundError, PermissionDeniedError } from "../api/errors";
import type { RunState } from "../api/gen/tlbfleet/v1/fleet";
import { runStateName } from "../lib/format";

export function StateBadge({ state }: { state: RunState }) {
  const name = runStateName(state);
  return <span class={`state state-${name}`}>{name}</span>;
}

/** An error of a load, in words; a missing thing gets the not-found page's wording. */
export function ErrorView({ error, what }: { error: Error; what: string }) {
  if (error instanceof NotFoundError) {
    return (
      <section class="notfound" data-testid="not-found">
        <h1>Not found</h1>
        <p>
          {what} does not exist: {error.message}
        </p>
      </section>
    );
  }
  if (error instanceof PermissionDeniedError) {
    return <p class="error">Your role may not see this: {error.message}</p>;
  }
  if (error instanceof ApiUnavailableError) {
    return <p class="muted">Waiting for the controller…</p>;
  }
  if (error instanceof ApiError) {
    return (
      <p class="error">
        {error.code}: {error.message}
      </p>
    );
  }
  return <p class="error">{error.message}</p>;
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" aria-live="polite">
      Loading {what}…
    </p>
  );
}

export function FieldError({ id, message }: { id: string; message: string | undefined }) {
  if (!message) return null;
  return (
    <p class="field-error" id={id} role="alert" data-testid={`error-${id}`}>
      {message}
    </p>
  );
}

export function Section({
  title,
  children,
  id,
}: {
  title: string;
  children: ComponentChildren;
  id?: string;
}) {
  return (
    <section class="panel" aria-labelledby={id ? `${id}-h` : undefined} id={id}>
      <h2 id={id ? `${id}-h` : undefined}>{title}</h2>
      {children}
    </section>
  );
}
