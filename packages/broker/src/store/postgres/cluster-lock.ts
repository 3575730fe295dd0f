import pg from "pg";
import type { Logger } from "../../logger.js";
import { describeDatabase, postgresError } from "./postgres-errors.js";

/** The once-per-cluster works (expiry, orchestrator…) whose locks this process holds now. */
export class HeldDuties {
  private readonly held = new Set<string>();
  private readonly known = new Set<string>();

  /** What a lock tells when it is taken or lost, listed under `duty`. */
  of(duty: string): DutyHolder {
    this.known.add(duty);
    return {
      holding: (holding) => {
        if (holding) this.held.add(duty);
        else this.held.delete(duty);
      },
    };
  }

  list(): string[] {
    return [...this.held].sort();
  }

  /** Every duty a lock was made for, held or not. */
  all(): string[] {
    return [...this.known].sort();
  }
}

export interface DutyHolder {
  holding(holding: boolean): void;
}

/**
 * A PostgreSQL session-level advisory lock held on a connection of its own: whoever holds it
 * does the cluster's once-only background work. The server releases it when that connection
 * ends, so a node that dies (or is cut off) hands the work over without anyone's help; the
 * others try again each time they ask.
 */
export class ClusterLock {
  private client?: pg.Client;
  private connecting?: Promise<boolean>;
  private holding = false;
  private closed = false;
  private probe?: NodeJS.Timeout;
  /** The server process of the session that took the lock: it must stay the same. */
  private sessionPid?: number;
  private toldShared = false;
  /** The last failure told, so a lock that cannot connect says why once, not every second. */
  private toldFailure?: string;
  private readonly where: string;
  private readonly lostListeners: (() => void)[] = [];

  constructor(
    private readonly config: pg.ClientConfig,
    /** Names the lock; hashed to the 32-bit key PostgreSQL uses. */
    private readonly name: string,
    private readonly logger: Logger,
    private readonly what: string,
    private readonly duty?: DutyHolder,
  ) {
    this.where = describeDatabase(config.connectionString ?? "");
  }

  /** Whether this process holds the lock now, taking it when it is free. Never throws. */
  async held(): Promise<boolean> {
    if (this.closed) return false;
    if (this.holding && this.client) return true;
    this.connecting ??= this.tryTake().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  /**
   * Calls `listener` whenever the lock is lost (its connection failed). While it is held, the
   * connection is probed every `probeMs`, so a holder cut off from the database stops its work
   * about when the server lets another node take the lock.
   */
  onLost(listener: () => void, probeMs = 2_000): void {
    this.lostListeners.push(listener);
    this.probe ??= setInterval(() => {
      const client = this.client;
      if (!this.holding || !client) return;
      client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid").then(
        ({ rows }) => {
          if (rows[0]?.pid === this.sessionPid) return;
          this.sharedSession("its statements now reach another PostgreSQL session");
          void this.lost(client);
        },
        () => this.lost(client),
      );
    }, probeMs);
    this.probe.unref();
  }

  /**
   * Gives the lock up for good, telling the listeners of onLost that it is gone (so the work it
   * guarded stops here) and letting another broker take it.
   */
  async surrender(): Promise<void> {
    const client = this.client;
    if (client && this.holding) {
      // Unlocked before the listeners hear of it, so the lock is free by the time this resolves.
      await client.query("SELECT pg_advisory_unlock(hashtext($1))", [this.name]).catch(() => {});
    }
    if (client) await this.lost(client);
    await this.close();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.probe);
    await this.connecting?.catch(() => {});
    const client = this.client;
    this.client = undefined;
    this.setHolding(false);
    await client?.end().catch(() => {});
  }

  private async tryTake(): Promise<boolean> {
    try {
      if (!this.client) {
        const client = new pg.Client({ ...this.config, keepAlive: true });
        client.on("error", () => void this.lost(client));
        client.on("end", () => void this.lost(client));
        await client.connect();
        if (this.closed) {
          await client.end();
          return false;
        }
        this.client = client;
      }
      // One statement, so a pooler cannot put the look and the take on different sessions. A
      // connection of our own that holds no lock holds no advisory lock at all: one it "holds"
      // belongs to another client sharing the session, and taking ours there would succeed
      // for both (session locks are re-entrant).
      const { rows } = await this.client.query<{ others: number; taken: boolean; pid: number }>(
        `WITH here AS MATERIALIZED (
           SELECT count(*)::int AS others FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid())
         SELECT others, CASE WHEN others = 0 THEN pg_try_advisory_lock(hashtext($1)) ELSE false END AS taken,
                pg_backend_pid() AS pid
         FROM here`,
        [this.name],
      );
      if ((rows[0]?.others ?? 0) > 0)
        this.sharedSession("its session holds advisory locks this broker never took");
      const taken = rows[0]?.taken === true;
      if (taken) this.sessionPid = rows[0]?.pid;
      this.toldFailure = undefined;
      if (taken && !this.holding) {
        this.logger.info(`this broker now runs ${this.what} for every broker on this database`);
      }
      this.setHolding(taken);
      return taken;
    } catch (err) {
      if (this.client) void this.lost(this.client);
      const why = postgresError(err, `cannot take the lock for ${this.what}`, this.where).message;
      if (why !== this.toldFailure) {
        this.toldFailure = why;
        this.logger.warn(`${why}; another broker may run it, this one tries again`);
      }
      return false;
    }
  }

  private async lost(client: pg.Client): Promise<void> {
    if (this.client !== client) return;
    const wasHolding = this.holding;
    if (wasHolding && !this.closed) {
      this.logger.warn(
        `lost the connection holding the lock for ${this.what}; another broker on this database takes over`,
      );
    }
    this.client = undefined;
    this.setHolding(false);
    if (wasHolding) for (const listener of this.lostListeners) listener();
    await client.end().catch(() => {});
  }

  /** A transaction-mode pooler hands one session to many clients: session locks mean nothing there. */
  private sharedSession(sign: string): void {
    if (this.toldShared) return;
    this.toldShared = true;
    this.logger.error(
      `the lock connection for ${this.what} is not a PostgreSQL session of its own (${sign}): a transaction-mode pooler sits between mq9 and PostgreSQL, so this broker does not run ${this.what}; point --postgres at PostgreSQL itself or at a session-mode pooler (docs/cluster.md, Sizing)`,
    );
  }

  private setHolding(holding: boolean): void {
    this.holding = holding;
    this.duty?.holding(holding);
  }
}
