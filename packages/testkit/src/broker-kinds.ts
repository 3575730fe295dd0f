// The three kinds of test broker, each with what it needs started once per test file: nothing
// (embedded), a private PostgreSQL, or a private PostgreSQL and routed nats-servers (cluster).
import { afterAll, describe } from "vitest";
import {
  type PostgresPlacement,
  startBroker,
  startBrokerCluster,
  startPostgresBroker,
  type TestBroker,
  type TestBrokerOptions,
} from "./broker.js";
import { NatsServerPool, natsServerMissing } from "./nats-servers.js";
import { postgresMissing, usePrivatePostgres } from "./private-postgres.js";

/** `embedded`: SQLite in a data dir; `postgres`: the shared store; `cluster`: nodes behind nats-servers. */
export type BrokerKind = "embedded" | "postgres" | "cluster";

export const BROKER_KINDS: readonly BrokerKind[] = ["embedded", "postgres", "cluster"];

/** Starts a test broker of one kind. */
export type StartTestBroker = (options?: TestBrokerOptions) => Promise<TestBroker>;

/** Why brokers of this kind cannot run here, or undefined; with CI set, a missing binary fails. */
export function brokerKindMissing(kind: BrokerKind): string | undefined {
  if (kind === "embedded") return undefined;
  const missing = postgresMissing();
  if (kind === "postgres" || missing) return missing;
  return natsServerMissing();
}

/**
 * Call in a `describe` (it adds that file's hooks): starts what brokers of `kind` need before the
 * tests — a private PostgreSQL, plus routed nats-servers for a cluster — and stops it after them.
 * Each broker gets a fresh schema; a cluster has `nodes` nodes (default 2), each on its own
 * nats-server of a routed set that no other running test cluster uses.
 */
export function useTestBrokers(
  kind: BrokerKind,
  placement: PostgresPlacement & { nodes?: number } = {},
): StartTestBroker {
  if (kind === "embedded") return (options) => startBroker(options);
  const db = usePrivatePostgres();
  if (kind === "postgres") return (options) => startPostgresBroker(db.pg.url, options, placement);
  const pool = new NatsServerPool();
  afterAll(() => pool.stop(), 60_000);
  return async (options) => {
    const nats = await pool.take(placement.nodes ?? 2);
    try {
      const t = await startBrokerCluster(db.pg.url, nats.urls, options, placement);
      const close = t.close;
      t.close = async () => {
        await close();
        nats.release();
      };
      return t;
    } catch (err) {
      nats.release();
      throw err;
    }
  };
}

/** Where a suite's brokers run: `cluster` for nodes behind nats-servers, which do not see their clients' sockets. */
export interface BrokerPlacement {
  kind: BrokerKind;
  store: "sqlite" | "postgres";
  cluster: boolean;
}

/**
 * Declares a suite once per kind of broker: embedded; on the PostgreSQL store that cluster mode
 * shares; and as two cluster nodes on that store behind a routed pair of nats-servers, where
 * clients connect to the nats-servers as agents do. A kind that cannot run here is skipped,
 * saying why.
 */
export function onEachBrokerKind(suite: (start: StartTestBroker, where: BrokerPlacement) => void): void {
  const titles: Record<BrokerKind, string> = {
    embedded: "embedded store",
    postgres: "PostgreSQL store",
    cluster: "two cluster nodes",
  };
  for (const kind of BROKER_KINDS) {
    const missing = brokerKindMissing(kind);
    describe.skipIf(missing !== undefined)(
      `${titles[kind]}${missing ? ` (skipped: ${missing})` : ""}`,
      () => {
        const where: BrokerPlacement = {
          kind,
          store: kind === "embedded" ? "sqlite" : "postgres",
          cluster: kind === "cluster",
        };
        suite(useTestBrokers(kind), where);
      },
    );
  }
}
