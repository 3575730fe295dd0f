import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type RegistrySettings, registryFactory } from "@mq9/registry";
import { freshSchema, postgresMissing, usePrivatePostgres } from "@mq9/testkit";
import { type ConnectionOptions, connect, type NatsConnection, headers as natsHeaders } from "nats";
import { describe } from "vitest";
import { Broker, type BrokerOptions } from "../src/index.js";
import { PostgresStore } from "../src/store/postgres/postgres-store.js";

export type Body = Record<string, unknown> | string | Uint8Array | undefined;

export interface TestBroker {
  broker: Broker;
  nc: NatsConnection;
  url: string;
  dataDir: string;
  /** A fresh extra client; with users configured, the first user's unless `credentials` say otherwise. */
  client(credentials?: ConnectionOptions): Promise<NatsConnection>;
  /** An mq9 request; returns the parsed JSON reply. */
  request<T = Record<string, unknown>>(
    subject: string,
    body?: Body,
    options?: { headers?: Record<string, string>; nc?: NatsConnection; timeout?: number },
  ): Promise<T & { error: string }>;
  close(): Promise<void>;
}

export function encodeBody(body: Body): Uint8Array {
  if (body === undefined) return new Uint8Array();
  if (body instanceof Uint8Array) return body;
  return new TextEncoder().encode(typeof body === "string" ? body : JSON.stringify(body));
}

export function tempDir(prefix = "mq9-test-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Broker options, with the agent registry's settings (default: on) or `false` for a broker without one. */
export type TestBrokerOptions = Omit<BrokerOptions, "registry"> & { registry?: RegistrySettings | false };

/** Starts a real broker on a free port with a fresh data directory, plus one connected client. */
export async function startTestBroker(options: TestBrokerOptions = {}): Promise<TestBroker> {
  const dataDir = options.dataDir ?? tempDir();
  const registry = options.registry === false ? undefined : registryFactory(options.registry);
  const broker = await Broker.start({ port: 0, dataDir, sweepIntervalMs: 100, ...options, registry });
  const url = `127.0.0.1:${broker.port}`;
  const clients: NatsConnection[] = [];
  const client = async (credentials?: ConnectionOptions) => {
    const first = options.auth?.users?.[0];
    const { token, user, password: pass } = first ?? options.auth ?? {};
    const nc = await connect({ servers: url, token, user, pass, ...credentials });
    clients.push(nc);
    return nc;
  };
  const nc = await client();
  return {
    broker,
    nc,
    url,
    dataDir,
    client,
    async request(subject, body, opts = {}) {
      let hdrs: ReturnType<typeof natsHeaders> | undefined;
      if (opts.headers) {
        hdrs = natsHeaders();
        for (const [k, v] of Object.entries(opts.headers)) hdrs.set(k, v);
      }
      const reply = await (opts.nc ?? nc).request(subject, encodeBody(body), {
        timeout: opts.timeout ?? 10_000,
        headers: hdrs,
      });
      return JSON.parse(new TextDecoder().decode(reply.data));
    },
    async close() {
      await Promise.all(clients.map((c) => c.close().catch(() => {})));
      await broker.close();
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Decodes FETCH/QUERY items' base64 payloads to text. */
export function texts(reply: Record<string, unknown>): string[] {
  const items = (reply.messages ?? []) as { payload: string }[];
  return items.map((m) => Buffer.from(m.payload, "base64").toString("utf8"));
}

/** Starts a test broker on one kind of store. */
export type StartTestBroker = (options?: TestBrokerOptions) => Promise<TestBroker>;

/**
 * Declares a protocol suite twice: on the embedded store, and on the PostgreSQL store that cluster
 * mode shares (a private server, a fresh schema per broker), where PostgreSQL is installed.
 */
export function onEachStore(suite: (startBroker: StartTestBroker) => void): void {
  describe("embedded store", () => suite(startTestBroker));
  const missing = postgresMissing();
  describe.skipIf(missing !== undefined)(`PostgreSQL store${missing ? ` (skipped: ${missing})` : ""}`, () => {
    const db = usePrivatePostgres();
    suite(async (options = {}) => {
      const store = await PostgresStore.open({ url: db.pg.url, schema: freshSchema(), poolSize: 4 });
      return startTestBroker({ ...options, store });
    });
  });
}
