// A real cluster for tests: routed nats-servers, a private PostgreSQL and `mq9 serve --cluster`
// processes (scripts/local-cluster/), plus plain `nats` clients speaking the mq9 protocol.
import { createServer, type Socket, connect as tcpConnect } from "node:net";
import { connect, type NatsConnection, headers as natsHeaders } from "nats";
import { startMq9Node } from "../../../scripts/local-cluster/mq9-node.js";
import { findNatsServer, startNatsCluster } from "../../../scripts/local-cluster/nats-cluster.js";
import { findPostgresBin, startPrivatePostgres } from "../../../scripts/local-cluster/private-postgres.js";

export interface NatsServerProcess {
  name: string;
  url: string;
  port: number;
  monitorPort: number;
  start(): void;
  kill(): Promise<void>;
  stop(): Promise<void>;
}

export interface NatsClusterProcesses {
  servers: NatsServerProcess[];
  urls: string[];
  waitForRoutes(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export interface PostgresProcess {
  url: string;
  port: number;
  query(sql: string): Promise<string>;
  start(): Promise<void>;
  pause(): Promise<void>;
  kill(): Promise<void>;
  stop(): Promise<void>;
}

export interface Mq9NodeProcess {
  nodeId: string;
  pid: number;
  httpPort: number;
  output(): string;
  kill(signal?: string): Promise<void>;
  stop(): Promise<void>;
  exited: Promise<{ code: number | null; signal: string | null }>;
}

/** Why the cluster tests cannot run here; with CI set, a missing binary fails instead. */
export function clusterMissing(): string | undefined {
  const missing = [
    findNatsServer() ? undefined : "nats-server (apt-get install nats-server)",
    findPostgresBin() ? undefined : "PostgreSQL (apt-get install postgresql-15)",
  ].filter(Boolean);
  if (missing.length === 0) return undefined;
  const reason = `not installed: ${missing.join(", ")}`;
  if (process.env.CI) throw new Error(`CI: ${reason}`);
  return reason;
}

export const startNats = (size = 3) => startNatsCluster({ size }) as Promise<NatsClusterProcesses>;
export const startPostgres = () => startPrivatePostgres() as Promise<PostgresProcess>;

/** Flags that keep a test node light: no orchestrator, no embedder model to load. */
export const LIGHT_NODE = ["--orchestrator", "off", "--registry-embedder", "none", "--log-level", "info"];

export function startNode(options: {
  nodeId: string;
  nats: string[];
  postgres: string;
  args?: string[];
}): Promise<Mq9NodeProcess> {
  return startMq9Node({
    ...options,
    args: [...LIGHT_NODE, ...(options.args ?? [])],
  }) as Promise<Mq9NodeProcess>;
}

export type Reply = Record<string, unknown> & { error: string };

/** A plain `nats` client speaking mq9: one request, the parsed JSON reply. */
export function mq9Client(nc: NatsConnection) {
  return async (
    subject: string,
    body: unknown = {},
    options: { headers?: Record<string, string>; timeout?: number } = {},
  ): Promise<Reply> => {
    let h: ReturnType<typeof natsHeaders> | undefined;
    if (options.headers) {
      h = natsHeaders();
      for (const [k, v] of Object.entries(options.headers)) h.set(k, v);
    }
    const data =
      body instanceof Uint8Array
        ? body
        : new TextEncoder().encode(typeof body === "string" ? body : JSON.stringify(body));
    const msg = await nc.request(subject, data, { timeout: options.timeout ?? 5_000, headers: h });
    return JSON.parse(new TextDecoder().decode(msg.data)) as Reply;
  };
}

export function connectTo(servers: string[]): Promise<NatsConnection> {
  return connect({ servers, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
}

/** Decoded payloads of a FETCH/QUERY reply. */
export function payloads(reply: Reply): string[] {
  return ((reply.messages ?? []) as { payload: string }[]).map((m) =>
    Buffer.from(m.payload, "base64").toString(),
  );
}

export function ids(reply: Reply): number[] {
  return ((reply.messages ?? []) as { msg_id: number }[]).map((m) => m.msg_id);
}

/** Requests a node answered, by operation, read from its /metrics. */
export async function answered(node: Mq9NodeProcess, op: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${node.httpPort}/metrics`)).text();
  let total = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith("mq9_requests_total{") && line.includes(`op="${op}"`))
      total += Number(line.split(" ").pop());
  }
  return total;
}

/**
 * A TCP proxy to a nats-server whose connections can be cut, as a crashed client host or a pulled
 * cable would: cut() resets both sides at once and takes no new connection.
 */
export async function cuttableProxy(port: number): Promise<{ url: string; cut(): void }> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = tcpConnect(port, "127.0.0.1");
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => sockets.delete(socket));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port: proxyPort } = server.address() as { port: number };
  return {
    url: `nats://127.0.0.1:${proxyPort}`,
    cut() {
      server.close();
      for (const socket of sockets) socket.resetAndDestroy();
    },
  };
}

/**
 * The subjects a nats-server knows subscriptions for: its clients' (only those of the client
 * named `client`, when given) and, without `client`, those its routes told it of.
 */
export async function knownSubjects(monitorPort: number, client?: string): Promise<string[]> {
  const get = async (path: string) => (await fetch(`http://127.0.0.1:${monitorPort}${path}`)).json();
  type Holder = { name?: string; subscriptions_list?: string[] };
  const connz = (await get("/connz?subs=1")) as { connections?: Holder[] };
  const clients = (connz.connections ?? []).filter((c) => client === undefined || c.name === client);
  const routes = client === undefined ? ((await get("/routez?subs=1")) as { routes?: Holder[] }).routes : [];
  return [...clients, ...(routes ?? [])].flatMap((c) => c.subscriptions_list ?? []);
}

export async function eventually<T>(
  check: () => Promise<T | undefined | false>,
  timeoutMs = 20_000,
  what = "condition",
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
