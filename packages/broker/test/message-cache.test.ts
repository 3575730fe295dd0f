import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Priority } from "@mq9/protocol";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../src/store/sqlite-store.js";
import type { NewMessage, StoredMessage } from "../src/store/store.js";

// Claims of a consumer keeping up are answered from the message cache without SQL: every way a
// message leaves the database must reach the cache, or a claim would deliver it from there.

const T0 = 1_800_000_000_000;
const open: SqliteStore[] = [];
const dataDirs: string[] = [];

afterEach(async () => {
  for (const store of open.splice(0)) await store.close();
  for (const dir of dataDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A fresh data directory, removed after the test. */
function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "mq9-cache-"));
  dataDirs.push(dir);
  return dir;
}

function newStore(recentMessageBytes?: number): SqliteStore {
  const store = new SqliteStore({ dataDir: dataDir(), recentMessageBytes });
  open.push(store);
  return store;
}

function message(body: string, extra: Partial<NewMessage> = {}): NewMessage {
  return { mailbox: "box", priority: "normal", payload: Buffer.from(body), sentMs: T0, ...extra };
}

/** A store with the mailbox, and the id its first message gets (claims start there, in the cache). */
async function withMailbox(recentMessageBytes?: number): Promise<{ store: SqliteStore; from: number }> {
  const store = newStore(recentMessageBytes);
  await store.createMailbox({ address: "box", ttlSeconds: 0, desc: "", createdMs: T0 }, T0);
  return { store, from: await store.nextMessageId("box") };
}

async function send(store: SqliteStore, messages: NewMessage[]): Promise<number[]> {
  return (await store.append(messages, T0)).map((r) => {
    if (!("id" in r)) throw new Error("the mailbox is missing");
    return r.id;
  });
}

/** The next two messages group `group` is given from `from`, leased for a minute. */
function claimTwo(store: SqliteStore, from: number, group = "g", nowMs = T0): Promise<StoredMessage[]> {
  return store.claim("box", group, {
    start: { fromId: from },
    reset: false,
    limit: 2,
    maxBytes: 1 << 20,
    nowMs,
    leaseMs: 60_000,
  });
}

/** The bodies a new group starting at `from` is given, ACKing as it goes, all of them. */
async function drained(store: SqliteStore, from: number, group = "g", nowMs = T0): Promise<string[]> {
  const bodies: string[] = [];
  for (;;) {
    const claimed = await claimTwo(store, from, group, nowMs);
    if (claimed.length === 0) return bodies;
    for (const m of claimed) {
      bodies.push(Buffer.from(m.payload).toString());
      expect(await store.ack("box", group, m.id, nowMs)).toBe(true);
    }
  }
}

