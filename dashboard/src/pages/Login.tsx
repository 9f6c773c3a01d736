// Login with an API token: the server answers with an HttpOnly session cookie (the token
// itself is never stored in the browser) and a CSRF token kept in memory.
import { useState } from "preact/hooks";
import { api } from "../api";
import { ApiError, ApiUnavailableError } from "../api/errors";
import { navigate, useSession, useTitle, type Location } from "../hooks";
import { safeNext } from "../lib/url-state";

export function LoginPage({ location }: { location: Location }) {
  useTitle("Log in");
  const session = useSession();
  const [token, setToken] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const next = safeNext(location.query.get("next"));

  const submit = async (e: Event) => {
    e.preventDefault();
    if (!token.trim()) {
      setError("Paste an API token (tlbfleet-controller token create prints one).");
      return;
    }
    setBusy(true);
    setError("");
    try {
      await api.login(token.trim());
      setToken("");
      await session.refresh();
      navigate(next, { replace: true });
    } catch (err) {
      if (err instanceof ApiUnavailableError)
        setError("The controller is not answering; try again.");
      else if (err instanceof ApiError) setError(err.message);
      else setError(String(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="login">
      <h1>Log in</h1>
      {location.query.get("next") && (
        <p class="muted">Your session has ended. Log in again to go back to where you were.</p>
      )}
      <form onSubmit={submit} aria-describedby={error ? "login-error" : undefined}>
        <label for="token">API token</label>
        <input
          id="token"
          name="token"
          type="password"
          autocomplete="off"
          spellcheck={false}
          value={token}
          onInput={(e) => setToken(e.currentTarget.value)}
          aria-invalid={error ? true : undefined}
        />
        {error && (
          <p id="login-error" class="field-error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" disabled={busy}>
          {busy ? "Logging in…" : "Log in"}
        </button>
      </form>
    </section>
  );
}
