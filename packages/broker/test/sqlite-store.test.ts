import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { SqliteStore } from "../src/store/sqlite-store.js";
import type { Store } from "../src/store/store.js";
import { storeConformance } from "./store-conformance.js";

const dirs = new WeakMap<Store, string>();

// Reads served from the recent-message memory, and every read from SQLite; rows written by the
// worker thread, and by the store's own thread.
for (const [label, recentMessageBytes, rowsOnWorker] of [
  ["sqlite", undefined, true],
  ["sqlite, no recent-message memory", 0, true],
  ["sqlite, rows written on the calling thread", undefined, false],
] as const) {
  storeConformance(label, {
    async open() {
      const dir = mkdtempSync(join(tmpdir(), "mq9-store-"));
      const store = new SqliteStore({ dataDir: dir, recentMessageBytes, rowsOnWorker });
      dirs.set(store, dir);
      return store;
    },
    async reopen(previous) {
      const dir = dirs.get(previous)!;
      await previous.close();
      const store = new SqliteStore({ dataDir: dir, recentMessageBytes, rowsOnWorker });
      dirs.set(store, dir);
      return store;
    },
  });
}

describe("sqlite store files", () => {
  it("refuses a store written in another format instead of misreading it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mq9-store-"));
    const store = new SqliteStore({ dataDir: dir });
    await store.close();
    const raw = new Database(join(dir, "mq9.db"));
    raw.pragma("user_version = 1");
    raw.close();
    expect(() => new SqliteStore({ dataDir: dir })).toThrow(
      /written by another mq9 version \(format 1, this one reads 6\)/,
    );
  });

  it("a count row goes once its message is ACKed, whether a NAK or a second delivery wrote it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mq9-store-"));
    const store = new SqliteStore({ dataDir: dir });
    const t0 = 1_800_000_000_000;
    await store.createMailbox({ address: "box", ttlSeconds: 0, desc: "", createdMs: t0 }, t0);
    await store.append(
      ["a", "b"].map((body) => ({
        mailbox: "box",
        priority: "normal" as const,
        payload: Buffer.from(body),
        sentMs: t0,
      })),
      t0,
    );
    const claim = { limit: 1, maxBytes: 1 << 20, start: { fromId: 0 }, reset: false, leaseMs: 1000 };
    // a: NAKed (with a delay) on its first delivery and ACKed before it comes back;
    // b: delivered twice, then ACKed.
    const [a] = await store.claim("box", "g", { ...claim, nowMs: t0 });
    await store.nak("box", "g", a.id, { nowMs: t0, delayMs: 60_000 });
    expect(await store.ack("box", "g", a.id, t0 + 1)).toBe(true);
    const [b] = await store.claim("box", "g", { ...claim, nowMs: t0 + 2 });
    const [b2] = await store.claim("box", "g", { ...claim, nowMs: t0 + 2000 });
    expect([b2.id, b2.deliveryCount]).toEqual([b.id, 2]);
    expect(await store.ack("box", "g", b2.id, t0 + 2000)).toBe(true);
    await store.close();
    const raw = new Database(join(dir, "mq9.db"), { readonly: true });
    expect(raw.prepare("SELECT msg_id FROM deliveries WHERE acked = 0").all()).toEqual([]);
    raw.close();
  });
});

