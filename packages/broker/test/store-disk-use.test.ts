import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { WAL_TRUNCATE_BYTES } from "../src/store/disk-upkeep.js";
import { SqliteStore } from "../src/store/sqlite-store.js";

const MiB = 1024 * 1024;
/** The WAL's bound plus what one checkpoint round may add before it is emptied. */
const WAL_BOUND = 3 * WAL_TRUNCATE_BYTES;

function walBytes(dir: string): number {
  try {
    return statSync(join(dir, "mq9.db-wal")).size;
  } catch {
    return 0;
  }
}

/** Lets the event loop turn, as requests arriving on sockets do between them. */
const turn = () => new Promise((resolve) => setImmediate(resolve));

async function eventually(check: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("disk use stays bounded", () => {
  it("deleting 100,000 messages one by one keeps the WAL under its bound, and an idle store empties it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mq9-disk-"));
    const store = new SqliteStore({ dataDir: dir });
    const now = Date.now();
    const count = 100_000;
    try {
      await store.createMailbox({ address: "box", ttlSeconds: 0, desc: "", createdMs: now }, now);
      for (let first = 0; first < count; first += 1000) {
        const batch = Array.from({ length: 1000 }, (_, i) => ({
          mailbox: "box",
          priority: "normal" as const,
          payload: Buffer.from(`message ${first + i} `.padEnd(200, "x")),
          sentMs: now,
        }));
        await store.append(batch, now);
      }
      let largest = 0;
      for (let id = 0; id < count; id++) {
        expect(await store.deleteMessage("box", id)).toBe(true);
        if (id % 10 === 0) {
          largest = Math.max(largest, walBytes(dir));
          await turn();
        }
      }
      // It grew to 829 MiB before (each delete is one commit, and passive checkpoints never
      // start the WAL over while commits keep coming).
      expect(largest).toBeLessThan(WAL_BOUND);
      await eventually(() => walBytes(dir) < 4 * MiB);
      // Every message is gone: the log's segments with them.
      await eventually(() => (store.logStatus()?.messageBytes ?? 1) === 0);
    } finally {
      await store.close();
    }
  }, 180_000);

  it("creating and expiring 10,000 mailboxes keeps the WAL under its bound", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mq9-disk-"));
    const store = new SqliteStore({ dataDir: dir });
    const now = Date.now();
    try {
      let largest = 0;
      for (let i = 0; i < 10_000; i++) {
        const address = `box.m${i}`;
        await store.createMailbox(
          { address, ttlSeconds: 60, desc: "", createdMs: now, expiresMs: now + 60_000 },
          now,
        );
        await store.append(
          [{ mailbox: address, priority: "normal", payload: Buffer.from("x".repeat(500)), sentMs: now }],
          now,
        );
        if (i % 10 === 0) {
          largest = Math.max(largest, walBytes(dir));
          await turn();
        }
      }
      const purged = await store.purgeExpired(now + 60_001);
      expect(purged.mailboxes).toHaveLength(10_000);
      largest = Math.max(largest, walBytes(dir));
      expect(largest).toBeLessThan(WAL_BOUND);
      await eventually(() => walBytes(dir) < 4 * MiB);
    } finally {
      await store.close();
    }
  }, 180_000);

  it("an ACK storm (every message claimed and acknowledged on its own) keeps the WAL under its bound", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mq9-disk-"));
    const store = new SqliteStore({ dataDir: dir });
    const now = Date.now();
    const count = 50_000;
    const groups = ["g1", "g2"];
    try {
      await store.createMailbox({ address: "box", ttlSeconds: 0, desc: "", createdMs: now }, now);
      for (let first = 0; first < count; first += 1000) {
        const batch = Array.from({ length: 1000 }, (_, i) => ({
          mailbox: "box",
          priority: "normal" as const,
          payload: Buffer.from(`message ${first + i} `.padEnd(200, "x")),
          sentMs: now,
        }));
        await store.append(batch, now);
      }
      const claim = {
        limit: 1,
        maxBytes: 1 << 20,
        nowMs: now,
        start: { fromId: 0 },
        reset: false,
        leaseMs: 60_000,
      };
      let largest = 0;
      let acked = 0;
      for (let n = 0; n < count; n++) {
        for (const group of groups) {
          const [message] = await store.claim("box", group, claim);
          expect(await store.ack("box", group, message.id, now)).toBe(true);
          acked++;
        }
        if (n % 10 === 0) {
          largest = Math.max(largest, walBytes(dir));
          await turn();
        }
      }
      expect(acked).toBe(count * groups.length);
      for (const group of groups) expect(await store.claim("box", group, claim)).toEqual([]);
      expect(largest).toBeLessThan(WAL_BOUND);
      await eventually(() => walBytes(dir) < 4 * MiB);
    } finally {
      await store.close();
    }
  }, 300_000);
});
