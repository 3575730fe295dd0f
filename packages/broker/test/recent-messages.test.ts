import { describe, expect, it } from "vitest";
import { type AppendedRow, encodeAppendedRows } from "../src/store/appended-rows.js";
import { RecentMessages } from "../src/store/recent-messages.js";

const row = (id: number, size: number, extra: Partial<AppendedRow> = {}): AppendedRow => ({
  id,
  mbox: 1,
  priority: 1,
  key: null,
  tags: null,
  header: null,
  payload: Buffer.alloc(size, id),
  createdMs: id,
  expiresMs: null,
  dueMs: null,
  ...extra,
});

/** Keeps rows as the store does: as views of the group's encoded record, reused afterwards. */
function keep(recent: RecentMessages, rows: AppendedRow[]): void {
  const encoded = encodeAppendedRows(rows);
  rows.forEach((r, i) => {
    r.payload = encoded.payloads[i];
    r.header = encoded.headers[i];
  });
  recent.keep(rows);
  // The cache has its own copy: the record's memory may serve something else now.
  encoded.bytes.fill(0xee);
}

const kept = (recent: RecentMessages, ids: number[]) => ids.filter((id) => recent.get(id) !== undefined);

describe("recent messages", () => {
  it("keeps the newest messages within its byte budget, dropping the oldest first", () => {
    const recent = new RecentMessages(3 * (1000 + 128));
    for (let id = 1; id <= 5; id++) keep(recent, [row(id, 1000)]);
    expect(kept(recent, [1, 2, 3, 4, 5])).toEqual([3, 4, 5]);
  });

  it("keeps exactly the newest groups over a long run", () => {
    const recent = new RecentMessages(100 * (1000 + 128));
    for (let id = 1; id <= 20_000; id += 4)
      keep(
        recent,
        [1, 2, 3, 4].map((k) => row(id + k - 1, 1000)),
      );
    const all = Array.from({ length: 20_000 }, (_, i) => i + 1);
    expect(kept(recent, all)).toEqual(Array.from({ length: 100 }, (_, i) => 19_901 + i));
    expect(recent.get(20_000)?.payload[999]).toBe(20_000 & 0xff);
  });

  it("answers a class read only from where every message of the class is kept", () => {
    const recent = new RecentMessages(3 * (1000 + 128));
    const ids = (from: number) => recent.classMessages(1, 1, from, 0, 0, 10)?.map((m) => m.id);
    expect(ids(1)).toBeUndefined();
    for (let id = 1; id <= 5; id++) keep(recent, [row(id, 1000)]);
    // 1 and 2 were dropped for room.
    expect([1, 2, 3, 4, 6].map(ids)).toEqual([undefined, undefined, [3, 4, 5], [4, 5], []]);
    recent.notKept(1, 1, 6);
    keep(recent, [row(7, 10)]);
    expect([5, 6, 7].map(ids)).toEqual([undefined, undefined, [7]]);
  });

  it("leaves out of a class read what was deleted, replaced by key, expired or created before", () => {
    const recent = new RecentMessages(1 << 20);
    keep(recent, [
      row(1, 1, { key: "k" }),
      row(2, 1),
      row(3, 1, { expiresMs: 100 }),
      row(4, 1, { createdMs: 50 }),
      row(5, 1, { key: "k", priority: 0 }),
    ]);
    recent.delete(2);
    const ids = (rank: number, nowMs: number, fromCreatedMs: number) =>
      recent.classMessages(1, rank, 1, nowMs, fromCreatedMs, 10)?.map((m) => m.id);
    expect(ids(1, 99, 0)).toEqual([3, 4]);
    expect(ids(1, 100, 0)).toEqual([4]);
    expect(ids(1, 0, 4)).toEqual([4]);
    expect(ids(0, 0, 0)).toEqual([5]);
    expect(recent.get(2)).toBeUndefined();
    // Another mailbox holds none of them.
    expect(recent.classMessages(2, 1, 1, 0, 0, 10)).toEqual([]);
  });

  it("gives back each message as it was stored", () => {
    const recent = new RecentMessages(1 << 20);
    const header = Buffer.from("NATS/1.0\r\nk: v\r\n\r\n");
    keep(recent, [
      row(7, 3),
      row(8, 5, { priority: 0, key: "state", tags: '["a","b"]', header, expiresMs: 99 }),
    ]);
    expect(recent.get(8)).toMatchObject({
      id: 8,
      priority: "critical",
      key: "state",
      tags: ["a", "b"],
      header,
      createdMs: 8,
      expiresMs: 99,
    });
    expect(recent.get(7)).toMatchObject({ id: 7, priority: "urgent", key: undefined, tags: undefined });
    expect(recent.get(9)).toBeUndefined();
  });

  it("finds the right message when the ids of one group have a gap", () => {
    const recent = new RecentMessages(1 << 20);
    keep(recent, [row(1, 1), row(2, 2), row(5, 5)]);
    expect(kept(recent, [1, 2, 3, 4, 5])).toEqual([1, 2, 5]);
    expect(recent.get(5)?.payload.length).toBe(5);
  });

  it("keeps nothing with a budget of 0", () => {
    const recent = new RecentMessages(0);
    keep(recent, [row(1, 10)]);
    expect(recent.get(1)).toBeUndefined();
  });

  it("grows past its first thousand entries and keeps each message's bytes across many records", () => {
    const recent = new RecentMessages(5_000 * (10 + 128));
    for (let id = 1; id <= 6_000; id += 3) keep(recent, [row(id, 10), row(id + 1, 10), row(id + 2, 10)]);
    const all = Array.from({ length: 6_000 }, (_, i) => i + 1);
    expect(kept(recent, all)).toEqual(all.slice(1_000));
    for (const id of [1_001, 3_333, 6_000]) expect(recent.get(id)?.payload).toEqual(Buffer.alloc(10, id));
  });

  it("starts afresh when ids do not follow on from the newest (a store reopened)", () => {
    const recent = new RecentMessages(1 << 20);
    keep(recent, [row(10, 4), row(11, 4)]);
    keep(recent, [row(3, 4)]);
    expect(kept(recent, [3, 10, 11])).toEqual([3]);
    // Messages 10 and 11 may still exist: class reads from below them go to the database.
    expect(recent.classMessages(1, 1, 3, 0, 0, 10)).toBeUndefined();
    expect(recent.classMessages(1, 1, 12, 0, 0, 10)).toEqual([]);
  });

  it("keeps every byte right over many laps of its buffer, with sizes that do not fit its ends", () => {
    const budget = 20_000;
    const recent = new RecentMessages(budget);
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    const sent: AppendedRow[] = [];
    let id = 1;
    while (id < 3_000) {
      const group = Array.from({ length: 1 + random(5) }, () => {
        const header = random(3) === 0 ? Buffer.from(`NATS/1.0\r\nn: ${id}\r\n\r\n`) : null;
        return row(id++, random(1_500), { header });
      });
      const copies = group.map((r) => ({
        ...r,
        payload: Buffer.from(r.payload),
        header: r.header && Buffer.from(r.header),
      }));
      keep(recent, group);
      sent.push(...copies);
    }
    const keptIds = kept(
      recent,
      sent.map((r) => r.id),
    );
    // The newest ones, without a gap, and no more than the budget allows.
    expect(keptIds.length).toBeGreaterThan(3);
    expect(keptIds).toEqual(sent.slice(-keptIds.length).map((r) => r.id));
    for (const r of sent.slice(-keptIds.length)) {
      const got = recent.get(r.id);
      expect(Buffer.from(got!.payload)).toEqual(r.payload);
      expect(got!.header ? Buffer.from(got!.header) : null).toEqual(r.header);
    }
  });

  it("gives a class read every message's own bytes, across laps and other mailboxes' messages, for good", () => {
    const recent = new RecentMessages(60_000);
    let seed = 11;
    const random = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    const sent = new Map<number, AppendedRow>();
    const reads: { id: number; payload: Uint8Array; header?: Uint8Array }[][] = [];
    let id = 1;
    while (id < 4_000) {
      const group = Array.from({ length: 1 + random(8) }, () => {
        const header = random(4) === 0 ? Buffer.from(`NATS/1.0\r\nn: ${id}\r\n\r\n`) : null;
        // Mailbox 2's messages are sometimes large: a read of mailbox 1 passes over them.
        const mbox = random(3) === 0 ? 2 : 1;
        return row(id++, mbox === 2 && random(2) === 0 ? 3_000 : random(400), { header, mbox });
      });
      for (const r of group)
        sent.set(r.id, { ...r, payload: Buffer.from(r.payload), header: r.header && Buffer.from(r.header) });
      keep(recent, group);
      const read = recent.classMessages(1, 1, Math.max(1, id - 25), 0, 0, 1_000);
      if (read) reads.push(read);
    }
    expect(reads.length).toBeGreaterThan(100);
    expect(reads.some((read) => read.length > 10)).toBe(true);
    // Checked only now: SENDs kept since the reads have gone round the buffer many times.
    const wrong: number[] = [];
    for (const read of reads)
      for (const message of read) {
        const stored = sent.get(message.id)!;
        const header = message.header ? Buffer.from(message.header) : null;
        const sameHeader = header === null ? stored.header === null : header.equals(stored.header!);
        if (stored.mbox !== 1 || !Buffer.from(message.payload).equals(stored.payload) || !sameHeader)
          wrong.push(message.id);
      }
    expect(wrong).toEqual([]);
  });

  it("gives each reader its own copy, which later SENDs do not overwrite", () => {
    const recent = new RecentMessages(4 * (100 + 128));
    keep(recent, [row(1, 100)]);
    const first = recent.get(1)!;
    for (let id = 2; id < 50; id++) keep(recent, [row(id, 100)]);
    expect(first.payload).toEqual(Buffer.alloc(100, 1));
  });

  it("leaves out a message larger than its budget and keeps the others", () => {
    const recent = new RecentMessages(2_000);
    keep(recent, [row(1, 100), row(2, 5_000), row(3, 100)]);
    expect(kept(recent, [1, 2, 3])).toEqual([1, 3]);
  });
});
