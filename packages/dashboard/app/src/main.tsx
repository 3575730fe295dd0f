import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import {
  authInfo,
  type Credentials,
  followStream,
  get,
  hasCredentials,
  onUnauthorized,
  setCredentials,
} from "./api";
import { type Live, LiveContext } from "./live";
import { Agents } from "./pages/agents";
import { Connections } from "./pages/connections";
import { DeadLetters } from "./pages/dead-letters";
import { Group } from "./pages/group";
import { Mailbox } from "./pages/mailbox";
import { Mailboxes } from "./pages/mailboxes";
import { Overview } from "./pages/overview";
import { Task, Tasks, Templates } from "./pages/tasks";
import "./style.css";

/** The page the URL's #fragment names: `#/mailboxes/<address>` and so on. */
function useRoute(): string[] {
  const read = () =>
    location.hash
      .replace(/^#\/?/, "")
      .split("/")
      .filter(Boolean)
      .map((part) => decodeURIComponent(part));
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const changed = () => setRoute(read());
    window.addEventListener("hashchange", changed);
    return () => window.removeEventListener("hashchange", changed);
  }, []);
  return route;
}

function Page({ route }: { route: string[] }) {
  const [page, id, sub, subId] = route;
  switch (page) {
    case "mailboxes":
      if (id && sub === "groups" && subId) return <Group address={id} name={subId} key={`${id}/${subId}`} />;
      return id ? <Mailbox address={id} key={id} /> : <Mailboxes />;
    case "dead-letters":
      return <DeadLetters />;
    case "connections":
      return <Connections />;
    case "agents":
      return <Agents selected={id} />;
    case "tasks":
      return id ? <Task id={id} key={id} /> : <Tasks />;
    case "templates":
      return <Templates />;
    default:
      return <Overview />;
  }
}

const NAV = [
  ["", "Overview"],
  ["mailboxes", "Mailboxes"],
  ["dead-letters", "Dead letters"],
  ["connections", "Connections"],
  ["agents", "Agents"],
  ["tasks", "Tasks"],
  ["templates", "Templates"],
] as const;

function Shell({ onLogout }: { onLogout?: () => void }) {
  const route = useRoute();
  const [live, setLive] = useState<Live>({ tick: 0 });
  const [connected, setConnected] = useState(false);
  useEffect(() => {
    const stop = new AbortController();
    void followStream((sample) => {
      setConnected(true);
      setLive((old) => ({ tick: old.tick + 1, sample }));
    }, stop.signal);
    return () => stop.abort();
  }, []);
  return (
    <LiveContext.Provider value={live}>
      <header>
        <h1>mq9</h1>
        <nav>
          {NAV.map(([path, label]) => (
            <a key={path} href={`#/${path}`} class={(route[0] ?? "") === path ? "on" : ""}>
              {label}
            </a>
          ))}
        </nav>
        <span class={`live ${connected ? "on" : ""}`} data-testid="live">
          {connected ? "live" : "connecting…"}
        </span>
        {onLogout && (
          <button type="button" onClick={onLogout}>
            log out
          </button>
        )}
      </header>
      <main>
        <Page route={route} />
      </main>
    </LiveContext.Provider>
  );
}

function Login({ schemes, onDone }: { schemes: ("bearer" | "basic")[]; onDone: () => void }) {
  const [scheme, setScheme] = useState(schemes[0]);
  const [token, setToken] = useState("");
  const [user, setUser] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string>();
  const submit = async (event: Event) => {
    event.preventDefault();
    const credentials: Credentials = scheme === "bearer" ? { scheme, token } : { scheme, user, password };
    setCredentials(credentials);
    try {
      // Any data route tells whether the broker takes these credentials.
      await get("/api/v1/metrics/summary");
      onDone();
    } catch (err) {
      setCredentials(undefined);
      setError(`refused: ${(err as Error).message}`);
    }
  };
  return (
    <form class="login" onSubmit={submit} data-testid="login">
      <h1>mq9</h1>
      <p class="muted">This broker needs {scheme === "bearer" ? "a token" : "a user and password"}.</p>
      {schemes.length > 1 && (
        <div class="tabs">
          {schemes.map((s) => (
            <button type="button" class={s === scheme ? "on" : ""} onClick={() => setScheme(s)} key={s}>
              {s === "bearer" ? "token" : "user and password"}
            </button>
          ))}
        </div>
      )}
      {scheme === "bearer" ? (
        <input
          type="password"
          name="token"
          placeholder="token"
          value={token}
          onInput={(e) => setToken((e.target as HTMLInputElement).value)}
        />
      ) : (
        <>
          <input
            name="user"
            placeholder="user"
            value={user}
            onInput={(e) => setUser((e.target as HTMLInputElement).value)}
          />
          <input
            type="password"
            name="password"
            placeholder="password"
            value={password}
            onInput={(e) => setPassword((e.target as HTMLInputElement).value)}
          />
        </>
      )}
      <button type="submit">log in</button>
      {error && (
        <div class="notice" role="alert">
          {error}
        </div>
      )}
    </form>
  );
}

/** Asks the broker whether it wants credentials; shows the login until it takes them. */
function App() {
  const [schemes, setSchemes] = useState<("bearer" | "basic")[] | null>();
  const [loggedIn, setLoggedIn] = useState(hasCredentials());
  const [error, setError] = useState<string>();
  useEffect(() => {
    authInfo().then(
      (info) => setSchemes(info.required ? info.schemes : null),
      (err: Error) => setError(`cannot reach the broker: ${err.message}`),
    );
    return onUnauthorized(() => {
      setCredentials(undefined);
      setLoggedIn(false);
    });
  }, []);
  if (error) return <div class="notice">{error}</div>;
  if (schemes === undefined) return <div class="muted">connecting…</div>;
  if (schemes !== null && !loggedIn) return <Login schemes={schemes} onDone={() => setLoggedIn(true)} />;
  const logout =
    schemes === null
      ? undefined
      : () => {
          setCredentials(undefined);
          setLoggedIn(false);
        };
  return <Shell onLogout={logout} />;
}

render(<App />, document.getElementById("app")!);
