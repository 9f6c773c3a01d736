// Navigation, URL state and data loading for the pages.
import { createContext } from "preact";
import { useCallback, useContext, useEffect, useRef, useState } from "preact/hooks";
import { api } from "./api";
import { ApiUnavailableError, UnauthenticatedError } from "./api/errors";
import type { Principal } from "./api/gen/tlbfleet/v1/auth";
import { backoffMs } from "./lib/retry";
import { matchRoute, type Route } from "./lib/url-state";

// --- navigation ----------------------------------------------------------------------------

const NAVIGATE = "tlbfleet:navigate";

export function navigate(to: string, options: { replace?: boolean } = {}): void {
  if (options.replace) history.replaceState(null, "", to);
  else history.pushState(null, "", to);
  window.dispatchEvent(new Event(NAVIGATE));
}

export interface Location {
  route: Route;
  pathname: string;
  query: URLSearchParams;
  /** path + query, for a return-to link. */
  href: string;
}

function currentLocation(): Location {
  const { pathname, search } = window.location;
  return {
    route: matchRoute(pathname),
    pathname,
    query: new URLSearchParams(search),
    href: pathname + search,
  };
}

export function useLocation(): Location {
  const [location, setLocation] = useState(currentLocation);
  useEffect(() => {
    const update = () => setLocation(currentLocation());
    window.addEventListener("popstate", update);
    window.addEventListener(NAVIGATE, update);
    return () => {
      window.removeEventListener("popstate", update);
      window.removeEventListener(NAVIGATE, update);
    };
  }, []);
  return location;
}

/** Replaces the query string of the current page (filters as they are typed). */
export function setQuery(query: URLSearchParams, options: { push?: boolean } = {}): void {
  const q = query.toString();
  navigate(window.location.pathname + (q ? `?${q}` : ""), { replace: !options.push });
}

// --- session -------------------------------------------------------------------------------

export interface Session {
  principal: Principal | undefined;
  developmentMode: boolean;
  canOperate: boolean;
  /** The session was checked with the server (whoami answered). */
  known: boolean;
  refresh(): Promise<void>;
}

export const SessionContext = createContext<Session>({
  principal: undefined,
  developmentMode: false,
  canOperate: false,
  known: false,
  refresh: async () => {},
});

export function useSession(): Session {
  return useContext(SessionContext);
}

// --- data ----------------------------------------------------------------------------------

export interface Resource<T> {
  data: T | undefined;
  error: Error | undefined;
  loading: boolean;
  /** Load again now (e.g. after a change the user made). */
  reload(): void;
}

/**
 * Loads `load()` when `key` changes; while the API is unreachable it retries with backoff
 * (1 s .. 10 s) and keeps the last data; with `pollMs` it refreshes that often (never below
 * 2 s). A 401 is left to the app (login); other errors stop here and are shown.
 */
export function useResource<T>(
  key: string,
  load: (signal: AbortSignal) => Promise<T>,
  options: { pollMs?: number; enabled?: boolean } = {},
): Resource<T> {
  const [state, setState] = useState<{ data?: T; error?: Error; loading: boolean }>({
    loading: true,
  });
  const [generation, setGeneration] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  const enabled = options.enabled ?? true;
  const pollMs = options.pollMs ? Math.max(2000, options.pollMs) : 0;

  useEffect(() => {
    if (!enabled) return;
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let failures = 0;
    const attempt = async () => {
      setState((s) => ({ ...s, loading: true }));
      try {
        const data = await loadRef.current(abort.signal);
        if (abort.signal.aborted) return;
        failures = 0;
        setState({ data, loading: false });
        if (pollMs) timer = setTimeout(attempt, pollMs);
      } catch (e) {
        if (abort.signal.aborted) return;
        const error = e instanceof Error ? e : new Error(String(e));
        if (error instanceof ApiUnavailableError) {
          failures += 1;
          setState((s) => ({ ...s, error, loading: false }));
          timer = setTimeout(attempt, backoffMs(failures, 2000));
          return;
        }
        setState((s) => ({ data: s.data, error, loading: false }));
        if (error instanceof UnauthenticatedError) return;
      }
    };
    void attempt();
    return () => {
      abort.abort();
      if (timer) clearTimeout(timer);
    };
  }, [key, generation, enabled, pollMs]);

  const reload = useCallback(() => setGeneration((g) => g + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

/** The API's availability as the client last saw it, for the banner. */
export function useApiAvailable(): boolean {
  const [available, setAvailable] = useState(api.isAvailable);
  useEffect(() => api.onAvailability(setAvailable), []);
  return available;
}

/** Re-renders every `ms` (relative times such as "5 s ago"). */
export function useNow(ms: number): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}

/** Sets document.title for the page. */
export function useTitle(title: string): void {
  useEffect(() => {
    document.title = title ? `${title} · tlbfleet` : "tlbfleet";
  }, [title]);
}