describe("message cache: a claim never returns a message the database no longer has", () => {
  it("MSG.DELETE", async () => {
    const { store, from } = await withMailbox();
    const [, b] = await send(store, [message("a"), message("b"), message("c")]);
    expect(await store.deleteMessage("box", b)).toBe(true);
    expect(await drained(store, from)).toEqual(["a", "c"]);
  });

  it("MSG.DELETE of a message a group already passed, and of one it has leased", async () => {
    const { store, from } = await withMailbox();
    const [a, b] = await send(store, [message("a"), message("b"), message("c"), message("d")]);
    const [first] = await store.claim("box", "g", {
      start: { fromId: from },
      reset: false,
      limit: 1,
      maxBytes: 1 << 20,
      nowMs: T0,
      leaseMs: 1000,
    });
    expect(first.id).toBe(a);
    await store.deleteMessage("box", a);
    await store.deleteMessage("box", b);
    // The lease of a ran out: it is gone, not delivered again.
    expect(await drained(store, from, "g", T0 + 5000)).toEqual(["c", "d"]);
  });

  it("purge by key, tag and priority", async () => {
    const { store, from } = await withMailbox();
    await send(store, [
      message("keyed", { key: "k" }),
      message("tagged", { tags: ["t"] }),
      message("urgent", { priority: "urgent" }),
      message("plain"),
    ]);
    expect(await store.purgeMailbox("box", T0, { key: "k" })).toBe(1);
    expect(await store.purgeMailbox("box", T0, { tag: "t" })).toBe(1);
    expect(await store.purgeMailbox("box", T0, { priority: "urgent" })).toBe(1);
    expect(await drained(store, from)).toEqual(["plain"]);
  });

  it("purge of everything, then new messages", async () => {
    const { store, from } = await withMailbox();
    await send(store, [message("a"), message("b", { priority: "critical" })]);
    expect(await store.purgeMailbox("box", T0)).toBe(2);
    await send(store, [message("c")]);
    expect(await drained(store, from)).toEqual(["c"]);
  });

  it("message TTL: an expired message is not claimed, before and after the expiry sweep", async () => {
    const { store, from } = await withMailbox();
    await send(store, [
      message("short", { expiresMs: T0 + 1000 }),
      message("long", { expiresMs: T0 + 60_000 }),
    ]);
    expect(await drained(store, from, "g1", T0 + 1000)).toEqual(["long"]);
    await store.purgeExpired(T0 + 2000);
    expect(await drained(store, from, "g2", T0 + 2000)).toEqual(["long"]);
  });

  it("message TTL: the expiry sweep ends the leases of what it deleted", async () => {
    const { store, from } = await withMailbox();
    await send(store, [message("short", { expiresMs: T0 + 1000 }), message("long")]);
    const claimed = await claimTwo(store, from);
    expect(claimed).toHaveLength(2);
    await store.purgeExpired(T0 + 2000);
    const report = await store.groupLeases("box", "g", T0 + 2000, 10);
    expect(report?.leases.map((lease) => lease.msgId)).toEqual([claimed[1].id]);
  });

  // The row that replaces by key is written on the worker (many rows at once), on the calling
  // thread within a turn (a few), or by the store itself (no worker): each commit must end the
  // replaced message's leases, as a MSG.DELETE does.
  for (const [how, rowsOnWorker, others] of [
    ["by the row worker", true, 40],
    ["on the calling thread in a turn", true, 0],
    ["without a row worker", false, 0],
  ] as const) {
    it(`key compaction by a SEND ends the leases of the message it replaced (rows written ${how})`, async () => {
      const store = new SqliteStore({
        dataDir: dataDir(),
        rowsOnWorker,
      });
      open.push(store);
      await store.createMailbox({ address: "box", ttlSeconds: 0, desc: "", createdMs: T0 }, T0);
      const from = await store.nextMessageId("box");
      await send(store, [message("v1", { key: "state" }), message("other")]);
      const claimed = await claimTwo(store, from);
      expect(claimed.map((m) => Buffer.from(m.payload).toString())).toEqual(["v1", "other"]);
      const fillers = Array.from({ length: others }, (_, i) => message(`filler ${i}`));
      await send(store, [message("v2", { key: "state" }), ...fillers]);
      // A change committed at once: without a worker, the SEND's rows commit with it.
      await store.createMailbox({ address: "other", ttlSeconds: 0, desc: "", createdMs: T0 }, T0);
      const report = await store.groupLeases("box", "g", T0 + 1, 100);
      expect(report?.leases.map((lease) => lease.msgId)).toEqual([claimed[1].id]);
    });
  }

  it("key compaction: a SEND with a key replaces the message with that key, in any class", async () => {
    const { store, from } = await withMailbox();
    await send(store, [message("v1", { key: "state" }), message("other")]);
    await send(store, [message("v2", { key: "state", priority: "critical" })]);
    await send(store, [message("v3", { key: "state" }), message("v4", { key: "state", priority: "urgent" })]);
    expect(await drained(store, from)).toEqual(["v4", "other"]);
  });

  it("a mailbox deleted and created again holds only its new messages", async () => {
    const { store, from } = await withMailbox();
    await send(store, [message("old"), message("old key", { key: "k" })]);
    expect(await store.deleteMailbox("box", T0)).toBe(true);
    await store.createMailbox({ address: "box", ttlSeconds: 0, desc: "", createdMs: T0 }, T0);
    await send(store, [message("new"), message("new key", { key: "k" })]);
    expect(await drained(store, from)).toEqual(["new", "new key"]);
  });

  it("a mailbox that expired is swept with its messages", async () => {
    const store = newStore();
    await store.createMailbox(
      { address: "box", ttlSeconds: 1, desc: "", createdMs: T0, expiresMs: T0 + 1000 },
      T0,
    );
    const from = await store.nextMessageId("box");
    await send(store, [message("old")]);
    await store.purgeExpired(T0 + 2000);
    await store.createMailbox({ address: "box", ttlSeconds: 0, desc: "", createdMs: T0 + 2000 }, T0 + 2000);
    await send(store, [message("new")]);
    expect(await drained(store, from, "g", T0 + 2000)).toEqual(["new"]);
  });

  it("a message used up by its group is not claimed again (it waits for the dead-letter sweep)", async () => {
    const { store, from } = await withMailbox();
    await send(store, [message("poison"), message("fine")]);
    const claim = {
      start: { fromId: from },
      reset: false,
      limit: 1,
      maxBytes: 1 << 20,
      leaseMs: 1000,
      policy: { maxDeliver: 1 },
    };
    const [poison] = await store.claim("box", "g", { ...claim, nowMs: T0 });
    expect(Buffer.from(poison.payload).toString()).toBe("poison");
    const later = await store.claim("box", "g", { ...claim, limit: 10, nowMs: T0 + 5000 });
    expect(later.map((m) => Buffer.from(m.payload).toString())).toEqual(["fine"]);
    const [letter] = await store.deadLetters(T0 + 5000, 10);
    expect(letter.message.id).toBe(poison.id);
    await store.settleDeadLetters([letter], T0 + 5000);
    expect(await store.claim("box", "g", { ...claim, limit: 10, nowMs: T0 + 10_000 })).toEqual([]);
  });
});

