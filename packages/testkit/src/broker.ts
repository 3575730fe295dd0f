// Test brokers of every kind with one shape: embedded (SQLite), on PostgreSQL, and as a cluster
// of nodes on real nats-servers sharing PostgreSQL. Each is the real Broker; nothing is mocked.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker, type BrokerOptions } from "@mq9/broker";
import { PostgresStore } from "@mq9/broker/internal";
import { type ConnectOptions, connect, type Mq9Client } from "@mq9/client";
import { type RegistrySettings, registryFactory } from "@mq9/registry";
import { type ConnectionOptions, type NatsConnection, connect as natsConnect } from "nats";
import { type Body, type Mq9RequestOptions, mq9Request } from "./mq9-requests.js";
import { freshSchema } from "./private-postgres.js";

export interface TestBroker {
  /** The broker; a cluster's first node. */
  broker: Broker;
  /** Every node: one for an embedded or PostgreSQL broker. */
  brokers: Broker[];
  /** Where clients connect: the embedded listener's port, or a cluster's first nats-server's. */
  port: number;
  /** `mq9://127.0.0.1:<port>`, or a cluster's first `nats://` server. */
  url: string;
  /** Every address clients may connect to, as `nats` takes them (`127.0.0.1:<port>`, `nats://…`). */
  servers: string[];
  dataDir: string;
  /** An mq9 client (`@mq9/client`); closed by `close()`. */
  client(options?: ConnectOptions, url?: string | string[]): Promise<Mq9Client>;
  /**
   * A plain `nats` connection; with users configured, the first user's unless `options` say
   * otherwise. A cluster's connections take its nats-servers in turn. Closed by `close()`.
   */
  nats(options?: ConnectionOptions): Promise<NatsConnection>;
  /** The connection `request` uses by default, opened on first use. */
  connection(): Promise<NatsConnection>;
  /** An mq9 request from a plain `nats` client; the reply's JSON. */
  request<T = Record<string, unknown>>(
    subject: string,
    body?: Body,
    options?: Mq9RequestOptions & { nc?: NatsConnection },
  ): Promise<T & { error: string }>;
  /** Stops the broker (every node); clients see a lost connection. */
  stop(): Promise<void>;
  /** Starts it again on the same ports, data directory and store, with `options` added. */
  start(options?: TestBrokerOptions): Promise<void>;
  close(): Promise<void>;
}

/** A test broker with its default `nats` connection open, as `nc`. */
export interface ConnectedTestBroker extends TestBroker {
  /** The connection `request` uses. */
  nc: NatsConnection;
}

/** Opens a starting broker's default connection: `connected(startBroker())`. */
export async function connected(starting: Promise<TestBroker>): Promise<ConnectedTestBroker> {
  const t = await starting;
  return Object.assign(t, { nc: await t.connection() });
}

/**
 * Broker options, with the agent registry's settings (default: on, the default embedder) or
 * `false` for a broker without one; `dataDir` defaults to a fresh one removed by `close()`.
 */
export type TestBrokerOptions = Omit<BrokerOptions, "registry"> & { registry?: RegistrySettings | false };

/** Where a PostgreSQL broker keeps its rows: a fresh schema unless named (to reopen one). */
export interface PostgresPlacement {
  schema?: string;
  /** Connections per node (default 4). */
  poolSize?: number;
  /** Cluster options every node gets besides its server and id (credentials, identity). */
  node?: Partial<NonNullable<BrokerOptions["cluster"]>>;
}

/** Starts a real embedded broker (SQLite, or the `store` given) on a free port. */
export function startBroker(options: TestBrokerOptions = {}): Promise<TestBroker> {
  return startNodes(options, [{}]);
}

/** Starts a real broker on a PostgreSQL store in a fresh schema (or `placement.schema`) of `postgresUrl`. */
export function startPostgresBroker(
  postgresUrl: string,
  options: TestBrokerOptions = {},
  placement: PostgresPlacement = {},
): Promise<TestBroker> {
  return startNodes(options, [{}], postgresStores(postgresUrl, placement));
}

