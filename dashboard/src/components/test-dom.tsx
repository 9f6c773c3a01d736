// Helpers the components' render tests share (happy-dom; each test file sets
// `// @vitest-environment happy-dom`): mount a node into a fresh element of the document,
// take it down again, a Location for a path, and a wait for mocked promises to settle.
import { render } from "preact";
import { act } from "preact/test-utils";
import type { Location } from "../hooks";
import { matchRoute } from "../lib/url-state";

let root: HTMLElement | undefined;

/** Renders `node` into a new element appended to the document's body and returns it. */
export function mount(node: preact.ComponentChild): HTMLElement {
  root = document.createElement("div");
  document.body.appendChild(root);
  act(() => render(node, root!));
  return root;
}

/** Unmounts what mount rendered and removes its element (call it in afterEach). */
export function unmount(): void {
  if (root) act(() => render(null, root!));
  root?.remove();
  root = undefined;
}

/** The Location the app's router gives for `path` ("/runs/7?tab=x"). */
export function at(path: string): Location {
  const url = new URL(path, "http://localhost");
  return {
    route: matchRoute(url.pathname),
    pathname: url.pathname,
    query: url.searchParams,
    href: url.pathname + url.search,
  };
}

/** Lets the mocked API's promises and Preact's renders settle. */
export async function settle(rounds = 10): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    await act(async () => {
      await new Promise((r) => setTimeout(r, 0));
    });
  }
}
