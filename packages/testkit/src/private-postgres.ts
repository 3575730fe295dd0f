// A private PostgreSQL per test file (scripts/local-cluster/private-postgres.js), and a fresh
// schema per store or registry so tests never see each other's rows.
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll } from "vitest";
import { repoRoot } from "./sample-agents.js";

/** A streaming-replication standby of a private PostgreSQL. */
export interface PostgresStandby {
  url: string;
  port: number;
  query(sql: string): Promise<string>;
  promote(): Promise<void>;
  kill(): Promise<void>;
}

export interface PrivatePostgres {
  url: string;
  port: number;
  host: string;
  dataDir: string;
  /** Runs SQL through psql as the superuser, in `db` (default the one of `url`). */
  query(sql: string, db?: string): Promise<string>;
  startStandby(options?: { synchronous?: boolean }): Promise<PostgresStandby>;
  start(): Promise<void>;
  pause(): Promise<void>;
  kill(): Promise<void>;
  stop(): Promise<void>;
}

interface PrivatePostgresScript {
  findPostgresBin(): string | undefined;
  startPrivatePostgres(options: { fsync?: boolean }): Promise<PrivatePostgres>;
  serverUser(): Promise<{ uid: number; gid: number } | undefined>;
}

// The script is plain JavaScript shared with the benchmarks and `npm run cluster:up`.
const script = (await import(
  pathToFileURL(join(repoRoot, "scripts/local-cluster/private-postgres.js")).href
)) as PrivatePostgresScript;

/**
 * The `postgres` OS user's ids when we are root (the private PostgreSQL, and PgBouncer, run as
 * that user), for the files they must own; undefined when we are not root.
 */
export function postgresOsUser(): Promise<{ uid: number; gid: number } | undefined> {
  return script.serverUser();
}

/**
 * Why PostgreSQL tests cannot run here, or undefined when they can. With CI set a missing
 * PostgreSQL is a failure (the binaries are a listed OS package), not a skip.
 */
export function postgresMissing(): string | undefined {
  if (script.findPostgresBin()) return undefined;
  const reason = "PostgreSQL binaries not found (apt-get install postgresql-15, or set MQ9_PG_BIN)";
  if (process.env.CI) throw new Error(`CI: ${reason}`);
  return reason;
}

/** Starts a private PostgreSQL on a free port; the caller stops it. */
export function startPrivatePostgres(options: { fsync?: boolean } = {}): Promise<PrivatePostgres> {
  return script.startPrivatePostgres(options);
}

/** Starts a private PostgreSQL before the file's tests and stops it after them. */
export function usePrivatePostgres(options: { fsync?: boolean } = {}): { readonly pg: PrivatePostgres } {
  const holder: { pg?: PrivatePostgres } = {};
  beforeAll(async () => {
    holder.pg = await startPrivatePostgres(options);
  }, 120_000);
  afterAll(async () => {
    await holder.pg?.stop();
  }, 60_000);
  return {
    get pg() {
      if (!holder.pg) throw new Error("PostgreSQL has not started");
      return holder.pg;
    },
  };
}

let schemas = 0;

/** A schema name no other user of this process's PostgreSQL takes. */
export function freshSchema(): string {
  schemas += 1;
  return `t${process.pid}_${schemas}`;
}
