import { rmSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../src/internal.js";
import type { NewMessage } from "../src/store/store.js";
import { tempDir } from "./harness.js";

const NOW = 1_000_000;

function message(mailbox: string, payload: string, extra: Partial<NewMessage> = {}): NewMessage {
  return { mailbox, priority: "normal", payload: Buffer.from(payload), sentMs: NOW, ...extra };
}

describe("SQLite store: the REST API's reads and admin operations", () => {
  const dirs: string[] = [];
  const stores: SqliteStore[] = [];
  const open = (dir = tempDir()) => {
    dirs.push(dir);
    const store = new SqliteStore({ dataDir: dir });
    stores.push(store);
    return store;
  };
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it("counts depth per priority, bytes, the oldest message and delayed ones; skips expired", async () => {
    const store = open();
    await store.createMailbox({ address: "a.box", ttlSeconds: 0, desc: "d", createdMs: NOW }, NOW);
    await store.createMailbox(
      { address: "b.box", ttlSeconds: 1, desc: "", createdMs: NOW, expiresMs: NOW + 1000 },
      NOW,
    );
    await store.append(
      [
        message("a.box", "one", { sentMs: NOW - 5000 }),
        message("a.box", "two", { priority: "critical" }),
        message("a.box", "gone", { expiresMs: NOW + 10 }),
        message("a.box", "later", { dueMs: NOW + 60_000 }),
      ],
      NOW,
    );
    const [stats] = await store.mailboxStats(NOW + 100, { search: "a.", limit: 10 });
    expect(stats).toMatchObject({
      address: "a.box",
      desc: "d",
      depth: { critical: 1, urgent: 0, normal: 1 },
      oldestMs: NOW - 5000,
      delayed: 1,
      groups: 0,
    });
    // The two live messages' bytes as the store keeps them: at least their payloads.
    expect(stats.bytes).toBeGreaterThanOrEqual(6);
    // b.box has expired by then.
    expect((await store.mailboxStats(NOW + 2000, { limit: 10 })).map((s) => s.address)).toEqual(["a.box"]);
    expect(await store.totals(NOW + 100)).toEqual({ mailboxes: 2, messages: 2, bytes: stats.bytes });
    await store.close();
  });

  it("reports a group's lag and leases, which ACKs lower", async () => {
    const store = open();
    await store.createMailbox({ address: "g.box", ttlSeconds: 0, desc: "", createdMs: NOW }, NOW);
    await store.append([message("g.box", "1"), message("g.box", "2"), message("g.box", "3")], NOW);
    const claimed = await store.claim("g.box", "workers", {
      limit: 2,
      maxBytes: 1 << 20,
      nowMs: NOW,
      start: { fromId: 0 },
      reset: false,
      leaseMs: 30_000,
    });
    expect(await store.groupStats("g.box", NOW)).toEqual([
      { name: "workers", cursors: [0, 0, 0], lag: 3, leased: 2, oldestUnackedMs: NOW },
    ]);
    await store.ack("g.box", "workers", claimed[1].id, NOW);
    expect(await store.groupStats("g.box", NOW)).toEqual([
      { name: "workers", cursors: [0, 0, claimed[1].id + 1], lag: 1, leased: 0, oldestUnackedMs: NOW },
    ]);
    expect(await store.groupStats("no.box", NOW)).toBeUndefined();
    await store.close();
  });

  it("purges a mailbox's messages and deletes mailboxes without ever reusing a msg_id", async () => {
    const dir = tempDir();
    let store = open(dir);
    await store.createMailbox({ address: "p.box", ttlSeconds: 0, desc: "", createdMs: NOW }, NOW);
    const first = await store.append([message("p.box", "1"), message("p.box", "2")], NOW);
    expect(await store.purgeMailbox("p.box", NOW)).toBe(2);
    expect(await store.query("p.box", { limit: 10, nowMs: NOW })).toEqual([]);
    expect(await store.purgeMailbox("no.box", NOW)).toBeUndefined();
    await store.close();
    store = open(dir);
    const [after] = await store.append([message("p.box", "3")], NOW);
    expect((after as { id: number }).id).toBeGreaterThan((first[1] as { id: number }).id);
    expect(await store.deleteMailbox("p.box", NOW)).toBe(true);
    expect(await store.getMailbox("p.box", NOW)).toBeUndefined();
    expect(await store.deleteMailbox("p.box", NOW)).toBe(false);
    await store.close();
  });
});