describe("sqlite store: a write that fails changes nothing", () => {
  const T0 = 1_000_000;
  const claim = {
    limit: 10,
    maxBytes: 1 << 20,
    nowMs: T0,
    start: { fromId: 0 },
    reset: false,
    leaseMs: 30_000,
  };
  const texts = (messages: { payload: Uint8Array }[]) =>
    messages.map((m) => Buffer.from(m.payload).toString());

  /**
   * Another connection takes SQLite's write lock (once the store's own commit is done; the store
   * commits on a timer), so every write of the store fails (SQLITE_BUSY) until it is released.
   */
  async function holdWriteLock(dir: string): Promise<() => void> {
    const other = new Database(join(dir, "mq9.db"), { timeout: 0 });
    for (;;) {
      try {
        other.exec("BEGIN IMMEDIATE");
        break;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }
    return () => {
      other.exec("ROLLBACK");
      other.close();
    };
  }

  it("a store that could not reserve ids when it opened reserves them at its first SEND, which then stores", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mq9-store-"));
    const first = new SqliteStore({ dataDir: dir });
    await first.createMailbox({ address: "box", ttlSeconds: 0, desc: "", createdMs: T0 }, T0);
    const [before] = (await first.append(
      [{ mailbox: "box", priority: "normal", payload: Buffer.from("a"), sentMs: T0 }],
      T0,
    )) as { id: number }[];
    await first.close();
    // The reservation's write fails while the store opens (as on a full disk), and only then.
    const raw = new Database(join(dir, "mq9.db"));
    const refuse = (event: string) =>
      `CREATE TRIGGER refuse_${event} BEFORE ${event} ON meta WHEN NEW.name = 'ids_reserved'
       BEGIN SELECT RAISE(ABORT, 'no room for the reservation'); END`;
    raw.exec(`${refuse("INSERT")}; ${refuse("UPDATE")}`);
    const store = new SqliteStore({ dataDir: dir });
    raw.exec("DROP TRIGGER refuse_INSERT; DROP TRIGGER refuse_UPDATE");
    raw.close();
    try {
      const [sent] = (await store.append(
        [{ mailbox: "box", priority: "normal", payload: Buffer.from("b"), sentMs: T0 }],
        T0,
      )) as { id: number }[];
      expect(sent.id).toBe(before.id + 1);
      const read = await store.read("box", { fromId: 0 }, { limit: 10, maxBytes: 1 << 20, nowMs: T0 });
      expect(read.map((m) => [m.id, Buffer.from(m.payload).toString()])).toEqual([
        [before.id, "a"],
        [sent.id, "b"],
      ]);
    } finally {
      await store.close();
    }
  });

  for (const rowsOnWorker of [true, false]) {
    it(`an ACK whose write fails leaves its messages leased: they come back after the lease, and a retry acknowledges them (rows on ${rowsOnWorker ? "the worker" : "the calling thread"})`, async () => {
      const dir = mkdtempSync(join(tmpdir(), "mq9-store-"));
      const store = new SqliteStore({ dataDir: dir, rowsOnWorker });
      try {
        await store.createMailbox({ address: "box", ttlSeconds: 0, desc: "", createdMs: T0 }, T0);
        for (const text of ["a", "b", "c"]) {
          await store.append(
            [{ mailbox: "box", priority: "normal", payload: Buffer.from(text), sentMs: T0 }],
            T0,
          );
        }
        const batch = await store.claim("box", "g", claim);
        expect(texts(batch)).toEqual(["a", "b", "c"]);

        const release = await holdWriteLock(dir);
        await expect(store.ack("box", "g", batch[1].id, T0)).rejects.toThrow(/locked|in use/);
        release();
        // Nothing was acknowledged: the consumer's retry of that ACK takes effect.
        expect(await store.ack("box", "g", batch[1].id, T0)).toBe(true);
        expect(texts(await store.claim("box", "g", { ...claim, nowMs: T0 + 30_000 }))).toEqual(["c"]);
        // Without a retry, the messages of a failed ACK come back once the lease runs out.
        const next = await store.claim("box", "g", { ...claim, nowMs: T0 + 60_000 });
        const lockedAgain = await holdWriteLock(dir);
        await expect(store.ack("box", "g", next[0].id, T0 + 60_000)).rejects.toThrow(/locked|in use/);
        lockedAgain();
        expect(texts(await store.claim("box", "g", { ...claim, nowMs: T0 + 90_000 }))).toEqual(["c"]);
      } finally {
        await store.close();
      }
    });
  }

  it("a failed ACK then a successful one of the same batch acknowledges exactly what the second covers", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mq9-store-"));
    const store = new SqliteStore({ dataDir: dir });
    try {
      await store.createMailbox({ address: "box", ttlSeconds: 0, desc: "", createdMs: T0 }, T0);
      for (const text of ["a", "b", "c", "d"]) {
        await store.append(
          [{ mailbox: "box", priority: "normal", payload: Buffer.from(text), sentMs: T0 }],
          T0,
        );
      }
      const batch = await store.claim("box", "g", claim);
      const release = await holdWriteLock(dir);
      await expect(store.ack("box", "g", batch[2].id, T0)).rejects.toThrow();
      release();
      // Only a and b are acknowledged now: c (whose ACK failed) and d come back after the lease.
      expect(await store.ack("box", "g", batch[1].id, T0)).toBe(true);
      expect(texts(await store.claim("box", "g", { ...claim, nowMs: T0 + 30_000 }))).toEqual(["c", "d"]);
      await store.close();
      // And after a restart too.
      const reopened = new SqliteStore({ dataDir: dir });
      try {
        expect(texts(await reopened.claim("box", "g", { ...claim, nowMs: T0 + 60_000 }))).toEqual(["c", "d"]);
      } finally {
        await reopened.close();
      }
    } finally {
      await store.close();
    }
  });

  it("upgrades a version 3 store to the current one: mailboxes keep their messages and gain an owner column", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mq9-store-"));
    let store = new SqliteStore({ dataDir: dir });
    await store.createMailbox({ address: "old.box", ttlSeconds: 0, desc: "", createdMs: 1 }, 1);
    const [sent] = await store.append(
      [{ mailbox: "old.box", priority: "normal", payload: Buffer.from("kept"), sentMs: 2 }],
      2,
    );
    await store.close();
    const raw = new Database(join(dir, "mq9.db"));
    raw.exec("ALTER TABLE mailboxes DROP COLUMN owner");
    raw.pragma("user_version = 3");
    raw.close();
    store = new SqliteStore({ dataDir: dir });
    try {
      expect(await store.getMailbox("old.box", 3)).toMatchObject({ address: "old.box", owner: undefined });
      const messages = await store.query("old.box", { limit: 10, nowMs: 3 });
      expect(messages.map((m) => [m.id, Buffer.from(m.payload).toString()])).toEqual([
        [(sent as { id: number }).id, "kept"],
      ]);
      await store.createMailbox(
        { address: "new.box", ttlSeconds: 0, desc: "", createdMs: 3, owner: "alice" },
        3,
      );
      expect((await store.getMailbox("new.box", 4))?.owner).toBe("alice");
    } finally {
      await store.close();
    }
    const check = new Database(join(dir, "mq9.db"), { readonly: true });
    expect(check.pragma("user_version", { simple: true })).toBe(6);
    // Version 5's step: the idempotency keys' table.
    expect(check.prepare("SELECT count(*) AS n FROM send_keys").get()).toEqual({ n: 0 });
    // Version 6's: delivery limits and counts.
    expect(check.prepare("SELECT max_deliver, dead_lettered FROM groups LIMIT 0").all()).toEqual([]);
    expect(check.prepare("SELECT delivery_count, reason FROM deliveries LIMIT 0").all()).toEqual([]);
    check.close();
  });
});
