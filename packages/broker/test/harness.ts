import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type RegistrySettings, registryFactory } from "@mq9/registry";
import { freshSchema, postgresMissing, usePrivatePostgres } from "@mq9/testkit";
import { type ConnectionOptions, connect, type NatsConnection, headers as natsHeaders } from "nats";
import { afterAll, describe } from "vitest";
import { findNatsServer, startNatsCluster } from "../../../scripts/local-cluster/nats-cluster.js";
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

/** The registry a test broker gets: its settings (default: on), or none for `registry: false`. */
function testRegistry(options: TestBrokerOptions) {
  return options.registry === false ? undefined : registryFactory(options.registry);
}

/** Starts a real broker on a free port with a fresh data directory, plus one connected client. */
export async function startTestBroker(options: TestBrokerOptions = {}): Promise<TestBroker> {
  const dataDir = options.dataDir ?? tempDir();
  const broker = await Broker.start({
    port: 0,
    dataDir,
    sweepIntervalMs: 100,
    ...options,
    registry: testRegistry(options),
  });
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
    request: (subject, body, opts = {}) => requestJson(opts.nc ?? nc, subject, body, opts),
    async close() {
      await Promise.all(clients.map((c) => c.close().catch(() => {})));
      await broker.close();
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** An mq9 request with optional headers; the reply's JSON. */
async function requestJson(
  nc: NatsConnection,
  subject: string,
  body: Body,
  opts: { headers?: Record<string, string>; timeout?: number },
) {
  let hdrs: ReturnType<typeof natsHeaders> | undefined;
  if (opts.headers) {
    hdrs = natsHeaders();
    for (const [k, v] of Object.entries(opts.headers)) hdrs.set(k, v);
  }
  const reply = await nc.request(subject, encodeBody(body), {
    timeout: opts.timeout ?? 10_000,
    headers: hdrs,
  });
  return JSON.parse(new TextDecoder().decode(reply.data));
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Decodes FETCH/QUERY items' base64 payloads to text. */
export function texts(reply: Record<string, unknown>): string[] {
  const items = (reply.messages ?? []) as { payload: string }[];
  return items.map((m) => Buffer.from(m.payload, "base64").toString("utf8"));
}

/** Starts a test broker on one kind of store. */
export type StartTestBroker = (options?: TestBrokerOptions) => Promise<TestBroker>;

/** Where a suite's brokers run: `cluster` for nodes behind nats-servers, which do not see their clients' sockets. */
export interface BrokerPlacement {
  store: "sqlite" | "postgres";
  cluster: boolean;
}

/**
 * Declares a protocol suite three times: on the embedded store; on the PostgreSQL store that
 * cluster mode shares (a private server, a fresh schema per broker); and through two cluster
 * nodes on that store, each attached to its own nats-server of a routed pair, where the clients
 * connect to the nats-servers as agents do (NATS hands each request to either node).
 */
export function onEachStore(suite: (startBroker: StartTestBroker, where: BrokerPlacement) => void): void {
  describe("embedded store", () => suite(startTestBroker, { store: "sqlite", cluster: false }));
  const missing = postgresMissing();
  describe.skipIf(missing !== undefined)(`PostgreSQL store${missing ? ` (skipped: ${missing})` : ""}`, () => {
    const db = usePrivatePostgres();
    suite(
      async (options = {}) => {
        const store = await PostgresStore.open({ url: db.pg.url, schema: freshSchema(), poolSize: 4 });
        return startTestBroker({ ...options, store });
      },
      { store: "postgres", cluster: false },
    );
  });
  const noNats = findNatsServer() ? undefined : "not installed: nats-server (apt-get install nats-server)";
  if (noNats && process.env.CI) throw new Error(`CI: ${noNats}`);
  const noCluster = missing ?? noNats;
  describe.skipIf(noCluster !== undefined)(
    `two cluster nodes${noCluster ? ` (skipped: ${noCluster})` : ""}`,
    () => {
      const db = usePrivatePostgres();
      const pairs = new NatsPairs();
      afterAll(() => pairs.stop(), 60_000);
      suite((options = {}) => startTestCluster(db.pg.url, pairs, options), {
        store: "postgres",
        cluster: true,
      });
    },
  );
}

/**
 * Routed pairs of nats-servers, one per test cluster running at a time: two mq9 clusters on one
 * NATS cluster would both answer every request, whatever their queue groups. A pair is started
 * when every one started so far is in use, and serves the next test cluster once it is free.
 */
class NatsPairs {
  private readonly pairs: { urls: string[]; stop(): Promise<void>; busy: boolean }[] = [];

  async take(): Promise<{ urls: string[]; release(): void }> {
    let pair = this.pairs.find((p) => !p.busy);
    if (!pair) {
      pair = { ...(await startNatsCluster({ size: 2 })), busy: false };
      this.pairs.push(pair);
    }
    const taken = pair;
    taken.busy = true;
    return {
      urls: taken.urls,
      release: () => {
        taken.busy = false;
      },
    };
  }

  async stop(): Promise<void> {
    await Promise.all(this.pairs.map((p) => p.stop()));
  }
}

/**
 * Two brokers in cluster mode on one fresh schema, node a on the first nats-server of a pair and
 * b on the second; the test's clients connect to the nats-servers, the first one to a's.
 * `broker` is node a.
 */
async function startTestCluster(
  postgresUrl: string,
  pairs: NatsPairs,
  options: TestBrokerOptions,
): Promise<TestBroker> {
  const schema = freshSchema();
  const nats = await pairs.take();
  const natsUrls = nats.urls;
  const dataDir = tempDir();
  const node = async (nodeId: string, server: string) =>
    Broker.start({
      dataDir,
      sweepIntervalMs: 100,
      ...options,
      registry: testRegistry(options),
      store: await PostgresStore.open({ url: postgresUrl, schema, poolSize: 4 }),
      cluster: { servers: [server], nodeId },
    });
  const brokers = [await node("a", natsUrls[0]), await node("b", natsUrls[1])];
  const clients: NatsConnection[] = [];
  const client = async (credentials?: ConnectionOptions) => {
    const nc = await connect({ servers: natsUrls[clients.length % natsUrls.length], ...credentials });
    clients.push(nc);
    return nc;
  };
  const nc = await client();
  return {
    broker: brokers[0],
    nc,
    url: natsUrls[0],
    dataDir,
    client,
    request: (subject, body, opts = {}) => requestJson(opts.nc ?? nc, subject, body, opts),
    async close() {
      await Promise.all(clients.map((c) => c.close().catch(() => {})));
      await Promise.all(brokers.map((b) => b.close()));
      nats.release();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
