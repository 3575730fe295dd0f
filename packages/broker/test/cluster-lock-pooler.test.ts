import {
  eventually,
  pgbouncerMissing,
  postgresMissing,
  startPgBouncer,
  usePrivatePostgres,
} from "@mq9/testkit";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { ClusterLock } from "../src/store/postgres/cluster-lock.js";
import { captureLogger } from "./nats-harness.js";

const missing = postgresMissing() ?? pgbouncerMissing();

// Session-level advisory locks are re-entrant: behind a transaction-mode pooler a second broker's
// lock connection can land on the session where the first one took the lock, and "take" it too.
describe.skipIf(missing !== undefined)(
  `once-per-cluster locks behind PgBouncer${missing ? ` (skipped: ${missing})` : ""}`,
  () => {
    const db = usePrivatePostgres();

    it("a transaction-mode pooler's shared session does not give a second broker the lock", async () => {
      // One server session for every client: each lock connection's statements reach the same one.
      const bouncer = await startPgBouncer(db.pg, { poolMode: "transaction", poolSize: 1 });
      const first = captureLogger();
      const second = captureLogger();
      const a = new ClusterLock({ connectionString: bouncer.url }, "test:pooled", first, "the test duty");
      const b = new ClusterLock({ connectionString: bouncer.url }, "test:pooled", second, "the test duty");
      try {
        expect(await a.held()).toBe(true);
        expect(await b.held()).toBe(false);
        expect(await b.held()).toBe(false);
        const errors = second.entries.filter((entry) => entry.level === "error");
        expect(errors).toHaveLength(1);
        expect(String(errors[0].obj)).toContain(
          "the lock connection for the test duty is not a PostgreSQL session of its own (its session holds advisory locks this broker never took): a transaction-mode pooler sits between mq9 and PostgreSQL",
        );
      } finally {
        await a.close();
        await b.close();
        bouncer.stop();
      }
    });

    it("a holder whose statements move to another session (a transaction-mode pooler) stops its work", async () => {
      const bouncer = await startPgBouncer(db.pg, { poolMode: "transaction", poolSize: 2, roundRobin: true });
      const logger = captureLogger();
      const a = new ClusterLock({ connectionString: bouncer.url }, "test:moved", logger, "the test duty");
      const busy = new pg.Client({ connectionString: bouncer.url });
      await busy.connect();
      try {
        let lost = 0;
        a.onLost(() => lost++, 20);
        // A statement that keeps the pooler's first session busy while the lock is taken on the second.
        const sleeping = busy.query("SELECT pg_sleep(0.3)");
        await eventually(
          async () =>
            (await db.pg.query(
              "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(0.3)' AND state = 'active'",
            )) === "1",
        );
        expect(await a.held()).toBe(true);
        await sleeping;
        await eventually(() => lost === 1);
        expect(
          logger.entries.some(
            (e) =>
              e.level === "error" &&
              String(e.obj).includes("(its statements now reach another PostgreSQL session)"),
          ),
        ).toBe(true);
      } finally {
        await busy.end();
        await a.close();
        bouncer.stop();
      }
    });

    it("through a session-mode pooler each broker has a session of its own: one holds the lock, the other waits for it", async () => {
      const bouncer = await startPgBouncer(db.pg, { poolMode: "session" });
      const quiet = captureLogger();
      const a = new ClusterLock({ connectionString: bouncer.url }, "test:session", quiet, "the test duty");
      const b = new ClusterLock({ connectionString: bouncer.url }, "test:session", quiet, "the test duty");
      try {
        expect(await a.held()).toBe(true);
        expect(await b.held()).toBe(false);
        await a.close();
        // The pooler gives a's session back (and its locks up) after a has gone: b takes it then.
        await eventually(() => b.held());
        expect(quiet.entries.filter((entry) => entry.level === "error")).toEqual([]);
      } finally {
        await a.close();
        await b.close();
        bouncer.stop();
      }
    });
  },
);
