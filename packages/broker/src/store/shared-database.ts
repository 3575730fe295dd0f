import type pg from "pg";
import type { Logger } from "../logger.js";
import type { ClusterLock, HeldDuties } from "./postgres/cluster-lock.js";

/**
 * The database that the brokers sharing a store share (Store.sharedDatabase), as the layers
 * above the store use it: a cluster node joins under its cluster's name and lists the
 * once-per-cluster works it holds, the CLI takes the orchestrator's lock, and the registry keeps
 * its tables in it. PostgreSQL is the only shared database so far (`kind`); another kind joins
 * this type, and the registry then needs a RegistryStore of that kind.
 */
export interface SharedDatabase {
  readonly kind: "postgres";
  /** The name of the mq9 cluster whose state the database holds: random, fixed at its creation. */
  clusterId(): Promise<string>;
  /** A once-per-cluster lock: one holder at a time among the brokers on this database. */
  clusterLock(name: string, what: string): ClusterLock;
  /**
   * Ends the database sessions of another node process (a hung node's, by its instance), which
   * frees its once-per-cluster locks; resolves to how many were ended.
   */
  endSessionsOf(instance: string): Promise<number>;
  /** The once-per-cluster works this process holds now, for the cluster's roster of nodes. */
  readonly duties: HeldDuties;
  /** Connections to the database (the store's own pool); close its users before the store. */
  readonly pool: pg.Pool;
  /** The PostgreSQL schema the store's tables are in; higher layers add theirs there. */
  readonly schema: string;
  readonly logger: Logger;
  /** Describes the database in errors (host:port/db). */
  readonly where: string;
}
