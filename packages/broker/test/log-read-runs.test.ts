import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../src/store/sqlite-store.js";
import type { NewMessage, StoredMessage } from "../src/store/store.js";
import { flipByteOf } from "./harness.js";

// Reads of many messages take the bytes of neighbouring ones from the message log with one read,
// which carries along the whole records whose checksums are still to be checked. No message
// cache here: every byte served comes from the log.

const T0 = 1_800_000_000_000;
const open: SqliteStore[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const store of open.splice(0)) await store.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function newDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "mq9-runs-"));
  dirs.push(dir);
  return dir;
}

function openStore(dataDir: string, logSegmentBytes?: number): SqliteStore {
  const store = new SqliteStore({ dataDir, recentMessageBytes: 0, logSegmentBytes });
  open.push(store);
  return store;
}

async function closeStore(store: SqliteStore): Promise<void> {
  open.splice(open.indexOf(store), 1);
  await store.close();
}

/** Message `i`: its own bytes, of a size that varies, every third with a header. */
function message(i: number): NewMessage {
  const body = `m${i}:`.padEnd(200 + ((i * 37) % 600), String.fromCharCode(97 + (i % 26)));
  const header = i % 3 === 0 ? Buffer.from(`NATS/1.0\r\nx-n: ${i}\r\n\r\n`) : undefined;
  return { mailbox: "box", priority: "normal", payload: Buffer.from(body), header, sentMs: T0 };
}

/** Sends messages `from` to `to - 1` in batches of `perRecord` (one log record each); their ids. */
async function sendRange(store: SqliteStore, from: number, to: number, perRecord: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = from; i < to; i += perRecord) {
    const batch = [];
    for (let k = i; k < Math.min(i + perRecord, to); k++) batch.push(message(k));
    for (const result of await store.append(batch, T0)) {
      if (!("id" in result)) throw new Error("the mailbox is missing");
      ids.push(result.id);
    }
  }
  return ids;
}

async function withMailbox(dataDir: string, logSegmentBytes?: number): Promise<SqliteStore> {
  const store = openStore(dataDir, logSegmentBytes);
  await store.createMailbox({ address: "box", ttlSeconds: 0, desc: "", createdMs: T0 }, T0);
  return store;
}

function readFrom(store: SqliteStore, fromId: number, limit = 1000): Promise<StoredMessage[]> {
  return store.read("box", { fromId }, { limit, maxBytes: 1 << 30, nowMs: T0 });
}

/** What a message holds, to compare with what was sent. */
function contents(m: StoredMessage): [string, string | undefined] {
  return [Buffer.from(m.payload).toString(), m.header ? Buffer.from(m.header).toString() : undefined];
}

function sent(indexes: number[]): [string, string | undefined][] {
  return indexes.map((i) => {
    const m = message(i);
    return [Buffer.from(m.payload).toString(), m.header ? Buffer.from(m.header).toString() : undefined];
  });
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => from + k);

describe("message log: reads of neighbouring messages", () => {
  it("serves a read that crosses segment boundaries exactly as sent, checked records and unchecked ones alike", async () => {
    const store = await withMailbox(newDir(), 8 * 1024);
    const ids = await sendRange(store, 0, 90, 7);
    // Part of it first: some records are checked before the whole read, others not.
    expect((await readFrom(store, ids[20], 15)).map(contents)).toEqual(sent(range(20, 35)));
    expect((await readFrom(store, ids[0])).map(contents)).toEqual(sent(range(0, 90)));
    // Again, every record checked now.
    expect((await readFrom(store, ids[0])).map(contents)).toEqual(sent(range(0, 90)));
  });

  it("skips messages deleted from the middle of a run, and serves the rest as sent", async () => {
    const store = await withMailbox(newDir());
    const ids = await sendRange(store, 0, 40, 40);
    for (const i of [0, 10, 11, 25, 39]) expect(await store.deleteMessage("box", ids[i])).toBe(true);
    const left = range(0, 40).filter((i) => ![0, 10, 11, 25, 39].includes(i));
    expect((await readFrom(store, ids[0])).map(contents)).toEqual(sent(left));
  });

  it("reads a delayed message that became due, whose row holds its bytes, between messages in the log", async () => {
    const store = await withMailbox(newDir());
    const before = await sendRange(store, 0, 5, 5);
    const delayed = { ...message(100), dueMs: T0 + 1000 };
    await store.append([delayed], T0);
    expect(await store.promoteDue(T0 + 1000)).toEqual(["box"]);
    await sendRange(store, 5, 10, 5);
    const read = await store.read(
      "box",
      { fromId: before[0] },
      { limit: 100, maxBytes: 1 << 30, nowMs: T0 + 1000 },
    );
    expect(read.map(contents)).toEqual(sent([...range(0, 5), 100, ...range(5, 10)]));
  });

  it("fails a read that meets a damaged record in a run with an error naming the message, and loses none of the others", async () => {
    const dataDir = newDir();
    const first = await withMailbox(dataDir);
    const ids = await sendRange(first, 0, 30, 10);
    await closeStore(first);
    // A byte of message 14's payload: the record of messages 10 to 19 no longer checks out.
    flipByteOf(dataDir, "m14:");
    const store = openStore(dataDir);
    await expect(readFrom(store, ids[0])).rejects.toThrow(
      new RegExp(`message ${ids[10]} is corrupt on disk .*checksum.*delete it`),
    );
    // The records on both sides are served from the same kind of read, exactly as sent.
    expect((await readFrom(store, ids[0], 10)).map(contents)).toEqual(sent(range(0, 10)));
    expect((await readFrom(store, ids[20])).map(contents)).toEqual(sent(range(20, 30)));
    // A group's claim of the run fails too, and leases nothing.
    const claim = {
      start: { fromId: ids[0] },
      reset: false,
      limit: 100,
      maxBytes: 1 << 30,
      nowMs: T0,
      leaseMs: 60_000,
    };
    await expect(store.claim("box", "g", claim)).rejects.toThrow(/is corrupt on disk/);
    // Deleting the damaged ones lets every reader past them, with nothing else lost.
    for (const i of range(10, 20)) expect(await store.deleteMessage("box", ids[i])).toBe(true);
    const good = [...range(0, 10), ...range(20, 30)];
    expect((await readFrom(store, ids[0])).map(contents)).toEqual(sent(good));
    expect((await store.claim("box", "g", claim)).map(contents)).toEqual(sent(good));
  });
});
