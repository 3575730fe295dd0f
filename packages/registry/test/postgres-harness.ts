// A private PostgreSQL per test file (scripts/local-cluster/private-postgres.js), and a fresh
// schema per test so tests never see each other's rows.
import { afterAll, beforeAll } from "vitest";
import { findPostgresBin, startPrivatePostgres } from "../../../scripts/local-cluster/private-postgres.js";

export interface PrivatePostgres {
  url: string;
  query(sql: string, db?: string): Promise<string>;
  stop(): Promise<void>;
}

/**
 * Why PostgreSQL tests cannot run here, or undefined when they can. With CI set a missing
 * PostgreSQL is a failure (the binaries are a listed OS package), not a skip.
 */
export function postgresMissing(): string | undefined {
  if (findPostgresBin()) return undefined;
  const reason = "PostgreSQL binaries not found (apt-get install postgresql-15, or set MQ9_PG_BIN)";
  if (process.env.CI) throw new Error(`CI: ${reason}`);
  return reason;
}

/** Starts a private PostgreSQL before the file's tests and stops it after them. */
export function usePrivatePostgres(): { readonly pg: PrivatePostgres } {
  const holder: { pg?: PrivatePostgres } = {};
  beforeAll(async () => {
    holder.pg = (await startPrivatePostgres({})) as PrivatePostgres;
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

/** A schema name no other store of this process uses. */
export function freshSchema(): string {
  schemas += 1;
  return `r${process.pid}_${schemas}`;
}
