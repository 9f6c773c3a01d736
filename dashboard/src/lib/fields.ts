// Field paths (as the server names them: "arms[0].params.threads") to DOM ids and back, and
// which errors belong to which input of the form.
import type { FieldErrors } from "./validate";

/** A DOM id for a field path: "arms[0].params" -> "f-arms_0_-params". */
export function fieldId(path: string): string {
  return `f-${path.replace(/[^A-Za-z0-9_-]/g, (c) => (c === "." ? "-" : "_"))}`;
}

export function errorId(path: string): string {
  return `e-${fieldId(path).slice(2)}`;
}

/** True when `error` is about `field` or something inside it. */
export function belongsTo(error: string, field: string): boolean {
  return error === field || error.startsWith(`${field}.`) || error.startsWith(`${field}[`);
}

/** The messages of the errors that belong to `field`, each prefixed by its sub-path. */
export function messagesFor(errors: FieldErrors, field: string): string | undefined {
  const out: string[] = [];
  for (const [path, message] of Object.entries(errors)) {
    if (!belongsTo(path, field)) continue;
    out.push(
      path === field ? message : `${path.slice(field.length).replace(/^\./, "")}: ${message}`,
    );
  }
  return out.length > 0 ? out.join("; ") : undefined;
}

/** The first field of `order` that has an error, to move the focus there. */
export function firstInvalid(errors: FieldErrors, order: readonly string[]): string | undefined {
  return order.find((f) => messagesFor(errors, f) !== undefined);
}
