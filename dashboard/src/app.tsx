// The shell: session, navigation, the API-down banner, and the page for the URL.
import { useCallback, useEffect, useMemo, useState } from "preact/hooks";
import { api } from "./api";
import { canOperate } from "./api/client";
import { ApiUnavailableError, UnauthenticatedError } from "./api/errors";
import type { Principal } from "./api/gen/tlbfleet/v1/auth";
import { Link } from "./components/Link";
import { navigate, SessionContext, useApiAvailable, useLocation, type Session } from "./hooks";
import { loginPath } from "./lib/url-state";
import { ComparePage } from "./pages/Compare";
import { FleetPage } from "./pages/Fleet";
import { HistoryPage } from "./pages/History";
import { LoginPage } from "./pages/Login";
import { NewRunPage } from "./pages/NewRun";
import { NotFoundPage } from "./pages/NotFound";
import { RunPage } from "./pages/Run";
import { RunsPage } from "./pages/Runs";

const ROLE_NAMES: Record<number, string> = { 1: "viewer", 2: "operator", 3: "admin" };

/** While the API is down, ask it every 5 s whether it is back (pages retry on their own too). */
function useRecoveryProbe(available: boolean, onBack: () => void): void {
  useEffect(() => {
    if (available) return;
    const timer = setInterval(() => {
      api.whoami().then(onBack, () => undefined);
    }, 5000);
    return () => clearInterval(timer);
  }, [available, onBack]);
}

export function App() {
  const location = useLocation();
  const available = useApiAvailable();
  const [principal, setPrincipal] = useState<Principal | undefined>();
  const [developmentMode, setDevelopmentMode] = useState(false);
  const [known, setKnown] = useState(false);

  const refresh = useCallback(async () => {
    try {
      const who = await api.whoami();
      setPrincipal(who.principal);
      setDevelopmentMode(who.developmentMode);
      setKnown(true);
    } catch (e) {
      if (e instanceof UnauthenticatedError) {
        setPrincipal(undefined);
        setDevelopmentMode(false);
        setKnown(true);
        if (window.location.pathname !== "/login") {
          navigate(loginPath(window.location.pathname + window.location.search), {
            replace: true,
          });
        }
      } else if (!(e instanceof ApiUnavailableError)) {
        setKnown(true);
      }
    }
  }, []);

  useEffect(() => {
    void refresh();
  }, [refresh]);

  // A request anywhere found the session gone: to the login page, and back here after it.
  useEffect(
    () =>
      api.onUnauthenticated(() => {
        setPrincipal(undefined);
        if (window.location.pathname !== "/login") {
          navigate(loginPath(window.location.pathname + window.location.search));
        }
      }),
    [],
  );

  useRecoveryProbe(available, refresh);

  const session: Session = useMemo(
    () => ({
      principal,
      developmentMode,
      canOperate: canOperate(principal, developmentMode),
      known,
      refresh,
    }),
    [principal, developmentMode, known, refresh],
  );

  const logout = async () => {
    try {
      await api.logout();
    } finally {
      setPrincipal(undefined);
      navigate("/login");
    }
  };

  const route = location.route;
  const page = (() => {
    switch (route.page) {
      case "fleet":
        return <FleetPage location={location} />;
      case "runs":
        return <RunsPage location={location} />;
      case "new":
        return <NewRunPage location={location} />;
      case "run":
        return <RunPage key={route.runId} runId={route.runId} location={location} />;
      case "compare":
        return <ComparePage location={location} />;
      case "history":
        return <HistoryPage location={location} />;
      case "login":
        return <LoginPage location={location} />;
      default:
        return <NotFoundPage what={`No page at ${location.pathname}.`} />;
    }
  })();

  const current = (p: string) => (route.page === p ? "page" : undefined);
  return (
    <SessionContext.Provider value={session}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <nav aria-label="Main">
          <Link href="/" class="brand">
            tlbfleet
          </Link>
          <Link href="/" aria-current={current("fleet")}>
            Fleet
          </Link>
          <Link href="/runs" aria-current={current("runs")}>
            Runs
          </Link>
          {session.canOperate && (
            <Link href="/runs/new" aria-current={current("new")} data-testid="nav-new-run">
              New run
            </Link>
          )}
          <Link href="/compare" aria-current={current("compare")}>
            Compare
          </Link>
          <Link href="/history" aria-current={current("history")}>
            History
          </Link>
        </nav>
        <div class="who">
          {developmentMode && <span class="badge warn">development mode: no authentication</span>}
          {principal && !developmentMode && (
            <>
              <span data-testid="principal">
                {principal.name} ({ROLE_NAMES[principal.role] ?? "unknown role"})
              </span>
              <button type="button" class="linkish" onClick={logout}>
                Log out
              </button>
            </>
          )}
        </div>
      </header>
      {!available && (
        <div class="banner" role="alert" data-testid="api-down">
          The controller is not answering. Retrying; this page will recover by itself when it is
          back.{" "}
          <button type="button" onClick={() => void refresh()}>
            Retry now
          </button>
        </div>
      )}
      <main id="main" tabIndex={-1}>
        {page}
      </main>
    </SessionContext.Provider>
  );
}
