import { spawn } from "node:child_process";
import {
  appendFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { crc32 } from "node:zlib";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { decodeAppendedRows, encodeAppendedRows } from "../src/store/appended-rows.js";
import { parseJournal } from "../src/store/legacy-journal.js";
import { SqliteStore } from "../src/store/sqlite-store.js";

const BUILT_BROKER = fileURLToPath(new URL("../dist/internal.js", import.meta.url));
const NEVER_MS = 600_000;

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "mq9-journal-"));
}

/**
 * A child process that stores `count` SENDs with commits held back, says how
 * far it got after each, and waits to be killed: the database never saw them.
 */
function sendThenWaitForKill(
  dir: string,
  count: number,
  sync: "normal" | "full" = "normal",
): Promise<{ ids: number[]; kill: () => Promise<void> }> {
  const script = join(dir, "child.mjs");
  writeFileSync(
    script,
    `import { SqliteStore } from ${JSON.stringify(BUILT_BROKER)};
const store = new SqliteStore({ dataDir: ${JSON.stringify(join(dir, "data"))}, commitIntervalMs: ${NEVER_MS}, sync: "${sync}" });
await store.createMailbox({ address: "inbox", ttlSeconds: 0, desc: "", createdMs: Date.now() }, Date.now());
for (let i = 0; i < ${count}; i++) {
  const [result] = await store.append([{ mailbox: "inbox", priority: i % 3 === 0 ? "critical" : "normal", key: i % 10 === 9 ? "k" : undefined,
    payload: Buffer.from("message " + i), header: i === 0 ? Buffer.from("NATS/1.0\\r\\nx: y\\r\\n\\r\\n") : undefined,
    tags: i === 1 ? ["a", "b"] : undefined, sentMs: 1000 + i }], Date.now());
  process.stdout.write(result.id + "\\n");
}
setInterval(() => {}, 1000);
`,
  );
  const child = spawn(process.execPath, [script], { stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return new Promise((resolve, reject) => {
    let out = "";
    child.once("exit", (code) => reject(new Error(`the child exited early (${code})`)));
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const ids = out.split("\n").filter(Boolean).map(Number);
      if (ids.length === count) {
        resolve({
          ids,
          kill: () => {
            child.kill("SIGKILL");
            return exited;
          },
        });
      }
    });
  });
}

/** Everything the mailbox "inbox" holds, up to 100 messages. */
function readInbox(store: SqliteStore) {
  return store.read("inbox", { fromId: 0 }, { limit: 100, maxBytes: 1 << 20, nowMs: Date.now() });
}

const FIRST_SEGMENT = "000000000001.seg";

function segmentFiles(dataDir: string): string[] {
  return readdirSync(join(dataDir, "log")).sort();
}

async function createInbox(store: SqliteStore, ttlSeconds = 0): Promise<void> {
  const now = Date.now();
  await store.createMailbox(
    {
      address: "inbox",
      ttlSeconds,
      desc: "",
      createdMs: now,
      expiresMs: ttlSeconds > 0 ? now + ttlSeconds * 1000 : undefined,
    },
    now,
  );
}

async function sendText(
  store: SqliteStore,
  text: string,
  extra: { key?: string; expiresMs?: number; header?: Buffer } = {},
): Promise<{ id: number }[]> {
  const results = await store.append(
    [{ mailbox: "inbox", priority: "normal", payload: Buffer.from(text), sentMs: Date.now(), ...extra }],
    Date.now(),
  );
  return results.map((result) => {
    if (!("id" in result)) throw new Error("the inbox is missing");
    return result;
  });
}

