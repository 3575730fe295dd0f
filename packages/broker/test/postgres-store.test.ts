import { freshSchema, postgresMissing, usePrivatePostgres } from "@mq9/testkit";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { ClusterLock } from "../src/store/postgres/cluster-lock.js";
import { postgresApplicationName } from "../src/store/postgres/node-sessions.js";
import {
  POSTGRES_MIGRATIONS,
  POSTGRES_SCHEMA_VERSION,
  POSTGRES_VERSION_TABLE,
} from "../src/store/postgres/postgres-schema.js";
import { PostgresStore } from "../src/store/postgres/postgres-store.js";
import type { Store } from "../src/store/store.js";
import { captureLogger } from "./nats-harness.js";
import { storeConformance } from "./store-conformance.js";

const missing = postgresMissing();
const body = (s: string) => new TextEncoder().encode(s);

describe.skipIf(missing !== undefined)(`postgres store${missing ? ` (skipped: ${missing})` : ""}`, () => {
  const db = usePrivatePostgres();
  const schemaOf = new WeakMap<Store, string>();
  /**
   * Kills PostgreSQL under load (an immediate stop discards what is in its WAL buffers and not yet
   * written), lets the workers see it and stop, and opens the schema again on a restarted server.
   */
  const crashUnder = async (store: Store, schema: string, stop: () => void, workers: Promise<unknown>[]) => {
    await db.pg.kill();
    stop();
    await Promise.all(workers);
    await store.close().catch(() => {});
    await db.pg.start();
    return PostgresStore.open({ url: db.pg.url, schema, poolSize: 2 });
  };

  storeConformance("postgres", {
    async open() {
      const schema = freshSchema();
      const store = await PostgresStore.open({ url: db.pg.url, schema, poolSize: 4 });
      schemaOf.set(store, schema);
      return store;
    },
    async reopen(previous) {
      const schema = schemaOf.get(previous)!;
      await previous.close();
      const store = await PostgresStore.open({ url: db.pg.url, schema, poolSize: 4 });
      schemaOf.set(store, schema);
      return store;
    },
  });

  describe("two brokers on one schema", () => {
    const T0 = 1_800_000_000_000;
    const openTwo = async () => {
      const schema = freshSchema();
      const a = await PostgresStore.open({ url: db.pg.url, schema, poolSize: 4 });
      const b = await PostgresStore.open({ url: db.pg.url, schema, poolSize: 4 });
      await a.createMailbox({ address: "box", ttlSeconds: 0, desc: "", createdMs: T0 }, T0);
      return { a, b };
    };

    it("concurrent SEND batches through both get distinct ids, each mailbox's in a gap-free run", async () => {
      const { a, b } = await openTwo();
      const batch = (n: number, from: string) =>
        Array.from({ length: n }, (_, i) => ({
          mailbox: "box",
          priority: "normal" as const,
          payload: body(`${from}${i}`),
          sentMs: T0,
        }));
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a : b).append(batch(5, `s${i}-`), T0)),
      );
      const ids = results.flat().map((r) => ("id" in r ? r.id : -2));
      expect([...ids].sort((x, y) => x - y)).toEqual(Array.from({ length: 100 }, (_, i) => i));
      expect(await b.nextMessageId("box")).toBe(100);
      await Promise.all([a.close(), b.close()]);
    });

    it("competing claims of one group through both never hand out the same message", async () => {
      const { a, b } = await openTwo();
      const messages = Array.from({ length: 200 }, (_, i) => ({
        mailbox: "box",
        priority: (["critical", "urgent", "normal"] as const)[i % 3],
        payload: body(`m${i}`),
        sentMs: T0,
      }));
      await a.append(messages, T0);
      const claim = {
        limit: 7,
        maxBytes: 1 << 20,
        nowMs: T0,
        start: { fromId: 0 },
        reset: false,
        leaseMs: 30_000,
      };
      const seen: number[] = [];
      const member = async (store: PostgresStore) => {
        for (;;) {
          const got = await store.claim("box", "g", claim);
          if (got.length === 0) return;
          for (const m of got) seen.push(m.id);
          if (got.length % 2 === 0) await store.ack("box", "g", got[got.length - 1].id, T0);
        }
      };
      await Promise.all([member(a), member(b), member(a), member(b)]);
      expect(seen.length).toBe(200);
      expect(new Set(seen).size).toBe(200);
      await Promise.all([a.close(), b.close()]);
    });

    it("readers stop below ids reserved by a SEND not yet stored, and pass them once it is, in order", async () => {
      const { a, b } = await openTwo();
      const schema = (a as unknown as { schema: string }).schema;
      const batch = (from: string) =>
        Array.from({ length: 3 }, (_, i) => ({
          mailbox: "box",
          priority: "normal" as const,
          payload: body(`${from}${i}`),
          sentMs: T0,
        }));
      const claim = {
        limit: 100,
        maxBytes: 1 << 20,
        nowMs: T0,
        start: { fromId: 0 },
        reset: false,
        leaseMs: 30_000,
      };
      const ids = (ms: { id: number }[]) => ms.map((m) => m.id);
      await a.append(batch("x"), T0);
      // A SEND on another node that has reserved ids 3-5 and not committed its messages yet:
      // its connection is alive, so readers wait for it.
      const slow = new pg.Client({ connectionString: db.pg.url, options: `-c search_path=${schema}` });
      await slow.connect();
      await slow.query("UPDATE mailboxes SET next_id = next_id + 3 WHERE address = 'box' RETURNING id");
      const { rows } = await slow.query<{ id: string }>("SELECT id FROM mailboxes WHERE address = 'box'");
      await slow.query("INSERT INTO append_reservations (mbox, first_id) VALUES ($1, 3)", [rows[0].id]);
      await b.append(batch("y"), T0);
      expect(ids(await b.claim("box", "g", claim))).toEqual([0, 1, 2]);
      expect(ids(await a.read("box", { fromId: 0 }, claim))).toEqual([0, 1, 2]);
      expect(ids(await a.claim("box", "g", claim))).toEqual([]);
      // Its messages commit with the reservation given up: the group takes them, then the rest.
      await slow.query("BEGIN");
      await slow.query("DELETE FROM append_reservations WHERE first_id = 3");
      await slow.query(
        `INSERT INTO messages (mbox, msg_id, priority, payload, created_ms)
         SELECT $1, i, 2, convert_to('s' || i, 'UTF8'), $2 FROM generate_series(3, 5) AS i`,
        [rows[0].id, T0],
      );
      await slow.query("COMMIT");
      expect(ids(await a.claim("box", "g", claim))).toEqual([3, 4, 5, 6, 7, 8]);
      // A reservation whose connection is gone holds nothing back: the next claim drops it.
      await slow.query("UPDATE mailboxes SET next_id = next_id + 2 WHERE address = 'box'");
      await slow.query(
        "INSERT INTO append_reservations (mbox, first_id, made) VALUES ($1, 9, clock_timestamp() - interval '2 seconds')",
        [rows[0].id],
      );
      await slow.end();
      await a.append(batch("z"), T0);
      expect(ids(await b.claim("box", "g", claim))).toEqual([11, 12, 13]);
      await Promise.all([a.close(), b.close()]);
    });

    it("a SEND batch is one transaction: neither its ids nor a reservation show before its commit", async () => {
      const { a, b } = await openTwo();
      const schema = (a as unknown as { schema: string }).schema;
      await b.createMailbox({ address: "other", ttlSeconds: 0, desc: "", createdMs: T0 }, T0);
      const send = (store: PostgresStore, mailbox: string, n: number) =>
        store.append(
          Array.from({ length: n }, (_, i) => ({
            mailbox,
            priority: "normal" as const,
            payload: body(`${mailbox}${i}`),
            sentMs: T0,
          })),
          T0,
        );
      const look = new pg.Client({ connectionString: db.pg.url, options: `-c search_path=${schema}` });
      await look.connect();
      const blocker = new pg.Client({ connectionString: db.pg.url, options: `-c search_path=${schema}` });
      await blocker.connect();
      try {
        // Holds the messages' table, so a SEND stops at its insert, after it took its ids.
        await blocker.query("BEGIN");
        await blocker.query("LOCK TABLE messages IN SHARE MODE");
        const sending = send(a, "box", 3);
        const waiting = async () =>
          (
            await look.query(
              "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'CALL mq9_send%'",
            )
          ).rowCount;
        while (!(await waiting())) await new Promise((r) => setTimeout(r, 10));
        const seen = await look.query<{ next_id: string; reserved: string }>(
          "SELECT (SELECT next_id FROM mailboxes WHERE address = 'box') AS next_id, (SELECT count(*) FROM append_reservations) AS reserved",
        );
        expect(seen.rows[0]).toEqual({ next_id: "0", reserved: "0" });
        await blocker.query("COMMIT");
        expect(await sending).toEqual([{ id: 0 }, { id: 1 }, { id: 2 }]);
        // Two stores' batches over the same mailboxes, locked in id order: none waits in a cycle,
        // and each mailbox's ids are dense and in order.
        const both = (store: PostgresStore, first: string, second: string) =>
          store.append(
            [first, second, first, second].map((mailbox) => ({
              mailbox,
              priority: "normal" as const,
              payload: body(mailbox),
              sentMs: T0,
            })),
            T0,
          );
        await Promise.all(
          Array.from({ length: 10 }, () => [both(a, "box", "other"), both(b, "other", "box")]).flat(),
        );
        const read = async (mailbox: string) =>
          (await b.read(mailbox, { fromId: 0 }, { limit: 1000, maxBytes: 1 << 24, nowMs: T0 })).map(
            (m) => m.id,
          );
        expect(await read("box")).toEqual(Array.from({ length: 43 }, (_, i) => i));
        expect(await read("other")).toEqual(Array.from({ length: 40 }, (_, i) => i));
      } finally {
        await blocker.query("ROLLBACK").catch(() => {});
        await Promise.all([look.end(), blocker.end()]);
        await Promise.all([a.close(), b.close()]);
      }
    });

    it("expiry runs on the lock holder only, and passes to the other when the holder closes", async () => {
      const { a, b } = await openTwo();
      await a.createMailbox(
        { address: "tmp", ttlSeconds: 1, desc: "", createdMs: T0, expiresMs: T0 + 1000 },
        T0,
      );
      await a.createMailbox(
        { address: "tmp2", ttlSeconds: 1, desc: "", createdMs: T0, expiresMs: T0 + 1000 },
        T0,
      );
      expect(await a.purgeExpired(T0)).toEqual({ mailboxes: [], messages: 0 });
      expect(await b.purgeExpired(T0 + 1000)).toEqual({ mailboxes: [], messages: 0 });
      expect(await b.getMailbox("tmp", T0)).toBeDefined();
      await a.close();
      const purged = await b.purgeExpired(T0 + 1000);
      expect(purged.mailboxes.sort()).toEqual(["tmp", "tmp2"]);
      await b.close();
    });
  });

  describe("a claim and an ACK of one group", () => {
    const T0 = 1_800_000_000_000;
    const claim = { limit: 10, maxBytes: 1 << 20, start: { fromId: 0 }, reset: false, leaseMs: 30_000 };
    /** A store with three messages claimed at T0, and a raw connection to the same schema. */
    const claimedThree = async () => {
      const schema = freshSchema();
      const store = await PostgresStore.open({ url: db.pg.url, schema, poolSize: 4 });
      await store.createMailbox({ address: "box", ttlSeconds: 0, desc: "", createdMs: T0 }, T0);
      await store.append(
        ["a", "b", "c"].map((p) => ({
          mailbox: "box",
          priority: "normal" as const,
          payload: body(p),
          sentMs: T0,
        })),
        T0,
      );
      const first = await store.claim("box", "g", { ...claim, nowMs: T0 });
      const raw = new pg.Client({ connectionString: db.pg.url, options: `-c search_path=${schema}` });
      await raw.connect();
      return { store, raw, first };
    };
    /** Until some backend waits on a lock (the statement under test has reached the contended row). */
    const someoneWaitsOnALock = async (raw: pg.Client) => {
      for (;;) {
        const { rows } = await raw.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()",
        );
        if (rows[0].n > 0) return;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    };

    it("an ACK does not wait for an uncommitted claim of its group", async () => {
      const { store, raw, first } = await claimedThree();
      await store.append([{ mailbox: "box", priority: "normal", payload: body("d"), sentMs: T0 }], T0);
      await raw.query("BEGIN");
      const next = await raw.query(
        "SELECT msg_id FROM mq9_claim('box', 'g', 0, $1, false, 10, 1048576, $2, NULL, NULL, NULL)",
        [T0, T0 + 30_000],
      );
      expect(next.rows.map((r) => Number(r.msg_id))).toEqual([3]);
      // The claim above holds the group's row; the ACK of the earlier claim still commits.
      expect(await store.ack("box", "g", first[2].id, T0)).toBe(true);
      await raw.query("COMMIT");
      expect(await store.groupStats("box", T0)).toMatchObject([{ name: "g", lag: 1, leased: 1 }]);
      expect(await store.claim("box", "g", { ...claim, nowMs: T0 + 30_000 })).toHaveLength(1);
      await raw.end();
      await store.close();
    });

    it("an ACK committing while a claim takes its expired lease again: the claim does not redeliver it", async () => {
      const { store, raw, first } = await claimedThree();
      await raw.query("BEGIN");
      expect(
        (await raw.query("SELECT mq9_ack('box', 'g', $1, $2) AS ok", [first[1].id, T0])).rows[0].ok,
      ).toBe(true);
      // The leases ran out: the claim finds a and b expired in its snapshot, then waits on their rows.
      const again = store.claim("box", "g", { ...claim, nowMs: T0 + 30_000 });
      await someoneWaitsOnALock(raw);
      await raw.query("COMMIT");
      expect((await again).map((m) => new TextDecoder().decode(m.payload))).toEqual(["c"]);
      expect(await store.ack("box", "g", first[0].id, T0 + 30_000)).toBe(true);
      expect(await store.groupStats("box", T0 + 30_000)).toMatchObject([{ name: "g", lag: 1, leased: 1 }]);
      await raw.end();
      await store.close();
    });
  });

  it("inspection — the HTTP API's mailbox stats, totals, group lag, purge and delete", async () => {
    const T0 = Date.now();
    const store = await PostgresStore.open({ url: db.pg.url, schema: freshSchema(), poolSize: 2 });
    await store.createMailbox({ address: "ops.box", ttlSeconds: 0, desc: "d", createdMs: T0 }, T0);
    await store.append(
      [
        { mailbox: "ops.box", priority: "critical", payload: body("aa"), sentMs: T0 },
        { mailbox: "ops.box", priority: "normal", payload: body("bbb"), sentMs: T0 + 1 },
        { mailbox: "ops.box", priority: "normal", payload: body("c"), sentMs: T0 + 2 },
        { mailbox: "ops.box", priority: "normal", payload: body("later"), sentMs: T0, dueMs: T0 + 60_000 },
      ],
      T0,
    );
    const claim = {
      limit: 2,
      maxBytes: 1 << 20,
      nowMs: T0,
      start: { fromId: 0 },
      reset: false,
      leaseMs: 30_000,
    };
    const got = await store.claim("ops.box", "g", claim);
    await store.ack("ops.box", "g", got[0].id, T0);
    const [stats] = await store.mailboxStats(T0, { search: "ops", limit: 10 });
    expect(stats).toMatchObject({
      address: "ops.box",
      depth: { critical: 1, urgent: 0, normal: 2 },
      bytes: 6,
      oldestMs: T0,
      delayed: 1,
      groups: 1,
    });
    expect(await store.mailboxStats(T0, { search: "ops", exact: true, limit: 10 })).toEqual([]);
    expect(await store.totals(T0)).toEqual({ mailboxes: 1, messages: 3, bytes: 6 });
    expect(await store.groupStats("ops.box", T0)).toMatchObject([{ name: "g", lag: 2, leased: 1 }]);
    expect(await store.purgeMailbox("ops.box", T0)).toBe(3);
    expect(await store.totals(T0)).toEqual({ mailboxes: 1, messages: 0, bytes: 0 });
    expect(await store.deleteMailbox("ops.box", T0)).toBe(true);
    expect(await store.deleteMailbox("ops.box", T0)).toBe(false);
    expect(await store.purgeMailbox("ops.box", T0)).toBeUndefined();
    await store.close();
  });

  it("lease release — an undelivered claim's leases go back to the group; ACKed and re-claimed ones stay", async () => {
    const T0 = Date.now();
    const store = await PostgresStore.open({ url: db.pg.url, schema: freshSchema(), poolSize: 2 });
    await store.createMailbox({ address: "give.back", ttlSeconds: 0, desc: "", createdMs: T0 }, T0);
    await store.append(
      ["m0", "m1", "m2", "m3"].map((p) => ({
        mailbox: "give.back",
        priority: "normal" as const,
        payload: body(p),
        sentMs: T0,
      })),
      T0,
    );
    const claim = (nowMs: number, leaseMs: number, limit = 10) =>
      store.claim("give.back", "g", {
        limit,
        maxBytes: 1 << 20,
        nowMs,
        start: { fromId: 0 },
        reset: false,
        leaseMs,
      });
    const ids = (messages: { id: number }[]) => messages.map((m) => m.id);
    expect(ids(await claim(T0, 60_000, 3))).toEqual([0, 1, 2]);
    // The requester ACKed m0 before it vanished; a lease set by another claim is not this one's.
    expect(await store.ack("give.back", "g", 0, T0)).toBe(true);
    expect(await store.releaseLeases("give.back", "g", [0, 1, 2], T0 + 59_999)).toBe(0);
    expect(await store.releaseLeases("give.back", "other", [1, 2], T0 + 60_000)).toBe(0);
    expect(await store.releaseLeases("no.such", "g", [1, 2], T0 + 60_000)).toBe(0);
    expect(await store.releaseLeases("give.back", "g", [0, 1, 2], T0 + 60_000)).toBe(2);
    // Long before the lease would have run out, another member gets m1 and m2 again, in order.
    expect(ids(await claim(T0 + 10, 60_000))).toEqual([1, 2, 3]);
    expect(await store.groupStats("give.back", T0 + 10)).toMatchObject([{ name: "g", lag: 3, leased: 3 }]);
    // A release that comes after its lease ran out and was claimed again leaves the new lease.
    expect(ids(await claim(T0 + 60_020, 1_000))).toEqual([1, 2, 3]);
    expect(await store.releaseLeases("give.back", "g", [1, 2, 3], T0 + 60_010)).toBe(0);
    expect(ids(await claim(T0 + 60_030, 1_000))).toEqual([]);
    await store.close();
  });

  it("SEND batches — their connection ended on the server is replaced; quoted names and tags arrive intact", async () => {
    const T0 = 1_800_000_000_000;
    const instance = `send-lane/${process.pid.toString(16)}a${Date.now().toString(16)}`;
    const store = await PostgresStore.open({ url: db.pg.url, schema: freshSchema(), poolSize: 2, instance });
    const admin = new pg.Client({ connectionString: db.pg.url });
    await admin.connect();
    // Every character a text[] literal must escape or quote.
    const odd = 'we"ird\\box,{x} y';
    const tags = ['a"b', "c\\d", "e,f", "NULL", ""];
    const send = (text: string, withTags?: string[]) =>
      store.append(
        [{ mailbox: odd, priority: "normal", payload: body(text), tags: withTags, sentMs: T0 }],
        T0,
      );
    try {
      await store.createMailbox({ address: odd, ttlSeconds: 0, desc: "", createdMs: T0 }, T0);
      expect(await send("m0", tags)).toEqual([{ id: 0 }]);
      // The backend that ran the SEND ends, as a server restart or a hung-node remedy ends it.
      const ended = await admin.query<{ pid: number }>(
        "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'CALL mq9_send%' AND pg_terminate_backend(pid)",
        [postgresApplicationName(instance)],
      );
      expect(ended.rows).toHaveLength(1);
      while (
        (await admin.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1", [ended.rows[0].pid])).rowCount
      )
        await new Promise((r) => setTimeout(r, 10));
      // The server's goodbye reached the lane's socket before the backend left pg_stat_activity,
      // but the admin query's reply may be read first in the same turn: let the lane read it too,
      // as it would have long before a real next batch.
      await new Promise((r) => setImmediate(r));
      expect(await send("m1")).toEqual([{ id: 1 }]);
      expect(await send("m2", ["z"])).toEqual([{ id: 2 }]);
      const read = await store.read(odd, { fromId: 0 }, { limit: 10, maxBytes: 1 << 20, nowMs: T0 });
      expect(read.map((m) => [m.id, new TextDecoder().decode(m.payload), m.tags])).toEqual([
        [0, "m0", tags],
        [1, "m1", undefined],
        [2, "m2", ["z"]],
      ]);
    } finally {
      await admin.end();
      await store.close();
    }
  });

  it("claim — with the messages' statistics gathered, a claim reads its batch, not the mailbox", async () => {
    const T0 = 1_800_000_000_000;
    const schema = freshSchema();
    const store = await PostgresStore.open({ url: db.pg.url, schema, poolSize: 2 });
    const admin = new pg.Client({ connectionString: db.pg.url });
    await admin.connect();
    try {
      await store.createMailbox({ address: "box", ttlSeconds: 0, desc: "", createdMs: T0 }, T0);
      // Normal messages only, as most mailboxes hold: the critical and urgent classes are empty.
      const payload = new Uint8Array(1024);
      for (let i = 0; i < 100; i++)
        await store.append(
          Array.from({ length: 500 }, () => ({
            mailbox: "box",
            priority: "normal" as const,
            payload,
            sentMs: T0,
          })),
          T0,
        );
      const claim = {
        limit: 100,
        maxBytes: 1 << 20,
        nowMs: T0,
        start: { fromId: 0 },
        reset: false,
        leaseMs: 60_000,
      };
      const first = await store.claim("box", "g", claim);
      expect(await store.ack("box", "g", first[first.length - 1].id, T0)).toBe(true);
      // What autovacuum does mid-drain.
      await admin.query("ANALYZE");
      await admin.query(`SET search_path = ${schema}`);
      // What a pooled connection's claims run after their first few: the function's generic plans.
      await admin.query("SET plan_cache_mode = force_generic_plan");
      /** The pages one claim of 100 reads, and the last id it hands out. */
      const claimPages = async () => {
        const { rows } = await admin.query(
          "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT * FROM mq9_claim('box', 'g', 0, $1, false, 100, 1048576, $2, NULL, NULL, NULL)",
          [T0, T0 + 60_000],
        );
        const plan = rows[0]["QUERY PLAN"][0].Plan;
        expect(plan["Actual Rows"]).toBe(100);
        return plan["Shared Hit Blocks"] + plan["Shared Read Blocks"];
      };
      // The first call in a session also reads the catalogs.
      await claimPages();
      const pages = await claimPages();
      // About 700 buffer reads: the batch's messages and its lease rows with their index entries.
      // Reading the mailbox's 50,000 messages for the empty classes was over 15,000.
      expect(pages).toBeLessThan(3_000);
    } finally {
      await admin.end();
      await store.close();
    }
  });

  it("cluster name — one per schema, the same through every store on it, made again if deleted", async () => {
    const schema = freshSchema();
    const [a, b, other] = await Promise.all([
      PostgresStore.open({ url: db.pg.url, schema, poolSize: 1 }),
      PostgresStore.open({ url: db.pg.url, schema, poolSize: 1 }),
      PostgresStore.open({ url: db.pg.url, schema: freshSchema(), poolSize: 1 }),
    ]);
    try {
      const name = await a.clusterId();
      expect(name).toMatch(/^[0-9a-f]{32}$/);
      expect(await b.clusterId()).toBe(name);
      expect(await other.clusterId()).not.toBe(name);
      await db.pg.query(`DELETE FROM ${schema}.mq9_cluster`);
      const renamed = await b.clusterId();
      expect(renamed).toMatch(/^[0-9a-f]{32}$/);
      expect(await a.clusterId()).toBe(renamed);
    } finally {
      await Promise.all([a.close(), b.close(), other.close()]);
    }
  });

  it("upgrade — a schema of format 4 keeps its messages, leases, ACKs and id counter", async () => {
    const T0 = 1_800_000_000_000;
    const schema = freshSchema();
    // The database as format 4 left it: three messages, 0 and 1 claimed by "g", 0 ACKed.
    await db.pg.query(`CREATE SCHEMA ${schema}; SET search_path = ${schema};
      ${POSTGRES_VERSION_TABLE}; INSERT INTO mq9_schema_version VALUES (true, 4);
      ${POSTGRES_MIGRATIONS.slice(0, 4).join(";\n")};
      INSERT INTO mailboxes (address, ttl_s, description, created_ms, next_id) VALUES ('box', 0, '', ${T0}, 3);
      INSERT INTO messages (mbox, msg_id, priority, payload, created_ms)
        SELECT id, n, 2, convert_to('m' || n, 'UTF8'), ${T0} FROM mailboxes, generate_series(0, 2) n;
      SELECT count(*) FROM mq9_claim('box', 'g', 0, ${T0}, false, 2, 1048576, ${T0 + 30_000});
      SELECT mq9_ack('box', 'g', 0, ${T0});`);
    const store = await PostgresStore.open({ url: db.pg.url, schema, poolSize: 2 });
    expect(await db.pg.query(`SELECT version FROM ${schema}.mq9_schema_version`)).toContain(
      String(POSTGRES_SCHEMA_VERSION),
    );
    const claim = (nowMs: number) =>
      store.claim("box", "g", {
        limit: 10,
        maxBytes: 1 << 20,
        nowMs,
        start: { fromId: 0 },
        reset: false,
        leaseMs: 30_000,
      });
    const ids = (messages: { id: number }[]) => messages.map((m) => m.id);
    expect(ids(await claim(T0))).toEqual([2]);
    expect(ids(await claim(T0 + 30_000))).toEqual([1, 2]);
    expect(await store.ack("box", "g", 2, T0 + 30_000)).toBe(true);
    expect(ids(await claim(T0 + 120_000))).toEqual([]);
    const [sent] = await store.append(
      [{ mailbox: "box", priority: "normal", payload: body("m3"), sentMs: T0 }],
      T0,
    );
    expect(sent).toEqual({ id: 3 });
    // What the cascades did, the trigger does: a deleted mailbox leaves no rows behind.
    expect(await store.deleteMailbox("box", T0)).toBe(true);
    expect(
      await db.pg.query(
        `SELECT (SELECT count(*) FROM ${schema}.messages) + (SELECT count(*) FROM ${schema}.deliveries) + (SELECT count(*) FROM ${schema}.groups)`,
      ),
    ).toMatch(/^\s*0\s*$/m);
    await store.close();
  });

  it("durability — every answered SEND batch survives a PostgreSQL crash mid-load", async () => {
    const T0 = 1_800_000_000_000;
    const schema = freshSchema();
    const store = await PostgresStore.open({ url: db.pg.url, schema, poolSize: 8 });
    await store.createMailbox({ address: "box", ttlSeconds: 0, desc: "", createdMs: T0 }, T0);
    const answered = new Map<number, string>();
    let crashed = false;
    const sender = async (lane: number) => {
      for (let i = 0; !crashed; i++) {
        const payloads = Array.from({ length: 5 }, (_, j) => `l${lane}-${i}-${j}`);
        try {
          const results = await store.append(
            payloads.map((p) => ({
              mailbox: "box",
              priority: "normal" as const,
              payload: body(p),
              sentMs: T0,
            })),
            T0,
          );
          results.forEach((r, j) => {
            if ("id" in r) answered.set(r.id, payloads[j]);
          });
        } catch {
          return;
        }
      }
    };
    const senders = Array.from({ length: 8 }, (_, lane) => sender(lane));
    while (answered.size < 500) await new Promise((r) => setTimeout(r, 5));
    const reopened = await crashUnder(store, schema, () => (crashed = true), senders);
    const stored = new Map<number, string>();
    for (let from = 0; ; ) {
      const page = await reopened.read(
        "box",
        { fromId: from },
        { limit: 1000, maxBytes: 1 << 24, nowMs: T0 },
      );
      if (page.length === 0) break;
      for (const m of page) stored.set(m.id, new TextDecoder().decode(m.payload));
      from = page[page.length - 1].id + 1;
    }
    for (const [id, payload] of answered) expect(stored.get(id)).toBe(payload);
    await reopened.close();
  }, 60_000);

  it("durability — a PostgreSQL crash mid-drain: nothing ACKed comes back, every other message does", async () => {
    const T0 = 1_800_000_000_000;
    const schema = freshSchema();
    const store = await PostgresStore.open({ url: db.pg.url, schema, poolSize: 8 });
    await store.createMailbox({ address: "box", ttlSeconds: 0, desc: "", createdMs: T0 }, T0);
    const all = new Set<number>();
    for (let i = 0; i < 4; i++) {
      const sent = await store.append(
        Array.from({ length: 500 }, (_, j) => ({
          mailbox: "box",
          priority: "normal" as const,
          payload: body(`m${i}-${j}`),
          sentMs: T0,
        })),
        T0,
      );
      for (const r of sent) if ("id" in r) all.add(r.id);
    }
    const claim = { limit: 10, maxBytes: 1 << 20, start: { fromId: 0 }, reset: false, leaseMs: 30_000 };
    const acked = new Set<number>();
    // Claims whose ACK was sent but not answered: it may or may not have committed.
    const unsure = new Set<number>();
    let claims = 0;
    let crashed = false;
    const consumer = async () => {
      while (!crashed) {
        let batch: { id: number }[];
        try {
          batch = await store.claim("box", "g", { ...claim, nowMs: T0 });
        } catch {
          return;
        }
        claims++;
        if (batch.length === 0) return;
        try {
          if (await store.ack("box", "g", batch[batch.length - 1].id, T0))
            for (const m of batch) acked.add(m.id);
        } catch {
          for (const m of batch) unsure.add(m.id);
          return;
        }
      }
    };
    const consumers = Array.from({ length: 6 }, () => consumer());
    while (claims < 40) await new Promise((r) => setTimeout(r, 2));
    // Claims committed without waiting for their flush may be among what the crash discards.
    const reopened = await crashUnder(store, schema, () => (crashed = true), consumers);
    // First what is free at once (never claimed, or claimed and lost), then what was leased; the
    // leases taken here outlast both.
    const delivered: number[] = [];
    for (const nowMs of [T0, T0 + 30_000]) {
      for (;;) {
        const batch = await reopened.claim("box", "g", { ...claim, limit: 500, nowMs, leaseMs: 3_600_000 });
        if (batch.length === 0) break;
        delivered.push(...batch.map((m) => m.id));
      }
    }
    expect(new Set(delivered).size).toBe(delivered.length);
    expect(acked.size).toBeGreaterThan(0);
    for (const id of delivered) expect(acked.has(id), `ACKed message ${id} delivered again`).toBe(false);
    const again = new Set(delivered);
    for (const id of all)
      expect(again.has(id) || acked.has(id) || unsure.has(id), `message ${id} lost`).toBe(true);
    await reopened.close();
  }, 60_000);

  it("durability — SEND and ACK are answered only once a synchronous standby has them; FETCH is not held", async () => {
    const T0 = 1_800_000_000_000;
    // One connection, so it is known to have read the configuration the test sets.
    const store = await PostgresStore.open({ url: db.pg.url, schema: freshSchema(), poolSize: 1 });
    const { pool } = store.sharedDatabase();
    await store.createMailbox({ address: "box", ttlSeconds: 0, desc: "", createdMs: T0 }, T0);
    await store.append([{ mailbox: "box", priority: "normal", payload: body("m0"), sentMs: T0 }], T0);
    const claim = {
      limit: 1,
      maxBytes: 1 << 20,
      nowMs: T0,
      start: { fromId: 0 },
      reset: false,
      leaseMs: 30_000,
    };
    const [first] = await store.claim("box", "g", claim);
    const setStandby = async (names: string) => {
      await db.pg.query(`ALTER SYSTEM SET synchronous_standby_names = '${names}'`);
      await db.pg.query("SELECT pg_reload_conf()");
      // A backend reads a reloaded configuration between two statements.
      while (
        (await pool.query("SHOW synchronous_standby_names")).rows[0].synchronous_standby_names !== names
      ) {
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    try {
      // A claim commits without waiting: losing it only delivers its messages again. The ACK of
      // it waits, and what the standby receives before that ACK's commit includes the claim.
      await setStandby("absent");
      const [held] = await store.claim("box", "h", claim);
      const operations: [string, () => Promise<unknown>][] = [
        [
          "send",
          () => store.append([{ mailbox: "box", priority: "normal", payload: body("m1"), sentMs: T0 }], T0),
        ],
        ["ack of a claim made without the standby", () => store.ack("box", "h", held.id, T0)],
        ["ack", () => store.ack("box", "g", first.id, T0)],
      ];
      for (const [name, operation] of operations) {
        // A standby that never connects: what waits for it is answered only once it is dropped.
        await setStandby("absent");
        let answered = false;
        const pending = operation().then(() => {
          answered = true;
        });
        for (;;) {
          const waiting = await db.pg.query(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'mq9' AND wait_event = 'SyncRep'",
          );
          if (waiting === "1" || answered) break;
          await new Promise((r) => setTimeout(r, 10));
        }
        expect(answered, name).toBe(false);
        await db.pg.query("ALTER SYSTEM SET synchronous_standby_names = ''");
        await db.pg.query("SELECT pg_reload_conf()");
        await pending;
      }
    } finally {
      await db.pg.query("ALTER SYSTEM RESET synchronous_standby_names");
      await db.pg.query("SELECT pg_reload_conf()");
    }
    await store.close();
  });

  it("refuses a schema written by a newer mq9 instead of misreading it", async () => {
    const schema = freshSchema();
    const store = await PostgresStore.open({ url: db.pg.url, schema });
    await store.close();
    await db.pg.query(`UPDATE ${schema}.mq9_schema_version SET version = 99`);
    await expect(PostgresStore.open({ url: db.pg.url, schema })).rejects.toThrow(
      `written by a newer mq9 (format 99, this one reads up to ${POSTGRES_SCHEMA_VERSION})`,
    );
  });

  it("a schema a newer mq9 migrates while the store serves: the store refuses and gives up its locks", async () => {
    const schema = freshSchema();
    const store = await PostgresStore.open({ url: db.pg.url, schema, poolSize: 2 });
    const other = new pg.Client({ connectionString: db.pg.url });
    await other.connect();
    try {
      const lock = store.clusterLock("orchestrator", "the orchestrator");
      let lost = 0;
      lock.onLost(() => lost++);
      expect(await lock.held()).toBe(true);
      expect(store.duties.list()).toEqual(["orchestrator"]);
      expect(await store.getMailbox("box", Date.now())).toBeUndefined();
      expect(await store.ping()).toBe(true);
      expect(store.refusal()).toBeUndefined();

      await db.pg.query(`UPDATE ${schema}.mq9_schema_version SET version = version + 1`);
      expect(await store.ping()).toBe(true);
      expect(store.refusal()).toMatch(
        new RegExp(
          `^the PostgreSQL schema ${schema} was migrated to format ${POSTGRES_SCHEMA_VERSION + 1} by a newer mq9 \\(this one runs format ${POSTGRES_SCHEMA_VERSION}\\)`,
        ),
      );
      // Nothing is read or written by the old format's rules any more…
      await expect(store.getMailbox("box", Date.now())).rejects.toMatchObject({ code: "STORE_FORMAT" });
      await expect(store.promoteDue(Date.now())).rejects.toMatchObject({ code: "STORE_FORMAT" });
      // …and the work its locks guarded stops here and is free for a newer broker.
      expect(lost).toBe(1);
      expect(store.duties.list()).toEqual([]);
      expect(await lock.held()).toBe(false);
      const { rows } = await other.query("SELECT pg_try_advisory_lock(hashtext($1)) AS taken", [
        `mq9:${schema}:orchestrator`,
      ]);
      expect(rows[0].taken).toBe(true);
    } finally {
      await other.end();
      await store.close();
    }
  });

  it("a lock that cannot connect (the role's connections spent) says why once, and keeps trying", async () => {
    await db.pg.query("CREATE ROLE mq9_lockless LOGIN CONNECTION LIMIT 0");
    const logger = captureLogger();
    const url = db.pg.url.replace("postgres@", "mq9_lockless@");
    const lock = new ClusterLock({ connectionString: url }, "test:lockless", logger, "expiry");
    try {
      for (let i = 0; i < 3; i++) expect(await lock.held()).toBe(false);
      const warnings = logger.entries
        .filter((entry) => entry.level === "warn")
        .map((entry) => String(entry.obj));
      expect(warnings).toEqual([
        `cannot take the lock for expiry: PostgreSQL at 127.0.0.1:${db.pg.port}${new URL(url).pathname} has no connection left for mq9 (too many connections for role "mq9_lockless"); each broker opens up to --postgres-pool connections plus one for SEND batches and one per once-per-cluster lock: lower --postgres-pool, or raise max_connections (or the role's CONNECTION LIMIT); another broker may run it, this one tries again`,
      ]);
      await db.pg.query("ALTER ROLE mq9_lockless CONNECTION LIMIT 1");
      expect(await lock.held()).toBe(true);
    } finally {
      await lock.close();
    }
  });

  it("an unreachable database is a clear error naming where it looked", async () => {
    const url = db.pg.url.replace(`:${db.pg.port}/`, ":1/");
    await expect(PostgresStore.open({ url, schema: freshSchema() })).rejects.toMatchObject({
      code: "STORE_UNAVAILABLE",
      message: expect.stringMatching(/PostgreSQL at 127\.0\.0\.1:1\/mq9 is unavailable/),
    });
  });

  it("a user without rights gets an error that says which grant is missing", async () => {
    await db.pg.query("CREATE ROLE weak LOGIN");
    await db.pg.query("REVOKE CREATE ON DATABASE mq9 FROM PUBLIC");
    const url = db.pg.url.replace("postgres@", "weak@");
    await expect(PostgresStore.open({ url, schema: freshSchema() })).rejects.toMatchObject({
      code: "STORE_NO_RIGHTS",
      message: expect.stringMatching(/lacks rights .*grant it CREATE on the database/),
    });
  });
});
