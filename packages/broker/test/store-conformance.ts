import type { Priority } from "@mq9/protocol";
import { Registry as MetricsRegistry } from "prom-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { silentLogger } from "../src/logger.js";
import { canInspectLeases } from "../src/store/lease-inspection.js";
import type { NewMessage, Store } from "../src/store/store.js";

export interface StoreFactory {
  /** A fresh, empty store. */
  open(): Promise<Store>;
  /** The same data opened again, as after a restart; omit when the backend cannot. */
  reopen?(previous: Store): Promise<Store>;
}

// Far ahead of the real clock, which a reopened store reads (idempotency keys whose window has
// not ended at start): 1_800_000_000_000 (January 2027) would have aged into the past.
const T0 = 4_000_000_000_000;
const text = (s: string) => new TextEncoder().encode(s);
const decode = (b: Uint8Array) => new TextDecoder().decode(b);

function message(mailbox: string, body: string, extra: Partial<NewMessage> = {}): NewMessage {
  return { mailbox, priority: "normal", payload: text(body), sentMs: T0, ...extra };
}

/**
 * The behaviour every Store must show. A new backend runs this suite against
 * the real thing; passing it is what makes the backend usable by the engine.
 */
export function storeConformance(name: string, factory: StoreFactory): void {
  describe(`store conformance — ${name}`, () => {
    let store: Store;
    const read = { limit: 100, maxBytes: 1 << 20, nowMs: T0 };
    const claim = { ...read, start: { fromId: 0 }, reset: false, leaseMs: 30_000 };

    beforeEach(async () => {
      store = await factory.open();
      await store.createMailbox({ address: "box", ttlSeconds: 0, desc: "", createdMs: T0 }, T0);
    });
    afterEach(async () => {
      await store.close();
    });

    const send = async (body: string, extra: Partial<NewMessage> = {}) => {
      const [result] = await store.append([message("box", body, extra)], extra.sentMs ?? T0);
      if (!("id" in result)) throw new Error("append failed");
      return result.id;
    };
    const bodies = (messages: { payload: Uint8Array }[]) => messages.map((m) => decode(m.payload));

    it("seam — capabilities, description, health and shared database agree; watch adds gauges", async () => {
      expect(typeof store.capabilities.shared).toBe("boolean");
      expect(typeof store.capabilities.appendsElsewhere).toBe("boolean");
      expect(store.describe()).toMatch(/\S/);
      expect(store.health()).toMatchObject({ ok: true, storage: "ok" });
      // A shared store gives the cluster its database; a store of one process has none to give.
      expect(store.sharedDatabase() !== undefined).toBe(store.capabilities.shared);
      const metrics = new MetricsRegistry();
      store.watch({ metrics, logger: silentLogger, cluster: false });
      expect(await metrics.getMetricsAsJSON()).not.toEqual([]);
      expect(store.health()).toMatchObject({ ok: true, storage: "ok" });
    });

    it("mailboxes — create refuses a live duplicate and reads back", async () => {
      expect(await store.createMailbox({ address: "box", ttlSeconds: 0, desc: "", createdMs: T0 }, T0)).toBe(
        false,
      );
      expect(await store.getMailbox("box", T0)).toMatchObject({ address: "box", ttlSeconds: 0 });
      expect(await store.getMailbox("nope", T0)).toBeUndefined();
    });

    it("mailboxes — an expired one is invisible at its expiry time and can be created again empty", async () => {
      await store.createMailbox(
        { address: "tmp", ttlSeconds: 2, desc: "d", createdMs: T0, expiresMs: T0 + 2000 },
        T0,
      );
      await store.append([message("tmp", "old")], T0);
      expect(await store.getMailbox("tmp", T0 + 1999)).toBeDefined();
      expect(await store.getMailbox("tmp", T0 + 2000)).toBeUndefined();
      expect(
        await store.createMailbox(
          { address: "tmp", ttlSeconds: 0, desc: "", createdMs: T0 + 3000 },
          T0 + 3000,
        ),
      ).toBe(true);
      expect(await store.read("tmp", { fromId: 0 }, { ...read, nowMs: T0 + 3000 })).toEqual([]);
    });

    it("append — ids start at 0, grow across priorities, and a missing mailbox is reported per message", async () => {
      const results = await store.append(
        [message("box", "a"), message("nope", "x"), message("box", "b", { priority: "critical" })],
        T0,
      );
      expect(results).toEqual([{ id: 0 }, { missingMailbox: true }, { id: 1 }]);
      expect(await store.nextMessageId("box")).toBe(2);
    });

    it("read — critical, then urgent, then normal, FIFO within each; limit and byte budget", async () => {
      const order: [string, Priority][] = [
        ["n0", "normal"],
        ["u1", "urgent"],
        ["c2", "critical"],
        ["n3", "normal"],
        ["c4", "critical"],
        ["u5", "urgent"],
      ];
      for (const [body, priority] of order) await send(body, { priority });
      expect(bodies(await store.read("box", { fromId: 0 }, read))).toEqual([
        "c2",
        "c4",
        "u1",
        "u5",
        "n0",
        "n3",
      ]);
      expect(bodies(await store.read("box", { fromId: 0 }, { ...read, limit: 3 }))).toEqual([
        "c2",
        "c4",
        "u1",
      ]);
      expect(bodies(await store.read("box", { fromId: 3 }, read))).toEqual(["c4", "u5", "n3"]);
      expect(bodies(await store.read("box", { fromId: 0 }, { ...read, maxBytes: 5 }))).toEqual(["c2", "c4"]);
      expect(bodies(await store.read("box", { fromId: 0 }, { ...read, maxBytes: 1 }))).toEqual(["c2"]);
    });

    it("claim and read — the byte budget counts each payload's bytes, whatever its length", async () => {
      // Lengths 0 to 4: every remainder of 3, so a store that keeps payloads encoded counts right.
      for (const body of ["", "a", "bb", "ccc", "dddd"]) await send(body);
      expect(bodies(await store.read("box", { fromId: 0 }, { ...read, maxBytes: 6 }))).toEqual([
        "",
        "a",
        "bb",
        "ccc",
      ]);
      expect(bodies(await store.claim("box", "g", { ...claim, maxBytes: 5 }))).toEqual(["", "a", "bb"]);
      expect(bodies(await store.claim("box", "g", { ...claim, maxBytes: 6 }))).toEqual(["ccc"]);
      // After the lease runs out the claim takes leases again, under the same budget.
      const again = { ...claim, nowMs: T0 + 30_000, maxBytes: 3 };
      expect(bodies(await store.claim("box", "g", again))).toEqual(["", "a", "bb"]);
    });

    it("read — expired messages are hidden from their expiry time on", async () => {
      await send("short", { expiresMs: T0 + 1000 });
      await send("long");
      expect(bodies(await store.read("box", { fromId: 0 }, { ...read, nowMs: T0 + 999 }))).toEqual([
        "short",
        "long",
      ]);
      expect(bodies(await store.read("box", { fromId: 0 }, { ...read, nowMs: T0 + 1000 }))).toEqual(["long"]);
    });

    it("read — fromCreatedMs keeps only messages created at or after it", async () => {
      await send("early", { sentMs: T0 });
      await send("late", { sentMs: T0 + 5000 });
      const later = await store.firstIdCreatedAtOrAfter("box", T0 + 1000);
      expect(later).toBe(1);
      expect(await store.firstIdCreatedAtOrAfter("box", T0 + 9000)).toBe(2);
      expect(bodies(await store.read("box", { fromId: 0, fromCreatedMs: T0 + 1000 }, read))).toEqual([
        "late",
      ]);
    });

    it("key compaction — a new message with the key replaces the old one, any priority", async () => {
      await send("v1", { key: "status" });
      await send("other");
      const last = await send("v2", { key: "status", priority: "urgent" });
      expect(last).toBe(2);
      expect(bodies(await store.read("box", { fromId: 0 }, read))).toEqual(["v2", "other"]);
      expect(bodies(await store.query("box", { key: "status", limit: 100, nowMs: T0 }))).toEqual(["v2"]);
    });

    it("delayed — id -1, invisible until promoted, then gets the next id and its promotion time", async () => {
      const [result] = await store.append([message("box", "later", { dueMs: T0 + 5000 })], T0);
      expect(result).toEqual({ id: -1 });
      await send("now");
      expect(await store.nextDueMs()).toBe(T0 + 5000);
      expect(await store.promoteDue(T0 + 4999)).toEqual([]);
      expect(bodies(await store.read("box", { fromId: 0 }, read))).toEqual(["now"]);
      expect(await store.promoteDue(T0 + 5000)).toEqual(["box"]);
      const all = await store.read("box", { fromId: 0 }, { ...read, nowMs: T0 + 5000 });
      expect(all.map((m) => [decode(m.payload), m.id, m.createdMs])).toEqual([
        ["now", 0, T0],
        ["later", 1, T0 + 5000],
      ]);
      expect(await store.nextDueMs()).toBeUndefined();
    });

    it("claim — members of one group get disjoint messages until the lease ends", async () => {
      for (const body of ["a", "b", "c", "d"]) await send(body);
      const first = await store.claim("box", "g", { ...claim, limit: 2 });
      const second = await store.claim("box", "g", { ...claim, limit: 10 });
      expect(bodies(first)).toEqual(["a", "b"]);
      expect(bodies(second)).toEqual(["c", "d"]);
      expect(await store.claim("box", "g", claim)).toEqual([]);
      const later = await store.claim("box", "g", { ...claim, nowMs: T0 + 30_000 });
      expect(bodies(later)).toEqual(["a", "b", "c", "d"]);
    });

    it("claim — independent groups each receive every message", async () => {
      for (const body of ["a", "b"]) await send(body);
      expect(bodies(await store.claim("box", "g1", claim))).toEqual(["a", "b"]);
      expect(bodies(await store.claim("box", "g2", claim))).toEqual(["a", "b"]);
      expect(await store.hasGroup("box", "g1")).toBe(true);
      expect(await store.hasGroup("box", "g3")).toBe(false);
    });

    it("claim — a new group keeps the start it was created with", async () => {
      await send("old");
      const start = { fromId: await store.nextMessageId("box") };
      expect(await store.claim("box", "g", { ...claim, start })).toEqual([]);
      await send("new");
      expect(bodies(await store.claim("box", "g", { ...claim, start: { fromId: 0 } }))).toEqual(["new"]);
    });

    it("ack — batch-aware: acknowledges the message and everything before it in the same claim", async () => {
      for (const body of ["a", "b", "c"]) await send(body);
      await send("crit", { priority: "critical" });
      const batch = await store.claim("box", "g", claim);
      expect(bodies(batch)).toEqual(["crit", "a", "b", "c"]);
      expect(await store.ack("box", "g", batch[1].id, T0)).toBe(true);
      const redelivered = await store.claim("box", "g", { ...claim, nowMs: T0 + 30_000 });
      expect(bodies(redelivered)).toEqual(["b", "c"]);
      expect(await store.ack("box", "g", redelivered[1].id, T0 + 30_000)).toBe(true);
      await send("d");
      expect(bodies(await store.claim("box", "g", { ...claim, nowMs: T0 + 90_000 }))).toEqual(["d"]);
    });

    it("ack — acking every message in turn or the last one gives the same result", async () => {
      for (const body of ["a", "b", "c"]) await send(body);
      const batch = await store.claim("box", "g", claim);
      for (const m of batch) expect(await store.ack("box", "g", m.id, T0)).toBe(true);
      expect(await store.ack("box", "g", batch[0].id, T0)).toBe(true);
      expect(await store.claim("box", "g", { ...claim, nowMs: T0 + 60_000 })).toEqual([]);
    });

    it("ack — a whole batch of mixed priorities acked at once: later claims neither skip nor repeat", async () => {
      await send("a");
      await send("b");
      await send("c1", { priority: "critical" });
      await send("u1", { priority: "urgent" });
      await send("c2", { priority: "critical" });
      await send("d");
      const batch = await store.claim("box", "g", { ...claim, limit: 4 });
      expect(bodies(batch)).toEqual(["c1", "c2", "u1", "a"]);
      expect(await store.ack("box", "g", batch[3].id, T0)).toBe(true);
      await send("c3", { priority: "critical" });
      await send("e");
      const rest = await store.claim("box", "g", claim);
      expect(bodies(rest)).toEqual(["c3", "b", "d", "e"]);
      expect(await store.ack("box", "g", rest[3].id, T0)).toBe(true);
      expect(await store.claim("box", "g", { ...claim, nowMs: T0 + 60_000 })).toEqual([]);
    });

    it("ack — a message never delivered to the group is refused", async () => {
      const id = await send("a");
      expect(await store.ack("box", "g", id, T0)).toBe(false);
      await store.claim("box", "other", claim);
      expect(await store.ack("box", "g", id, T0)).toBe(false);
      expect(await store.ack("box", "other", 99, T0)).toBe(false);
    });

    it("ack — out-of-order acks from competing members never lose or repeat messages", async () => {
      for (const body of ["a", "b", "c", "d"]) await send(body);
      const m1 = await store.claim("box", "g", { ...claim, limit: 2 });
      expect(bodies(m1)).toEqual(["a", "b"]);
      const m2 = await store.claim("box", "g", { ...claim, limit: 2 });
      expect(await store.ack("box", "g", m2[1].id, T0)).toBe(true);
      // m1 is still leased; after its lease it comes back, m2's never does.
      expect(bodies(await store.claim("box", "g", { ...claim, nowMs: T0 + 30_000 }))).toEqual(["a", "b"]);
    });

    it("claim — a leased message deleted or expired before its ACK holds up nothing", async () => {
      const gone = await send("deleted");
      await send("short", { expiresMs: T0 + 1000 });
      await send("b");
      expect(bodies(await store.claim("box", "g", claim))).toEqual(["deleted", "short", "b"]);
      expect(await store.deleteMessage("box", gone)).toBe(true);
      // Both leases run out; only b is still there to come back.
      const later = await store.claim("box", "g", { ...claim, nowMs: T0 + 30_000 });
      expect(bodies(later)).toEqual(["b"]);
      expect(await store.ack("box", "g", later[0].id, T0 + 30_000)).toBe(true);
      await send("c");
      const next = await store.claim("box", "g", { ...claim, nowMs: T0 + 30_000 });
      expect(bodies(next)).toEqual(["c"]);
      expect(await store.ack("box", "g", next[0].id, T0 + 30_000)).toBe(true);
      expect(await store.claim("box", "g", { ...claim, nowMs: T0 + 90_000 })).toEqual([]);
    });

    it("ack — batches ACKed in claim order, one still out: the rest never come back", async () => {
      for (const body of ["a", "b", "c", "d", "e", "f"]) await send(body);
      const first = await store.claim("box", "g", { ...claim, limit: 2 });
      const second = await store.claim("box", "g", { ...claim, limit: 2 });
      const third = await store.claim("box", "g", { ...claim, limit: 2 });
      expect(await store.ack("box", "g", first[1].id, T0)).toBe(true);
      expect(await store.ack("box", "g", third[0].id, T0)).toBe(true);
      // c and d (second) and f (after the ACKed e in third) were never ACKed.
      const later = await store.claim("box", "g", { ...claim, nowMs: T0 + 30_000 });
      expect(bodies(later)).toEqual(["c", "d", "f"]);
      expect(await store.ack("box", "g", later[2].id, T0 + 30_000)).toBe(true);
      expect(bodies(second)).toEqual(["c", "d"]);
      expect(await store.claim("box", "g", { ...claim, nowMs: T0 + 90_000 })).toEqual([]);
    });

    it("claim — reset (force_deliver) starts the group over from the given position", async () => {
      for (const body of ["a", "b"]) await send(body);
      const batch = await store.claim("box", "g", claim);
      await store.ack("box", "g", batch[1].id, T0);
      const again = await store.claim("box", "g", { ...claim, reset: true, start: { fromId: 0 } });
      expect(bodies(again)).toEqual(["a", "b"]);
    });

    it("query — key, tags (any), since and limit intersect; most recent first cut, ascending order", async () => {
      await send("a", { tags: ["x"], sentMs: T0 });
      await send("b", { tags: ["y", "z"], sentMs: T0 + 2000 });
      await send("c", { sentMs: T0 + 4000 });
      await send("d", { tags: ["x"], key: "k", sentMs: T0 + 6000 });
      const q = { limit: 100, nowMs: T0 + 10_000 };
      expect(bodies(await store.query("box", q))).toEqual(["a", "b", "c", "d"]);
      expect(bodies(await store.query("box", { ...q, limit: 2 }))).toEqual(["c", "d"]);
      expect(bodies(await store.query("box", { ...q, tags: ["x", "z"] }))).toEqual(["a", "b", "d"]);
      expect(bodies(await store.query("box", { ...q, tags: ["nope"] }))).toEqual([]);
      expect(bodies(await store.query("box", { ...q, createdFromMs: T0 + 2000 }))).toEqual(["b", "c", "d"]);
      expect(bodies(await store.query("box", { ...q, key: "k", tags: ["x"] }))).toEqual(["d"]);
      expect(bodies(await store.query("box", { ...q, key: "missing" }))).toEqual([]);
      expect(await store.query("box", { ...q, limit: 0 })).toEqual([]);
    });

    it("query — a priority class, and pages back from the newest by msg_id", async () => {
      const ids: number[] = [];
      for (const [body, priority] of [
        ["a", "normal"],
        ["b", "critical"],
        ["c", "normal"],
        ["d", "urgent"],
        ["e", "normal"],
      ] as const) {
        ids.push(await send(body, { priority }));
      }
      const q = { limit: 100, nowMs: T0 + 1000 };
      expect(bodies(await store.query("box", { ...q, priority: "normal" }))).toEqual(["a", "c", "e"]);
      expect(bodies(await store.query("box", { ...q, priority: "critical" }))).toEqual(["b"]);
      // Newest first in pages of two: the last two, then the two before the oldest of those.
      const first = await store.query("box", { ...q, limit: 2 });
      expect(bodies(first)).toEqual(["d", "e"]);
      const second = await store.query("box", { ...q, limit: 2, beforeId: first[0].id });
      expect(bodies(second)).toEqual(["b", "c"]);
      expect(bodies(await store.query("box", { ...q, beforeId: ids[1] }))).toEqual(["a"]);
      expect(bodies(await store.query("box", { ...q, priority: "normal", beforeId: ids[4] }))).toEqual([
        "a",
        "c",
      ]);
    });

    it("delete — removes one message of that mailbox only", async () => {
      await store.createMailbox({ address: "other", ttlSeconds: 0, desc: "", createdMs: T0 }, T0);
      const id = await send("a");
      await store.append([message("other", "keep")], T0);
      expect(await store.deleteMessage("box", id)).toBe(true);
      expect(await store.deleteMessage("box", id)).toBe(false);
      expect(await store.read("box", { fromId: 0 }, read)).toEqual([]);
      expect(bodies(await store.read("other", { fromId: 0 }, read))).toEqual(["keep"]);
    });

    it("purge — removes expired mailboxes with everything in them, and expired messages", async () => {
      await store.createMailbox(
        { address: "tmp", ttlSeconds: 1, desc: "", createdMs: T0, expiresMs: T0 + 1000 },
        T0,
      );
      await store.append([message("tmp", "x"), message("tmp", "later", { dueMs: T0 + 60_000 })], T0);
      await send("gone", { expiresMs: T0 + 500 });
      await send("stays");
      expect(await store.purgeExpired(T0 + 499)).toEqual({ mailboxes: [], messages: 0 });
      const purged = await store.purgeExpired(T0 + 1000);
      expect(purged).toEqual({ mailboxes: ["tmp"], messages: 1 });
      expect(await store.nextDueMs()).toBeUndefined();
      expect(bodies(await store.read("box", { fromId: 0 }, { ...read, nowMs: T0 + 1000 }))).toEqual([
        "stays",
      ]);
    });

    it("binary payloads and header blocks round-trip byte for byte", async () => {
      const payload = new Uint8Array(256).map((_, i) => i);
      const header = text("NATS/1.0\r\nmq9-key: k\r\n\r\n");
      await send("", { payload, header, key: "k" });
      const [stored] = await store.read("box", { fromId: 0 }, read);
      expect(Buffer.from(stored.payload).equals(Buffer.from(payload))).toBe(true);
      expect(decode(stored.header!)).toBe("NATS/1.0\r\nmq9-key: k\r\n\r\n");
    });

    it("append — one batch keeps each message's own header, tags, payload and expiry", async () => {
      const header = text("NATS/1.0\r\nx: 1\r\n\r\n");
      const results = await store.append(
        [
          message("box", "first", { header, tags: ["a", "b"] }),
          message("box", "", { expiresMs: T0 + 5000 }),
          message("box", "third", { header: text("NATS/1.0\r\ny: 22\r\n\r\n"), priority: "urgent" }),
          message("box", "fourth", { tags: [] }),
        ],
        T0,
      );
      expect(results).toEqual([{ id: 0 }, { id: 1 }, { id: 2 }, { id: 3 }]);
      const stored = await store.read("box", { fromId: 0 }, read);
      expect(
        stored.map((m) => [m.id, decode(m.payload), m.header && decode(m.header), m.tags, m.expiresMs]),
      ).toEqual([
        [2, "third", "NATS/1.0\r\ny: 22\r\n\r\n", undefined, undefined],
        [0, "first", "NATS/1.0\r\nx: 1\r\n\r\n", ["a", "b"], undefined],
        [1, "", undefined, undefined, T0 + 5000],
        [3, "fourth", undefined, [], undefined],
      ]);
    });
    const keyed = (key: string, untilMs = T0 + 60_000): Partial<NewMessage> => ({ dedup: { key, untilMs } });

    it("idempotency key — a repeat within the window stores nothing and answers the original id", async () => {
      const [first] = await store.append([message("box", "a", keyed("k1"))], T0);
      expect(first).toEqual({ id: 0 });
      const [again] = await store.append([message("box", "a", keyed("k1"))], T0 + 59_999);
      expect(again).toEqual({ id: 0, duplicate: true });
      // Within one batch too, the first message with the key is the one stored.
      const batch = await store.append(
        [message("box", "b", keyed("k2")), message("box", "b", keyed("k2")), message("box", "c")],
        T0,
      );
      expect(batch).toEqual([{ id: 1 }, { id: 1, duplicate: true }, { id: 2 }]);
      expect(bodies(await store.read("box", { fromId: 0 }, read))).toEqual(["a", "b", "c"]);
      expect(await store.nextMessageId("box")).toBe(3);
    });

    it("idempotency key — per mailbox; a delayed repeat answers -1; a missing mailbox remembers nothing", async () => {
      await store.createMailbox({ address: "other", ttlSeconds: 0, desc: "", createdMs: T0 }, T0);
      const results = await store.append(
        [
          message("box", "a", keyed("k")),
          message("other", "a", keyed("k")),
          message("nope", "a", keyed("k")),
          message("box", "later", { ...keyed("d"), dueMs: T0 + 1000 }),
        ],
        T0,
      );
      // Ids are the store's to choose across mailboxes: the other mailbox's message is stored, no repeat.
      expect(results[0]).toEqual({ id: 0 });
      expect(results[1]).toEqual({ id: expect.any(Number) });
      expect(results.slice(2)).toEqual([{ missingMailbox: true }, { id: -1 }]);
      expect(await store.append([message("box", "later", { ...keyed("d"), dueMs: T0 + 1000 })], T0)).toEqual([
        { id: -1, duplicate: true },
      ]);
      expect(await store.promoteDue(T0 + 1000)).toEqual(["box"]);
      expect(bodies(await store.read("box", { fromId: 0 }, { ...read, nowMs: T0 + 1000 }))).toEqual([
        "a",
        "later",
      ]);
    });

    it("idempotency key — once its window has passed (and been swept) the key stores a new message", async () => {
      await store.append([message("box", "a", keyed("k", T0 + 1000))], T0);
      await store.purgeExpired(T0 + 999);
      expect(await store.append([message("box", "a", keyed("k", T0 + 1999))], T0 + 999)).toEqual([
        { id: 0, duplicate: true },
      ]);
      // At its end the window is over, before any sweep…
      expect(await store.append([message("box", "b", keyed("k", T0 + 2000))], T0 + 1000)).toEqual([
        { id: 1 },
      ]);
      // …and after one, the key's new window holds.
      await store.purgeExpired(T0 + 1500);
      expect(await store.append([message("box", "b", keyed("k", T0 + 2500))], T0 + 1500)).toEqual([
        { id: 1, duplicate: true },
      ]);
      await store.purgeExpired(T0 + 2000);
      expect(await store.append([message("box", "c", keyed("k", T0 + 3000))], T0 + 2000)).toEqual([
        { id: 2 },
      ]);
    });

    const counts = (messages: { deliveryCount?: number }[]) => messages.map((m) => m.deliveryCount);
    /** The body of the message with that id (ids of "box" follow its sends a, b, c, …). */
    const decodeId = (id: number) => String.fromCharCode(97 + id);
    const lease = 30_000;

    it("delivery count — 1 on first delivery, one more each time the lease runs out; groups count apart", async () => {
      await send("a");
      expect(counts(await store.claim("box", "g", claim))).toEqual([1]);
      expect(counts(await store.claim("box", "g", { ...claim, nowMs: T0 + lease }))).toEqual([2]);
      expect(counts(await store.claim("box", "g", { ...claim, nowMs: T0 + 2 * lease }))).toEqual([3]);
      expect(counts(await store.claim("box", "other", claim))).toEqual([1]);
    });

    it("max_deliver — the last lease's end holds the message for dead letters; settling ends it", async () => {
      await send("poison");
      await send("fine");
      const policy = { maxDeliver: 2 };
      const first = await store.claim("box", "g", { ...claim, limit: 1, policy });
      const fine = await store.claim("box", "g", { ...claim, limit: 1 });
      expect(bodies([...first, ...fine])).toEqual(["poison", "fine"]);
      expect(await store.ack("box", "g", fine[0].id, T0)).toBe(true);
      // The policy is remembered: later claims need not repeat it.
      expect(counts(await store.claim("box", "g", { ...claim, nowMs: T0 + lease }))).toEqual([2]);
      expect(await store.deadLetters(T0 + lease, 10)).toEqual([]);
      expect(await store.claim("box", "g", { ...claim, nowMs: T0 + 2 * lease })).toEqual([]);
      const letters = await store.deadLetters(T0 + 2 * lease, 10);
      expect(
        letters.map((l) => [
          l.mailbox,
          l.group,
          decode(l.message.payload),
          l.deliveryCount,
          l.deadLetterAddress,
        ]),
      ).toEqual([["box", "g", "poison", 2, "box.dlq"]]);
      await store.settleDeadLetters(letters, T0 + 2 * lease);
      expect(await store.deadLetters(T0 + 2 * lease, 10)).toEqual([]);
      expect(await store.claim("box", "g", { ...claim, nowMs: T0 + 10 * lease })).toEqual([]);
      // Settling twice (a sweep repeated after a restart) changes nothing.
      await store.settleDeadLetters(letters, T0 + 2 * lease);
      await send("next");
      expect(bodies(await store.claim("box", "g", { ...claim, nowMs: T0 + 10 * lease }))).toEqual(["next"]);
    });

    it("max_deliver — a held message that expires before the sweep is no dead letter", async () => {
      await send("short", { expiresMs: T0 + 40_000 });
      await store.claim("box", "g", { ...claim, policy: { maxDeliver: 1 } });
      expect((await store.deadLetters(T0 + lease, 10)).map((l) => decode(l.message.payload))).toEqual([
        "short",
      ]);
      expect(await store.deadLetters(T0 + 40_000, 10)).toEqual([]);
    });

    it("max_deliver — the mailbox's default applies to its groups; a group's own limit wins", async () => {
      await store.createMailbox(
        {
          address: "limited",
          ttlSeconds: 0,
          desc: "",
          createdMs: T0,
          maxDeliver: 1,
          deadLetter: "graveyard",
        },
        T0,
      );
      expect(await store.getMailbox("limited", T0)).toMatchObject({ maxDeliver: 1, deadLetter: "graveyard" });
      await store.append([message("limited", "x")], T0);
      expect(counts(await store.claim("limited", "g", claim))).toEqual([1]);
      expect(counts(await store.claim("limited", "own", { ...claim, policy: { maxDeliver: 3 } }))).toEqual([
        1,
      ]);
      expect(await store.claim("limited", "g", { ...claim, nowMs: T0 + lease })).toEqual([]);
      expect(counts(await store.claim("limited", "own", { ...claim, nowMs: T0 + lease }))).toEqual([2]);
      const letters = await store.deadLetters(T0 + lease, 10);
      expect(letters.map((l) => [l.group, l.deadLetterAddress])).toEqual([["g", "graveyard"]]);
    });

    it("max_deliver — the mailbox's default holds for a group started over (reset)", async () => {
      await store.createMailbox(
        { address: "limited", ttlSeconds: 0, desc: "", createdMs: T0, maxDeliver: 1 },
        T0,
      );
      await store.append([message("limited", "x")], T0);
      await store.claim("limited", "g", claim);
      expect(counts(await store.claim("limited", "g", { ...claim, reset: true, nowMs: T0 + 1 }))).toEqual([
        1,
      ]);
      expect(await store.claim("limited", "g", { ...claim, nowMs: T0 + 1 + lease })).toEqual([]);
      expect((await store.deadLetters(T0 + 1 + lease, 10)).map((l) => l.group)).toEqual(["g"]);
    });

    it("nak — delivered again at once, after a delay, or held for dead letters when terminal", async () => {
      for (const body of ["a", "b", "c"]) await send(body);
      const batch = await store.claim("box", "g", claim);
      expect(await store.nak("box", "g", batch[0].id, { nowMs: T0 })).toEqual({
        found: true,
        deadLetter: false,
      });
      expect(await store.nak("box", "g", batch[1].id, { nowMs: T0, delayMs: 5000, reason: "busy" })).toEqual({
        found: true,
        deadLetter: false,
      });
      expect(
        await store.nak("box", "g", batch[2].id, { nowMs: T0, terminal: true, reason: "bad input" }),
      ).toEqual({
        found: true,
        deadLetter: true,
      });
      const again = await store.claim("box", "g", { ...claim, nowMs: T0 + 1 });
      expect(bodies(again)).toEqual(["a"]);
      expect(counts(again)).toEqual([2]);
      expect(bodies(await store.claim("box", "g", { ...claim, nowMs: T0 + 5000 }))).toEqual(["b"]);
      const letters = await store.deadLetters(T0 + 5000, 10);
      expect(letters.map((l) => [decode(l.message.payload), l.reason, l.deliveryCount])).toEqual([
        ["c", "bad input", 1],
      ]);
      // Nothing leased: refused, and nothing changes.
      expect(await store.nak("box", "g", 99, { nowMs: T0 })).toMatchObject({ found: false });
      expect(await store.nak("box", "nogroup", batch[0].id, { nowMs: T0 })).toMatchObject({ found: false });
    });

    it("nak — a later ACK of the same claim does not cover a message given back", async () => {
      for (const body of ["a", "b"]) await send(body);
      const batch = await store.claim("box", "g", claim);
      await store.nak("box", "g", batch[0].id, { nowMs: T0, delayMs: 1000 });
      expect(await store.ack("box", "g", batch[1].id, T0)).toBe(true);
      const again = await store.claim("box", "g", { ...claim, nowMs: T0 + 1000 });
      expect(bodies(again)).toEqual(["a"]);
      expect(await store.ack("box", "g", again[0].id, T0 + 1000)).toBe(true);
      expect(await store.claim("box", "g", { ...claim, nowMs: T0 + 10 * lease })).toEqual([]);
    });

    it("leases — who holds what, how often delivered, waiting or dead; a member's leases released", async () => {
      if (!canInspectLeases(store)) throw new Error("every store offers lease inspection");
      for (const body of ["a", "b", "c", "d"]) await send(body);
      const policy = { maxDeliver: 2, backoffMs: [5000] };
      const one = await store.claim("box", "g", { ...claim, limit: 2, member: "m1", policy });
      const two = await store.claim("box", "g", { ...claim, limit: 2, member: "m2" });
      await store.nak("box", "g", one[1].id, { nowMs: T0, reason: "flaky" });
      await store.nak("box", "g", two[1].id, { nowMs: T0, terminal: true, reason: "bad" });
      const report = await store.groupLeases("box", "g", T0 + 1, 100);
      expect(report?.policy).toEqual(policy);
      expect(report?.deadLettered).toBe(0);
      expect(report?.redelivered).toBe(0);
      expect(
        report?.leases.map((l) => [decodeId(l.msgId), l.member, l.deliveryCount, l.state, l.reason]),
      ).toEqual([
        ["a", "m1", 1, "leased", undefined],
        ["b", "m1", 1, "waiting", "flaky"],
        ["c", "m2", 1, "leased", undefined],
        ["d", "m2", 1, "dead", "bad"],
      ]);
      expect(report?.leases[1].retryAtMs).toBe(T0 + 5000);
      expect(report?.leases[0].leaseUntilMs).toBe(T0 + 30_000);
      // m1 hangs: its running lease ends now, and another member gets the message at once.
      expect(await store.releaseMemberLeases("box", "g", "m1", T0 + 2)).toBe(1);
      expect(bodies(await store.claim("box", "g", { ...claim, nowMs: T0 + 3, member: "m3" }))).toEqual(["a"]);
      const after = await store.groupLeases("box", "g", T0 + 3, 100);
      expect(after?.redelivered).toBe(1);
      expect(after?.leases[0]).toMatchObject({ member: "m3", deliveryCount: 2, state: "leased" });
      expect(await store.releaseMemberLeases("box", "g", undefined, T0 + 4)).toBe(2);
      expect(await store.groupLeases("box", "nogroup", T0, 100)).toBeUndefined();
      expect(await store.releaseMemberLeases("box", "nogroup", undefined, T0)).toBeUndefined();
    });

    it("backoff — a message whose lease ran out waits its step before it is delivered again", async () => {
      await send("a");
      const policy = { backoffMs: [10_000, 20_000] };
      await store.claim("box", "g", { ...claim, policy });
      expect(await store.claim("box", "g", { ...claim, nowMs: T0 + lease })).toEqual([]);
      expect(counts(await store.claim("box", "g", { ...claim, nowMs: T0 + lease + 10_000 }))).toEqual([2]);
      const secondEnd = T0 + lease + 10_000 + lease;
      expect(await store.claim("box", "g", { ...claim, nowMs: secondEnd + 19_999 })).toEqual([]);
      expect(counts(await store.claim("box", "g", { ...claim, nowMs: secondEnd + 20_000 }))).toEqual([3]);
    });

    if (factory.reopen) {
      const reopen = factory.reopen;
      it("restart — the mailbox's default max_deliver holds whatever touches the group first", async () => {
        await store.createMailbox(
          { address: "limited", ttlSeconds: 0, desc: "", createdMs: T0, maxDeliver: 1 },
          T0,
        );
        await store.append([message("limited", "x")], T0);
        await store.claim("limited", "g", claim);
        store = await reopen(store);
        if (!canInspectLeases(store)) throw new Error("every store offers lease inspection");
        // Not a claim first: a lease inspection loads the group, and must keep the mailbox's limit.
        await store.releaseMemberLeases("limited", "g", undefined, T0 + lease);
        // The embedded store forgot the lease and delivers it once more; PostgreSQL holds it.
        await store.claim("limited", "g", { ...claim, nowMs: T0 + lease });
        expect(await store.claim("limited", "g", { ...claim, nowMs: T0 + 3 * lease })).toEqual([]);
        expect((await store.deadLetters(T0 + 3 * lease, 10)).map((l) => l.group)).toEqual(["g"]);
      });

      it("restart — delivery counts past the first survive a reopen; a used-up message is not delivered again", async () => {
        await send("a");
        await send("b");
        const policy = { maxDeliver: 3 };
        await store.claim("box", "g", { ...claim, policy });
        expect(counts(await store.claim("box", "g", { ...claim, nowMs: T0 + lease }))).toEqual([2, 2]);
        const thirdA = await store.claim("box", "g", { ...claim, limit: 1, nowMs: T0 + 2 * lease });
        const thirdB = await store.claim("box", "g", { ...claim, limit: 1, nowMs: T0 + 2 * lease });
        expect(counts([...thirdA, ...thirdB])).toEqual([3, 3]);
        expect(await store.ack("box", "g", thirdB[0].id, T0 + 2 * lease)).toBe(true);
        await send("c");
        store = await reopen(store);
        // a was delivered 3 times: it goes to dead letters, never to the group again.
        const after = await store.claim("box", "g", { ...claim, nowMs: T0 + 3 * lease });
        expect(bodies(after)).toEqual(["c"]);
        const letters = await store.deadLetters(T0 + 3 * lease, 10);
        expect(letters.map((l) => [decode(l.message.payload), l.deliveryCount])).toEqual([["a", 3]]);
      });

      it("restart — messages, ids, groups and acks survive a reopen", async () => {
        for (const body of ["a", "b", "c"]) await send(body);
        const batch = await store.claim("box", "g", { ...claim, limit: 2 });
        await store.ack("box", "g", batch[1].id, T0);
        await store.append([message("box", "later", { dueMs: T0 + 1000 })], T0);
        store = await reopen(store);
        expect(await store.nextMessageId("box")).toBe(3);
        expect(await send("d")).toBe(3);
        expect(bodies(await store.claim("box", "g", claim))).toEqual(["c", "d"]);
        expect(await store.promoteDue(T0 + 1000)).toEqual(["box"]);
      });

      it("restart — an idempotency key is remembered across a reopen, until its window ends", async () => {
        await store.append([message("box", "a", keyed("k"))], T0);
        await send("b");
        store = await reopen(store);
        expect(await store.append([message("box", "a", keyed("k"))], T0 + 1000)).toEqual([
          { id: 0, duplicate: true },
        ]);
        expect(await store.append([message("box", "a", keyed("k"))], T0 + 60_000)).toEqual([{ id: 2 }]);
      });

      it("restart — a key taken over after its window keeps the newer window, whatever rows it came with", async () => {
        // The first SEND's row has tags, the second's is plain: a store may write them apart.
        await store.append([message("box", "a", { ...keyed("k", T0 + 1000), tags: ["t"] })], T0);
        expect(await store.append([message("box", "b", keyed("k", T0 + 2000))], T0 + 1000)).toEqual([
          { id: 1 },
        ]);
        store = await reopen(store);
        expect(await store.append([message("box", "b", keyed("k", T0 + 2500))], T0 + 1500)).toEqual([
          { id: 1, duplicate: true },
        ]);
      });

      it("restart — what was leased and not ACKed comes back, an out-of-order ACK does not", async () => {
        for (const body of ["a", "b", "c", "d", "e"]) await send(body);
        const first = await store.claim("box", "g", { ...claim, limit: 2 });
        const second = await store.claim("box", "g", { ...claim, limit: 2 });
        expect(await store.ack("box", "g", second[1].id, T0)).toBe(true);
        expect(bodies(first)).toEqual(["a", "b"]);
        store = await reopen(store);
        const again = await store.claim("box", "g", { ...claim, nowMs: T0 + 30_000 });
        expect(bodies(again)).toEqual(["a", "b", "e"]);
        expect(await store.ack("box", "g", again[2].id, T0 + 30_000)).toBe(true);
        expect(await store.ack("box", "g", second[0].id, T0 + 30_000)).toBe(true);
        await send("f");
        expect(bodies(await store.claim("box", "g", { ...claim, nowMs: T0 + 90_000 }))).toEqual(["f"]);
      });

      it("restart — ids of deleted or expired newest messages are never given out again", async () => {
        await send("a");
        const newest = await send("b");
        expect(await store.deleteMessage("box", newest)).toBe(true);
        await send("short", { expiresMs: T0 + 1000 });
        await store.purgeExpired(T0 + 1000);
        store = await reopen(store);
        expect(await send("c")).toBe(3);
      });

      it("restart — the reply inboxes bound to users survive a reopen; a save replaces the last", async () => {
        // A store that keeps nothing across a restart keeps no inboxes either (they live in memory).
        const kept = store.inboxBindings();
        if (kept === undefined) return;
        expect(await kept.load()).toEqual([]);
        await kept.save([
          { id: "a1", user: "alice" },
          { id: "b1", user: "bob" },
        ]);
        await kept.save([
          { id: "a1", user: "alice" },
          { id: "a2", user: "alice" },
        ]);
        store = await reopen(store);
        const after = store.inboxBindings();
        const byId = (x: { id: string }, y: { id: string }) => x.id.localeCompare(y.id);
        expect((await after?.load())?.sort(byId)).toEqual([
          { id: "a1", user: "alice" },
          { id: "a2", user: "alice" },
        ]);
        await after?.save([]);
        expect(await after?.load()).toEqual([]);
      });
    }
  });
}
