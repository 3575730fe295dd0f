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

/** Keeps rows as the store does: as views of the group's encoded record. */
function keep(recent: RecentMessages, rows: AppendedRow[]): void {
  const encoded = encodeAppendedRows(rows);
  rows.forEach((r, i) => {
    r.payload = encoded.payloads[i];
    r.header = encoded.headers[i];
  });
  recent.keep(rows, encoded.bytes);
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
  });
});
