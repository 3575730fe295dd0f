// `mq9 serve --cluster` processes (scripts/local-cluster/mq9-node.js) for the CLI's cluster tests,
// plus plain `nats` clients speaking the mq9 protocol. The nats-servers and the private PostgreSQL
// they join come from @mq9/testkit (startNatsServers, startPrivatePostgres).
import { createServer, type Socket, connect as tcpConnect } from "node:net";
import { type Body, mq9Request } from "@mq9/testkit";
import { connect, type NatsConnection } from "nats";
import { expect } from "vitest";
import { startMq9Node } from "../../../scripts/local-cluster/mq9-node.js";

export interface Mq9NodeProcess {
  nodeId: string;
  pid: number;
  httpPort: number;
  /** The embedded listener's port: a broker on PostgreSQL started without `nats`. */
  port?: number;
  output(): string;
  kill(signal?: string): Promise<void>;
  stop(): Promise<void>;
  exited: Promise<{ code: number | null; signal: string | null }>;
}

/** Flags that keep a test node light: no orchestrator, no embedder model to load. */
export const LIGHT_NODE = ["--orchestrator", "off", "--registry-embedder", "none", "--log-level", "info"];

export function startNode(options: {
  /** Without one, the node's default id. */
  nodeId?: string;
  /** Without them: one broker on PostgreSQL with its own listener (see `port`). */
  nats?: string[];
  postgres: string;
  httpPort?: number;
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
  return (
    subject: string,
    body: unknown = {},
    options: { headers?: Record<string, string>; timeout?: number } = {},
  ): Promise<Reply> => mq9Request(nc, subject, body as Body, { timeout: 5_000, ...options });
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
 * A TCP proxy on loopback whose connections can be cut, as a crashed client host or a pulled
 * cable would (cut(): both sides reset, no new connection taken), or moved to another port, as
 * a virtual IP or DNS name follows a database's new primary (switchTo(): open connections reset,
 * new ones go to the new port). muteRepliesAfter(marker) drops what the server sends once a
 * client has sent those bytes, while requests still reach it, as a link that fails one way: with
 * PostgreSQL's "COMMIT\0", that COMMIT is done and never answered.
 */
export async function tcpProxy(port: number): Promise<{
  port: number;
  url: string;
  cut(): void;
  switchTo(port: number): void;
  muteRepliesAfter(marker: string): void;
  close(): Promise<void>;
}> {
  const sockets = new Set<Socket>();
  let target = port;
  let muted = false;
  let armed: Buffer | undefined;
  const server = createServer((client) => {
    const upstream = tcpConnect(target, "127.0.0.1");
    const pair = [client, upstream];
    for (const socket of pair) {
      sockets.add(socket);
      socket.on("error", () => {});
      // One side gone: the other goes too, as through a real link.
      socket.on("close", () => {
        sockets.delete(socket);
        for (const other of pair) if (!other.destroyed) other.resetAndDestroy();
      });
    }
    client.on("data", (chunk: Buffer) => {
      upstream.write(chunk);
      if (armed !== undefined && chunk.includes(armed)) {
        muted = true;
        armed = undefined;
      }
    });
    upstream.on("data", (chunk: Buffer) => {
      if (!muted) client.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port: proxyPort } = server.address() as { port: number };
  const resetAll = () => {
    for (const socket of sockets) socket.resetAndDestroy();
  };
  return {
    port: proxyPort,
    url: `nats://127.0.0.1:${proxyPort}`,
    cut() {
      server.close();
      resetAll();
    },
    switchTo(next: number) {
      target = next;
      muted = false;
      armed = undefined;
      resetAll();
    },
    muteRepliesAfter(marker: string) {
      armed = Buffer.from(marker);
    },
    close: () =>
      new Promise<void>((resolve) => {
        resetAll();
        server.close(() => resolve());
      }),
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

type Via = ReturnType<typeof mq9Client>;

/** Sends `count` messages `inFlight` at a time; resolves with what each SEND got, and how often each error came. */
export async function sendLoad(
  via: Via,
  mailbox: string,
  count: number,
  inFlight: number,
  onProgress?: (acked: number) => void,
) {
  const acked = new Map<string, number>();
  const failed: string[] = [];
  const errors = new Map<string, number>();
  const tally = (error: string) => errors.set(error, (errors.get(error) ?? 0) + 1);
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < count) {
        const body = `m${next++}`;
        try {
          const reply = await via(`$mq9.AI.MSG.SEND.${mailbox}`, body);
          if (reply.error === "" && typeof reply.msg_id === "number") acked.set(body, reply.msg_id);
          else {
            failed.push(body);
            tally(reply.error);
          }
        } catch (err) {
          failed.push(body);
          tally(`(client) ${(err as Error).message}`);
        }
        onProgress?.(acked.size);
      }
    }),
  );
  return { acked, failed, errors };
}

/** Every message of a mailbox, read through a fresh group. */
export async function everything(via: Via, mailbox: string) {
  const group = `verify-${Math.random().toString(36).slice(2)}`;
  const stored: { id: number; body: string }[] = [];
  for (;;) {
    const reply: Reply = await via(`$mq9.AI.MSG.FETCH.${mailbox}`, {
      group_name: group,
      deliver: "earliest",
      config: { num_msgs: 500, max_wait_ms: 0 },
    });
    const got = ids(reply);
    if (got.length === 0) return stored;
    for (const [i, body] of payloads(reply).entries()) stored.push({ id: got[i], body });
    await via(`$mq9.AI.MSG.ACK.${mailbox}`, { group_name: group, msg_id: got[got.length - 1] });
  }
}

/** Each acknowledged SEND is stored once under its msg_id; whatever else is stored is there once too. */
export function expectStoredOnce(acked: Map<string, number>, stored: { id: number; body: string }[]): void {
  const byBody = new Map<string, number[]>();
  for (const { id, body } of stored) byBody.set(body, [...(byBody.get(body) ?? []), id]);
  for (const [body, id] of acked) expect(byBody.get(body), body).toEqual([id]);
  for (const [body, found] of byBody) expect(found, body).toHaveLength(1);
  expect(new Set(stored.map((s) => s.id)).size).toBe(stored.length);
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