describe("message log", () => {
  it("brings back every acknowledged SEND after a kill -9 before any commit", async () => {
    const dir = tempDir();
    const { ids, kill } = await sendThenWaitForKill(dir, 40);
    await kill();
    const store = new SqliteStore({ dataDir: join(dir, "data") });
    try {
      const stored = await readInbox(store);
      // Key compaction replays too: of the four messages keyed "k" only the last is left.
      const expected = ids.filter((id) => id % 10 !== 9 || id === 39);
      expect(stored.map((m) => m.id).sort((a, b) => a - b)).toEqual(expected);
      const first = stored.find((m) => m.id === 0)!;
      expect(first.priority).toBe("critical");
      expect(Buffer.from(first.payload).toString()).toBe("message 0");
      expect(Buffer.from(first.header!).toString()).toContain("x: y");
      expect(stored.find((m) => m.id === 1)?.tags).toEqual(["a", "b"]);
      expect(stored.find((m) => m.id === 39)?.key).toBe("k");
      expect(stored.find((m) => m.id === 5)?.createdMs).toBe(1005);
      // New SENDs get ids above every id handed out before the crash (see the lost-tail test).
      const [next] = await store.append(
        [{ mailbox: "inbox", priority: "normal", payload: Buffer.from("after"), sentMs: Date.now() }],
        Date.now(),
      );
      expect((next as { id: number }).id).toBeGreaterThan(39);
    } finally {
      await store.close();
    }
  });

  it("does the same with sync full, where each log write is flushed to the disk", async () => {
    const dir = tempDir();
    const { ids, kill } = await sendThenWaitForKill(dir, 10, "full");
    await kill();
    const store = new SqliteStore({ dataDir: join(dir, "data"), sync: "full" });
    try {
      const stored = await readInbox(store);
      expect(stored.map((m) => m.id).sort((a, b) => a - b)).toEqual(ids);
    } finally {
      await store.close();
    }
  });

  it("replays whole records and leaves a torn tail out", async () => {
    const dir = tempDir();
    const { kill } = await sendThenWaitForKill(dir, 5);
    await kill();
    appendFileSync(join(dir, "data", "log", FIRST_SEGMENT), Buffer.from([200, 0, 0, 0, 1, 2, 3]));
    const store = new SqliteStore({ dataDir: join(dir, "data"), commitIntervalMs: NEVER_MS });
    try {
      expect(await readInbox(store)).toHaveLength(5);
      // The torn bytes were cut off: a record written now is found by the next replay.
      await sendText(store, "after the tear");
    } finally {
      await store.close();
    }
    const reopened = new SqliteStore({ dataDir: join(dir, "data") });
    try {
      const stored = await readInbox(reopened);
      expect(stored.map((m) => Buffer.from(m.payload).toString()).at(-1)).toBe("after the tear");
    } finally {
      await reopened.close();
    }
  });

  it("replays the records after one whose bytes were damaged, and reports that one, instead of cutting the log there", async () => {
    const dir = tempDir();
    const { ids, kill } = await sendThenWaitForKill(dir, 10);
    await kill();
    const file = join(dir, "data", "log", FIRST_SEGMENT);
    const bytes = readFileSync(file);
    bytes[bytes.indexOf("message 4") + 3] ^= 0x01;
    writeFileSync(file, bytes);
    const corrupt: string[] = [];
    const store = new SqliteStore({
      dataDir: join(dir, "data"),
      onCorruptRecord: (err) => corrupt.push(err.message),
    });
    try {
      const stored = (await readInbox(store)).map((m) => m.id).sort((a, b) => a - b);
      // Message 4's record is lost (the bytes cannot be trusted); everything after it is back.
      expect(stored).toEqual(ids.filter((id) => id !== 4));
      expect(corrupt).toHaveLength(1);
      expect(corrupt[0]).toMatch(/do not match their checksums.*lost/);
      expect(store.logStatus()?.corruptRecords).toBe(1);
    } finally {
      await store.close();
    }
  });

  it("keeps a segment whose compaction meets a corrupt message, and moves the others", async () => {
    const dir = tempDir();
    const store = new SqliteStore({ dataDir: dir, logSegmentBytes: 4096, recentMessageBytes: 0 });
    const soon = Date.now() + 60_000;
    await createInbox(store);
    await sendText(store, "keeper one");
    await sendText(store, "keeper two");
    for (let i = 0; i < 12; i++)
      await sendText(store, `expiring ${i} ${"z".repeat(900)}`, { expiresMs: soon });
    await store.close();
    const file = join(dir, "log", FIRST_SEGMENT);
    const bytes = readFileSync(file);
    bytes[bytes.indexOf("keeper two") + 1] ^= 0x01;
    writeFileSync(file, bytes);
    const corrupt: string[] = [];
    const reopened = new SqliteStore({
      dataDir: dir,
      logSegmentBytes: 4096,
      recentMessageBytes: 0,
      onCorruptRecord: (err) => corrupt.push(err.message),
    });
    try {
      await reopened.purgeExpired(soon + 1);
      expect(segmentFiles(dir)).toContain(FIRST_SEGMENT);
      expect(corrupt).toHaveLength(1);
      const one = await reopened.read(
        "inbox",
        { fromId: 0 },
        { limit: 1, maxBytes: 1 << 20, nowMs: Date.now() },
      );
      expect(one.map((m) => Buffer.from(m.payload).toString())).toEqual(["keeper one"]);
      await expect(readInbox(reopened)).rejects.toThrow(/message 1 is corrupt on disk/);
    } finally {
      await reopened.close();
    }
  });

  it("never hands out an id again after the log's tail was lost, even cut at a record boundary", async () => {
    const dir = tempDir();
    const { ids, kill } = await sendThenWaitForKill(dir, 20);
    await kill();
    // Cut the last five records (one SEND each): their rows never reached the database.
    const file = join(dir, "data", "log", FIRST_SEGMENT);
    const bytes = readFileSync(file);
    const starts: number[] = [];
    for (let at = 16; at + 8 <= bytes.length; at += 8 + bytes.readUInt32LE(at)) starts.push(at);
    truncateSync(file, starts[starts.length - 5]);
    const store = new SqliteStore({ dataDir: join(dir, "data") });
    try {
      expect((await readInbox(store)).length).toBeLessThan(ids.length);
      const [next] = await store.append(
        [{ mailbox: "inbox", priority: "normal", payload: Buffer.from("after the cut"), sentMs: Date.now() }],
        Date.now(),
      );
      expect((next as { id: number }).id).toBeGreaterThan(Math.max(...ids));
    } finally {
      await store.close();
    }
  });

  it("continues the ids without a gap after a clean close", async () => {
    const dir = tempDir();
    const store = new SqliteStore({ dataDir: dir });
    await createInbox(store);
    for (let i = 0; i < 3; i++) await sendText(store, `m${i}`);
    await store.close();
    const reopened = new SqliteStore({ dataDir: dir });
    try {
      expect(await reopened.nextMessageId("inbox")).toBe(3);
      expect(await sendText(reopened, "m3")).toEqual([{ id: 3 }]);
    } finally {
      await reopened.close();
    }
  });

  it("writes new records past what the database absorbed even when the newest segment lost bytes", async () => {
    const dir = tempDir();
    const data = join(dir, "data");
    const before = new SqliteStore({ dataDir: data });
    await createInbox(before);
    for (let i = 0; i < 3; i++) await sendText(before, `absorbed ${i}`);
    await before.close();
    // The segment keeps its header only, as after a power loss with sync normal.
    truncateSync(join(data, "log", FIRST_SEGMENT), 16);
    const { ids, kill } = await sendThenWaitForKill(dir, 4);
    await kill();
    const after = new SqliteStore({ dataDir: data, recentMessageBytes: 0 });
    try {
      // The rows of the lost bytes are still there; the four SENDs since then are back too.
      const stored = await after.read(
        "inbox",
        { fromId: 3 },
        { limit: 100, maxBytes: 1 << 20, nowMs: Date.now() },
      );
      expect(stored.map((m) => m.id).sort((a, b) => a - b)).toEqual(ids);
      expect(segmentFiles(data)).toContain("000000000002.seg");
    } finally {
      await after.close();
    }
  });

  it("does not replay records the database already holds", async () => {
    const dir = tempDir();
    const store = new SqliteStore({ dataDir: dir, commitIntervalMs: NEVER_MS });
    await createInbox(store);
    await sendText(store, "once");
    await store.append(
      [{ mailbox: "inbox", priority: "normal", payload: Buffer.from("later"), sentMs: 2, dueMs: 10 }],
      Date.now(),
    );
    await store.close();
    for (let round = 0; round < 2; round++) {
      const reopened = new SqliteStore({ dataDir: dir });
      try {
        expect((await readInbox(reopened)).map((m) => m.id)).toEqual([0]);
        expect(await reopened.nextDueMs()).toBe(10);
      } finally {
        await reopened.close();
      }
    }
    const last = new SqliteStore({ dataDir: dir });
    try {
      expect(await last.promoteDue(Date.now())).toEqual(["inbox"]);
      expect(await readInbox(last)).toHaveLength(2);
    } finally {
      await last.close();
    }
  });

  it("reads headers and payloads back from the log when they are no longer in memory", async () => {
    const dir = tempDir();
    const store = new SqliteStore({ dataDir: dir, recentMessageBytes: 0, logSegmentBytes: 4096 });
    try {
      await createInbox(store);
      const header = Buffer.from("NATS/1.0\r\nmq9-priority: normal\r\n\r\n");
      const binary = Buffer.from([0, 255, 1, 254, 13, 10]);
      await sendText(store, "with a header", { header });
      await store.append([{ mailbox: "inbox", priority: "urgent", payload: binary, sentMs: 1 }], Date.now());
      for (let i = 0; i < 20; i++) await sendText(store, `filler ${i} ${"x".repeat(400)}`);
      expect(segmentFiles(dir).length).toBeGreaterThan(1);
      const stored = await readInbox(store);
      expect(stored).toHaveLength(22);
      const first = stored.find((m) => m.id === 0)!;
      expect(Buffer.from(first.header!).equals(header)).toBe(true);
      expect(Buffer.from(first.payload).toString()).toBe("with a header");
      expect(Buffer.from(stored.find((m) => m.id === 1)!.payload).equals(binary)).toBe(true);
      const claimed = await store.claim("inbox", "g", {
        start: { fromId: 0 },
        reset: false,
        limit: 5,
        maxBytes: 1 << 20,
        nowMs: Date.now(),
        leaseMs: 30_000,
      });
      expect(claimed.map((m) => m.id)).toEqual([1, 0, 2, 3, 4]);
      expect(Buffer.from(claimed[1].payload).toString()).toBe("with a header");
    } finally {
      await store.close();
    }
  });

  it("reads neighbouring messages of one mailbox back together, skipping what lies between", async () => {
    const dir = tempDir();
    const store = new SqliteStore({ dataDir: dir, recentMessageBytes: 0 });
    try {
      const now = Date.now();
      for (const address of ["inbox", "other"]) {
        await store.createMailbox({ address, ttlSeconds: 0, desc: "", createdMs: now }, now);
      }
      for (let i = 0; i < 30; i++) {
        // Alternating mailboxes and sizes, some with a header: the inbox's spans have gaps.
        await store.append(
          [
            {
              mailbox: "inbox",
              priority: "normal",
              payload: Buffer.from(`inbox ${i} ${"i".repeat(i * 37)}`),
              header: i % 4 === 0 ? Buffer.from(`NATS/1.0\r\nn: ${i}\r\n\r\n`) : undefined,
              sentMs: now,
            },
            { mailbox: "other", priority: "normal", payload: Buffer.alloc(700 + i, 0x6f), sentMs: now },
          ],
          now,
        );
      }
      const stored = await readInbox(store);
      expect(stored).toHaveLength(30);
      stored.forEach((m, i) => {
        expect(Buffer.from(m.payload).toString()).toBe(`inbox ${i} ${"i".repeat(i * 37)}`);
        if (i % 4 === 0) expect(Buffer.from(m.header!).toString()).toContain(`n: ${i}`);
        else expect(m.header).toBeUndefined();
      });
    } finally {
      await store.close();
    }
  });

  it("deletes a segment once no message points into it, and keeps those that are still read", async () => {
    const dir = tempDir();
    const store = new SqliteStore({ dataDir: dir, logSegmentBytes: 4096 });
    try {
      await createInbox(store);
      const soon = Date.now() + 60_000;
      const big = "y".repeat(900);
      // Segment 1: expiring messages, one keyed message replaced later, one deleted.
      for (let i = 0; i < 3; i++) await sendText(store, `expiring ${i} ${big}`, { expiresMs: soon });
      const [keyed] = await sendText(store, `old value ${big}`, { key: "state" });
      // Segments 2 and later: the one message that stays, and the key's new value.
      for (let i = 0; i < 4; i++) await sendText(store, `filler ${i} ${big}`, { expiresMs: soon });
      await sendText(store, "stays");
      await sendText(store, `new value ${big}`, { key: "state" });
      const [doomed] = await sendText(store, `deleted ${big}`);
      expect(await store.deleteMessage("inbox", doomed.id as number)).toBe(true);
      expect(segmentFiles(dir)).toContain(FIRST_SEGMENT);
      expect((keyed.id as number) >= 0).toBe(true);
      await store.purgeExpired(soon + 1);
      // Past a further rotation the segments holding only expired, replaced or deleted messages are gone.
      for (let i = 0; i < 6; i++) await sendText(store, `late ${i} ${big}`);
      await store.purgeExpired(soon + 2);
      expect(segmentFiles(dir)).not.toContain(FIRST_SEGMENT);
      const left = (await readInbox(store)).map((m) =>
        Buffer.from(m.payload).toString().split(" ").slice(0, 2).join(" "),
      );
      expect(left).toEqual(["stays", "new value", ...Array.from({ length: 6 }, (_, i) => `late ${i}`)]);
    } finally {
      await store.close();
    }
    const reopened = new SqliteStore({ dataDir: dir, recentMessageBytes: 0 });
    try {
      expect(await readInbox(reopened)).toHaveLength(8);
    } finally {
      await reopened.close();
    }
  });

  it("moves the last few messages of a mostly expired segment into the database and deletes the segment", async () => {
    const dir = tempDir();
    const store = new SqliteStore({ dataDir: dir, logSegmentBytes: 4096, recentMessageBytes: 0 });
    const soon = Date.now() + 60_000;
    try {
      await createInbox(store);
      await sendText(store, "keeper", { header: Buffer.from("NATS/1.0\r\nk: v\r\n\r\n") });
      for (let i = 0; i < 12; i++)
        await sendText(store, `expiring ${i} ${"z".repeat(900)}`, { expiresMs: soon });
      expect(segmentFiles(dir)).toContain(FIRST_SEGMENT);
      await store.purgeExpired(soon + 1);
      expect(segmentFiles(dir)).not.toContain(FIRST_SEGMENT);
      const [kept] = await readInbox(store);
      expect(Buffer.from(kept.payload).toString()).toBe("keeper");
      expect(Buffer.from(kept.header!).toString()).toContain("k: v");
    } finally {
      await store.close();
    }
    const reopened = new SqliteStore({ dataDir: dir, recentMessageBytes: 0 });
    try {
      expect((await readInbox(reopened)).map((m) => Buffer.from(m.payload).toString())).toEqual(["keeper"]);
    } finally {
      await reopened.close();
    }
  });

  it("copies the live messages of a mostly deleted segment to the end of the log and deletes the segment", async () => {
    const dir = tempDir();
    const store = new SqliteStore({ dataDir: dir, logSegmentBytes: 8192, recentMessageBytes: 0 });
    try {
      await createInbox(store);
      const header = Buffer.from("NATS/1.0\r\nk: v\r\n\r\n");
      // Eight to a segment.
      for (let i = 0; i < 10; i++)
        await sendText(store, `m${i} ${"z".repeat(900)}`, i === 3 ? { header } : {});
      await sendText(store, "keyed", { key: "the-key" });
      expect(segmentFiles(dir)).toEqual([FIRST_SEGMENT, "000000000002.seg"]);
      const before = store.logStatus()!;
      // Five of the first segment's eight go: it is mostly dead, not nearly empty.
      for (const id of [0, 1, 2, 4, 5]) await store.deleteMessage("inbox", id);
      expect(store.logStatus()!.reclaimableBytes).toBeGreaterThan(before.reclaimableBytes);
      expect(segmentFiles(dir)).not.toContain(FIRST_SEGMENT);
      const texts = (messages: { payload: Uint8Array }[]) =>
        messages.map((m) => Buffer.from(m.payload).toString().split(" ")[0]);
      const expected = ["m3", "m6", "m7", "m8", "m9", "keyed"];
      const stored = await readInbox(store);
      expect(texts(stored)).toEqual(expected);
      expect(Buffer.from(stored[0].header!).toString()).toContain("k: v");
      expect(stored.at(-1)?.key).toBe("the-key");
      await store.close();
      const reopened = new SqliteStore({ dataDir: dir, logSegmentBytes: 8192, recentMessageBytes: 0 });
      try {
        expect(texts(await readInbox(reopened))).toEqual(expected);
      } finally {
        await reopened.close();
      }
    } finally {
      await store.close();
    }
  });

  it("loses and doubles nothing after a kill -9 between a copy-forward's log write and its commit", async () => {
    const dir = tempDir();
    const dataDir = join(dir, "data");
    const script = join(dir, "copy-then-crash.mjs");
    // The child fills two segments, then deletes most of the first one's messages: the store
    // copies the rest forward, and the child is killed once the copies are written, before the
    // rows point at them.
    writeFileSync(
      script,
      `import { writeSync } from "node:fs";
import { SqliteStore } from ${JSON.stringify(BUILT_BROKER)};
const store = new SqliteStore({ dataDir: ${JSON.stringify(dataDir)}, logSegmentBytes: 8192, recentMessageBytes: 0,
  afterCopyWritten: () => { writeSync(1, "copied\\n"); process.kill(process.pid, "SIGKILL"); } });
const now = Date.now();
await store.createMailbox({ address: "inbox", ttlSeconds: 0, desc: "", createdMs: now }, now);
const header = Buffer.from("NATS/1.0\\r\\nk: v\\r\\n\\r\\n");
for (let i = 0; i < 10; i++) {
  await store.append([{ mailbox: "inbox", priority: "normal", payload: Buffer.from("m" + i + " " + "z".repeat(900)),
    header: i === 3 ? header : undefined, sentMs: Date.now() }], Date.now());
}
await store.append([{ mailbox: "inbox", priority: "normal", key: "the-key", payload: Buffer.from("keyed"), sentMs: Date.now() }], Date.now());
for (const id of [0, 1, 2, 4, 5]) {
  writeSync(1, "delete " + id + "\\n");
  await store.deleteMessage("inbox", id);
}
writeSync(1, "no copy\\n");
`,
    );
    const child = spawn(process.execPath, [script], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    const signal = await new Promise<NodeJS.Signals | null>((resolve) =>
      child.once("exit", (_code, sig) => resolve(sig)),
    );
    expect(out).toContain("copied");
    expect(signal).toBe("SIGKILL");
    // The delete that started the copy was committed before it (the copy follows a commit).
    const deleted = [...out.matchAll(/delete (\d+)/g)].map((m) => Number(m[1]));
    const texts = (messages: { payload: Uint8Array }[]) =>
      messages.map((m) => Buffer.from(m.payload).toString().split(" ")[0]);
    const expected = [...Array.from({ length: 10 }, (_, i) => i).filter((i) => !deleted.includes(i))]
      .map((i) => `m${i}`)
      .concat("keyed");
    for (let run = 0; run < 2; run++) {
      const store = new SqliteStore({ dataDir, logSegmentBytes: 8192, recentMessageBytes: 0 });
      try {
        const stored = await readInbox(store);
        expect(texts(stored)).toEqual(expected);
        expect(new Set(stored.map((m) => m.id)).size).toBe(stored.length);
        expect(Buffer.from(stored.find((m) => texts([m])[0] === "m3")!.header!).toString()).toContain("k: v");
        expect(stored.at(-1)?.key).toBe("the-key");
        // Each stored message's bytes are counted once.
        const live = stored.reduce((sum, m) => sum + m.payload.length + (m.header?.length ?? 0), 0);
        expect(store.logStatus()!.messageBytes).toBeLessThanOrEqual(live + stored.length * 64);
      } finally {
        await store.close();
      }
    }
  });

  it("has the worker write a large group, plain rows and the others alike, exactly as sent", async () => {
    const dir = tempDir();
    const store = new SqliteStore({ dataDir: dir, recentMessageBytes: 0 });
    const now = Date.now();
    const batch = Array.from({ length: 100 }, (_, i) => ({
      mailbox: "inbox",
      priority: (i % 3 === 0 ? "critical" : "normal") as "critical" | "normal",
      payload: Buffer.from(`message ${i}`),
      sentMs: 1000 + i,
      expiresMs: i % 5 === 0 ? now + 3_600_000 : undefined,
      ...(i === 10 ? { tags: ["t"] } : {}),
      ...(i === 20 || i === 30 ? { key: "k" } : {}),
      ...(i === 40 ? { dueMs: now + 3_600_000 } : {}),
    }));
    try {
      await createInbox(store);
      const results = await store.append(batch, now);
      const check = async (s: SqliteStore) => {
        const stored = await s.read("inbox", { fromId: 0 }, { limit: 200, maxBytes: 1 << 22, nowMs: now });
        // 100 sent, one delayed, one replaced by the later message with its key.
        expect(stored).toHaveLength(98);
        const byText = new Map(stored.map((m) => [Buffer.from(m.payload).toString(), m]));
        expect(byText.has("message 20")).toBe(false);
        expect(byText.get("message 30")?.key).toBe("k");
        expect(byText.get("message 10")?.tags).toEqual(["t"]);
        const fifth = byText.get("message 5")!;
        expect(fifth).toMatchObject({
          id: (results[5] as { id: number }).id,
          priority: "normal",
          createdMs: 1005,
          expiresMs: now + 3_600_000,
        });
        expect(byText.get("message 6")).toMatchObject({ priority: "critical", expiresMs: undefined });
        expect(await s.nextDueMs()).toBe(now + 3_600_000);
      };
      await check(store);
      await store.close();
      const reopened = new SqliteStore({ dataDir: dir, recentMessageBytes: 0 });
      try {
        await check(reopened);
      } finally {
        await reopened.close();
      }
    } finally {
      await store.close();
    }
  });

  it("loses nothing when the worker writing the rows fails: the store writes them itself", async () => {
    const dir = tempDir();
    const store = new SqliteStore({ dataDir: dir, recentMessageBytes: 0 });
    const blocker = new Database(join(dir, "mq9.db"));
    try {
      await createInbox(store);
      // Another connection holds the write lock longer than the worker waits for it.
      blocker.exec("BEGIN EXCLUSIVE");
      const ids: number[] = [];
      for (let i = 0; i < 5; i++) ids.push((await sendText(store, `held ${i}`))[0].id as number);
      await expect(readInbox(store)).rejects.toMatchObject({ code: "STORE_LOCKED" });
      blocker.exec("COMMIT");
      expect((await readInbox(store)).map((m) => m.id)).toEqual(ids);
      // And after it, SENDs go on being stored and read.
      await sendText(store, "after");
      expect(await readInbox(store)).toHaveLength(6);
    } finally {
      blocker.close();
      await store.close();
    }
    const reopened = new SqliteStore({ dataDir: dir });
    try {
      expect(await readInbox(reopened)).toHaveLength(6);
    } finally {
      await reopened.close();
    }
  }, 20_000);

  it("takes over a store of the previous format, with the journal that version left", async () => {
    const dir = tempDir();
    const store = new SqliteStore({ dataDir: dir });
    await createInbox(store);
    await store.close();
    // The previous format: no log columns, payloads inline, SENDs since the last commit in mq9.journal.
    const raw = new Database(join(dir, "mq9.db"));
    for (const column of ["seg", "seg_at", "seg_len"]) raw.exec(`ALTER TABLE messages DROP COLUMN ${column}`);
    // Nor the mailbox owners of format 4.
    raw.exec("ALTER TABLE mailboxes DROP COLUMN owner");
    raw
      .prepare(
        "INSERT INTO messages (msg_id, mbox, priority, payload, created_ms) SELECT 0, id, 1, ?, 1 FROM mailboxes",
      )
      .run(Buffer.from("committed before"));
    raw.exec("INSERT INTO meta (name, value) VALUES ('journal_applied', 4)");
    const mbox = (raw.prepare("SELECT id FROM mailboxes").get() as { id: number }).id;
    raw.pragma("user_version = 2");
    raw.close();
    const { bytes: rows } = encodeAppendedRows([
      {
        id: 1,
        mbox,
        priority: 1,
        key: null,
        tags: null,
        header: null,
        payload: Buffer.from("in the old journal"),
        createdMs: 2,
        expiresMs: null,
        dueMs: null,
      },
    ]);
    writeFileSync(join(dir, "mq9.journal"), legacyJournal(5, rows));
    const upgraded = new SqliteStore({ dataDir: dir });
    try {
      const stored = await readInbox(upgraded);
      expect(stored.map((m) => Buffer.from(m.payload).toString())).toEqual([
        "committed before",
        "in the old journal",
      ]);
      expect(existsSync(join(dir, "mq9.journal"))).toBe(false);
      const [next] = await sendText(upgraded, "new");
      expect(next.id).toBe(2);
    } finally {
      await upgraded.close();
    }
  });

  it("refuses a second store on the same directory while the first is open", async () => {
    const dir = tempDir();
    const store = new SqliteStore({ dataDir: dir });
    try {
      expect(() => new SqliteStore({ dataDir: dir })).toThrow(/in use by another mq9 broker/);
    } finally {
      await store.close();
    }
    const again = new SqliteStore({ dataDir: dir });
    await again.close();
  });

  it("stops reading a previous version's journal at a record whose checksum does not match, and names a foreign file", () => {
    const { bytes: rows } = encodeAppendedRows([
      {
        id: 7,
        mbox: 1,
        priority: 2,
        key: "k",
        tags: null,
        header: null,
        payload: Buffer.from("x"),
        createdMs: 5,
        expiresMs: null,
        dueMs: null,
      },
    ]);
    const file = Buffer.concat([legacyJournal(3, rows), framed(rows, crc32(rows) ^ 1)]);
    const parsed = parseJournal(file);
    expect(parsed.generation).toBe(3);
    expect(parsed.records).toHaveLength(1);
    expect(parsed.tornBytes).toBe(8 + rows.length);
    expect(decodeAppendedRows(parsed.records[0])[0]).toMatchObject({ id: 7, key: "k", priority: 2 });
    expect(() => parseJournal(Buffer.from("not a journal file at all"))).toThrow(/unknown format/);
  });
});

function framed(body: Buffer, crc: number): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32LE(body.length, 0);
  head.writeUInt32LE(crc, 4);
  return Buffer.concat([head, body]);
}

/** A journal file as mq9 versions before the message log wrote it, holding one record. */
function legacyJournal(generation: number, body: Buffer): Buffer {
  const header = Buffer.alloc(16);
  header.writeUInt32LE(0x4d51394a, 0);
  header.writeUInt32LE(1, 4);
  header.writeDoubleLE(generation, 8);
  return Buffer.concat([header, framed(body, crc32(body))]);
}
