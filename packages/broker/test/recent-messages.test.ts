import { describe, expect, it } from "vitest";
import { RecentMessages } from "../src/store/recent-messages.js";

const message = (id: number, size: number) => ({
  id,
  priority: "normal" as const,
  payload: Buffer.alloc(size, id),
  createdMs: id,
});

describe("recent messages", () => {
  it("keeps the newest messages within its byte budget, dropping the oldest first", () => {
    const recent = new RecentMessages(3 * (1000 + 128));
    for (let id = 1; id <= 5; id++) recent.add(message(id, 1000));
    expect([1, 2, 3, 4, 5].map((id) => recent.get(id) !== undefined)).toEqual([
      false,
      false,
      true,
      true,
      true,
    ]);
  });

  it("keeps exactly the newest messages over a long run of adds", () => {
    const recent = new RecentMessages(100 * (1000 + 128));
    for (let id = 1; id <= 20_000; id++) recent.add(message(id, 1000));
    const kept = Array.from({ length: 20_000 }, (_, i) => i + 1).filter((id) => recent.get(id));
    expect(kept).toEqual(Array.from({ length: 100 }, (_, i) => 19_901 + i));
    expect(recent.get(20_000)?.payload[999]).toBe(20_000 & 0xff);
  });

  it("holds its own copy of the payload, not a view of the caller's buffer", () => {
    const recent = new RecentMessages(1 << 20);
    const socketChunk = Buffer.from("....payload....");
    recent.add({ id: 1, priority: "normal", payload: socketChunk.subarray(4, 11), createdMs: 1 });
    socketChunk.fill(0);
    expect(Buffer.from(recent.get(1)!.payload).toString()).toBe("payload");
  });

  it("keeps nothing with a budget of 0", () => {
    const recent = new RecentMessages(0);
    recent.add(message(1, 10));
    expect(recent.get(1)).toBeUndefined();
  });
});
