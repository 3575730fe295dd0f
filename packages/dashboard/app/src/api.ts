/** The dashboard's client of the broker's REST API v1: credentials, JSON calls, the live stream. */
import type { AuthInfo, MetricsSample } from "@mq9/broker/api";

export type Credentials =
  | { scheme: "bearer"; token: string }
  | { scheme: "basic"; user: string; password: string };

const STORAGE_KEY = "mq9.dashboard.credentials";

/** A failed call: the HTTP status and the API's error text and code. */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

let credentials: Credentials | undefined = load();
const unauthorizedListeners = new Set<() => void>();

function load(): Credentials | undefined {
  try {
    const saved = sessionStorage.getItem(STORAGE_KEY);
    return saved ? (JSON.parse(saved) as Credentials) : undefined;
  } catch {
    return undefined;
  }
}

export function setCredentials(next: Credentials | undefined): void {
  credentials = next;
  if (next) sessionStorage.setItem(STORAGE_KEY, JSON.stringify(next));
  else sessionStorage.removeItem(STORAGE_KEY);
}

export function hasCredentials(): boolean {
  return credentials !== undefined;
}

/** Told when the broker refuses the credentials (the app shows the login again). */
export function onUnauthorized(listener: () => void): () => void {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

function headers(extra: Record<string, string> = {}): Record<string, string> {
  // Tells the broker not to send the challenge that would open the browser's own login dialog.
  const all: Record<string, string> = { "x-mq9-dashboard": "1", ...extra };
  if (credentials?.scheme === "bearer") all.authorization = `Bearer ${credentials.token}`;
  if (credentials?.scheme === "basic") {
    all.authorization = `Basic ${btoa(`${credentials.user}:${credentials.password}`)}`;
  }
  return all;
}

/** One call; resolves with the JSON answer or rejects with an ApiFailure carrying the API's error. */
export async function api<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const res = await fetch(path, {
    method,
    headers: headers(body === undefined ? {} : { "content-type": "application/json" }),
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = text === "" ? undefined : JSON.parse(text);
  } catch {
    json = { error: text };
  }
  if (!res.ok) {
    const failure = (json ?? {}) as { error?: string; code?: string };
    if (res.status === 401) for (const listener of unauthorizedListeners) listener();
    throw new ApiFailure(res.status, failure.code ?? String(res.status), failure.error ?? res.statusText);
  }
  return json as T;
}

export const get = <T>(path: string, signal?: AbortSignal) => api<T>("GET", path, undefined, signal);

/** What the login page needs: whether the broker wants credentials, and which. */
export async function authInfo(): Promise<AuthInfo> {
  return get("/api/v1/auth");
}

/**
 * Follows /api/v1/stream (server-sent events) with the credentials in a header, which
 * EventSource cannot send; reconnects after a failure until `signal` aborts.
 */
export async function followStream(onSample: (sample: MetricsSample) => void, signal: AbortSignal) {
  while (!signal.aborted) {
    try {
      const res = await fetch("/api/v1/stream", { headers: headers(), signal });
      if (res.status === 401) for (const listener of unauthorizedListeners) listener();
      if (!res.ok || !res.body) throw new Error(`stream answered ${res.status}`);
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let buffered = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffered += decoder.decode(value, { stream: true });
        let end = buffered.indexOf("\n\n");
        while (end >= 0) {
          const event = buffered.slice(0, end);
          buffered = buffered.slice(end + 2);
          const data = event
            .split("\n")
            .filter((line) => line.startsWith("data: "))
            .map((line) => line.slice(6))
            .join("\n");
          if (event.includes("event: sample") && data) onSample(JSON.parse(data) as MetricsSample);
          end = buffered.indexOf("\n\n");
        }
      }
    } catch {
      // Reconnect below, unless the page is gone.
    }
    if (!signal.aborted) await new Promise((resolve) => setTimeout(resolve, 2000));
  }
}
