// The New-run form survives a trip to the login page (an expired session) and a reload: its
// YAML is kept in sessionStorage on every change, per tab, and read back when the form opens
// (unless the URL asks for another benchmark: a link to a fresh form is not a way back).
import { parse } from "yaml";

export interface DraftStore {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

export const DRAFT_KEY = "tlbfleet.new-run.draft";

export interface Draft {
  yaml: string;
  /** True when the YAML was edited by hand and the form cannot show all of it. */
  yamlOnly: boolean;
  savedMs: number;
}

export function saveDraft(store: DraftStore, draft: Draft): void {
  try {
    store.setItem(DRAFT_KEY, JSON.stringify(draft));
  } catch {
    // Storage full or disabled: the draft is a convenience, never a reason to fail.
  }
}

export function loadDraft(store: DraftStore): Draft | undefined {
  let text: string | null;
  try {
    text = store.getItem(DRAFT_KEY);
  } catch {
    return undefined;
  }
  if (!text) return undefined;
  try {
    const d = JSON.parse(text) as Partial<Draft>;
    if (typeof d.yaml !== "string") return undefined;
    return { yaml: d.yaml, yamlOnly: d.yamlOnly === true, savedMs: Number(d.savedMs) || 0 };
  } catch {
    return undefined;
  }
}

export function clearDraft(store: DraftStore): void {
  try {
    store.removeItem(DRAFT_KEY);
  } catch {
    // see saveDraft
  }
}

/** The draft's `benchmark`, or undefined when its YAML does not say (or does not parse). */
export function draftBenchmark(draft: Draft): string | undefined {
  try {
    const spec: unknown = parse(draft.yaml);
    const b =
      typeof spec === "object" && spec !== null
        ? (spec as Record<string, unknown>).benchmark
        : undefined;
    return typeof b === "string" ? b : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether the form opens with the draft: when the URL names no benchmark (the New-run link,
 * or the way back from the login page to a blank form), or names the draft's own.
 */
export function draftApplies(draft: Draft, urlBenchmark: string | undefined): boolean {
  return !urlBenchmark || draftBenchmark(draft) === urlBenchmark;
}