describe("message cache: a claim never misses a message the cache does not hold", () => {
  it("a delayed message that became due, between messages the cache holds", async () => {
    const { store, from } = await withMailbox();
    await send(store, [message("before"), message("delayed", { dueMs: T0 + 1000 })]);
    expect(await store.promoteDue(T0 + 1000)).toEqual(["box"]);
    await send(store, [message("after")]);
    expect(await drained(store, from, "g", T0 + 1000)).toEqual(["before", "delayed", "after"]);
  });

  it("a delayed message with a key replaces the one the cache holds, in another class", async () => {
    const { store, from } = await withMailbox();
    await send(store, [
      message("v1", { key: "k", priority: "critical" }),
      message("v2", { key: "k", dueMs: T0 + 1000 }),
    ]);
    await store.promoteDue(T0 + 1000);
    expect(await drained(store, from, "g", T0 + 1000)).toEqual(["v2"]);
  });

  it("a message too big for the cache, between ones it holds", async () => {
    const { store, from } = await withMailbox(4096);
    const bodies = ["a", "x".repeat(5000), "b"];
    await send(
      store,
      bodies.map((body) => message(body)),
    );
    expect(await drained(store, from)).toEqual(bodies);
  });

  it("messages the cache dropped for room", async () => {
    const { store, from } = await withMailbox(4096);
    const bodies = Array.from({ length: 40 }, (_, i) => `m${i}`.padEnd(200, "."));
    await send(
      store,
      bodies.map((body) => message(body)),
    );
    expect(await drained(store, from)).toEqual(bodies);
    expect(await drained(store, from + 30, "late")).toEqual(bodies.slice(30));
  });
});

/** A small deterministic generator, so a failure can be replayed. */
function random(seed: number): (n: number) => number {
  let s = seed;
  return (n) => {
    s = (s * 1_103_515_245 + 12_345) % 2 ** 31;
    return s % n;
  };
}

describe("message cache: the same as reading SQLite", () => {
  it("claims and reads agree with a store without a cache over a random run", async () => {
    const cached = await withMailbox(64 * 1024);
    const plain = await withMailbox(0);
    const from = cached.from;
    expect(plain.from).toBe(from);
    // MQ9_CACHE_SEED=n runs another sequence.
    const next = random(Number(process.env.MQ9_CACHE_SEED ?? 42));
    const priorities: Priority[] = ["critical", "urgent", "normal"];
    let now = T0;
    for (let step = 0; step < 400; step++) {
      now += next(50);
      const op = next(100);
      const at = now;
      // Every choice is drawn once, then the same action runs on both stores.
      let action: (store: SqliteStore) => Promise<unknown>;
      if (op < 55) {
        const batch = Array.from({ length: 1 + next(4) }, (_, i) =>
          message(`s${step}.${i}`, {
            priority: priorities[next(3)],
            key: next(4) === 0 ? `k${next(5)}` : undefined,
            tags: next(5) === 0 ? [`t${next(3)}`] : undefined,
            expiresMs: next(6) === 0 ? at + next(500) : undefined,
            dueMs: next(10) === 0 ? at + next(300) : undefined,
            sentMs: at,
          }),
        );
        action = (store) => store.append(batch, at);
      } else if (op < 62) {
        const id = from + next(step + 1);
        action = (store) => store.deleteMessage("box", id);
      } else if (op < 65) {
        const tag = `t${next(3)}`;
        action = (store) => store.purgeMailbox("box", at, { tag });
      } else if (op < 66) {
        action = (store) => store.purgeMailbox("box", at);
      } else if (op < 72) {
        action = (store) => store.promoteDue(at);
      } else if (op < 76) {
        action = (store) => store.purgeExpired(at);
      } else if (op < 96) {
        const group = `g${next(3)}`;
        const limit = 1 + next(5);
        const acking = Array.from({ length: limit }, () => next(3) > 0);
        action = async (store) => {
          const claimed = await store.claim("box", group, {
            start: { fromId: from },
            reset: false,
            limit,
            maxBytes: 1 << 20,
            nowMs: at,
            leaseMs: 200,
          });
          const acks = [];
          for (const [i, m] of claimed.entries())
            if (acking[i]) acks.push(await store.ack("box", group, m.id, at));
          return [
            claimed.map((m) => [m.id, m.priority, Buffer.from(m.payload).toString(), m.deliveryCount]),
            acks,
          ];
        };
      } else {
        const fromId = from + next(step + 1);
        action = async (store) => {
          const read = await store.read("box", { fromId }, { limit: 10, maxBytes: 1 << 20, nowMs: at });
          return read.map((m) => [m.id, Buffer.from(m.payload).toString()]);
        };
      }
      const outcomes = [await action(cached.store), await action(plain.store)];
      expect({ step, op, outcome: outcomes[0] }).toEqual({ step, op, outcome: outcomes[1] });
    }
  });
});