/**
 * Starts one broker node in cluster mode per nats-server of `natsUrls` (each node on its own
 * server, named a, b, …), all on one fresh schema of `postgresUrl`. Clients connect to the
 * nats-servers, as agents do; NATS hands each request to any node.
 */
export function startBrokerCluster(
  postgresUrl: string,
  natsUrls: readonly string[],
  options: TestBrokerOptions = {},
  placement: PostgresPlacement = {},
): Promise<TestBroker> {
  const nodes = natsUrls.map((server, i) => ({
    cluster: { ...placement.node, servers: [server], nodeId: String.fromCharCode(97 + i) },
  }));
  return startNodes(options, nodes, postgresStores(postgresUrl, placement));
}

type OpenStore = () => Promise<PostgresStore>;

/** Opens a PostgresStore on the same schema each time (a restart reopens it). */
function postgresStores(url: string, placement: PostgresPlacement): OpenStore {
  const schema = placement.schema ?? freshSchema();
  return () => PostgresStore.open({ url, schema, poolSize: placement.poolSize ?? 4 });
}

/** The registry a test broker gets: its settings (default: on), or none for `registry: false`. */
function registryOf(options: TestBrokerOptions): BrokerOptions["registry"] {
  return options.registry === false ? undefined : registryFactory(options.registry);
}

async function startNodes(
  options: TestBrokerOptions,
  nodes: Partial<BrokerOptions>[],
  openStore?: OpenStore,
): Promise<TestBroker> {
  const ownDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "mq9-test-"));
  const clustered = nodes.some((n) => n.cluster);
  let settings: TestBrokerOptions = { ...options, dataDir };
  // One after the other, as a cluster's nodes start, so that the first is `broker`.
  const startAll = async (port: number) => {
    const started: Broker[] = [];
    for (const node of nodes) {
      started.push(
        await Broker.start({
          ...(clustered ? {} : { port }),
          sweepIntervalMs: 100,
          ...settings,
          ...node,
          ...(openStore ? { store: await openStore() } : {}),
          registry: registryOf(settings),
        }),
      );
    }
    return started;
  };
  const brokers = await startAll(0);
  const servers = clustered
    ? nodes.map((n) => String(n.cluster?.servers?.[0]))
    : [`127.0.0.1:${brokers[0].port}`];
  const port = clustered ? Number(new URL(servers[0]).port) : brokers[0].port;
  const auth = options.auth;
  const first = auth?.users?.[0];
  const { token, user, password: pass } = first ?? auth ?? {};
  const clients: Mq9Client[] = [];
  const conns: NatsConnection[] = [];
  let defaultConnection: Promise<NatsConnection> | undefined;
  const t: TestBroker = {
    broker: brokers[0],
    brokers,
    port,
    url: clustered ? servers[0] : `mq9://127.0.0.1:${port}`,
    servers,
    dataDir,
    async client(connectOptions = {}, url = t.url) {
      const client = await connect(url, connectOptions);
      clients.push(client);
      return client;
    },
    async nats(credentials = {}) {
      const server = servers[conns.length % servers.length];
      const nc = await natsConnect(
        clustered
          ? { servers: server, ...credentials }
          : { servers: server, token, user, pass, ...credentials },
      );
      conns.push(nc);
      return nc;
    },
    connection() {
      defaultConnection ??= t.nats();
      return defaultConnection;
    },
    async request(subject, body, requestOptions = {}) {
      return mq9Request(requestOptions.nc ?? (await t.connection()), subject, body, requestOptions);
    },
    async stop() {
      await Promise.all(t.brokers.map((b) => b.close({ drainTimeoutMs: 0 })));
    },
    async start(more = {}) {
      settings = { ...settings, ...more };
      const started = await startAll(port);
      t.brokers.splice(0, t.brokers.length, ...started);
      t.broker = started[0];
    },
    async close() {
      await Promise.all(clients.map((c) => c.close().catch(() => {})));
      await Promise.all(conns.map((c) => c.close().catch(() => {})));
      await Promise.all(t.brokers.map((b) => b.close()));
      if (ownDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return t;
}
