import { spawn } from "node:child_process";
import { appendFileSync, copyFileSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { crc32 } from "node:zlib";
import { describe, expect, it } from "vitest";
import { parseJournal } from "../src/store/append-journal.js";
import { decodeAppendedRows, encodeAppendedRows } from "../src/store/appended-rows.js";
import { SqliteStore } from "../src/store/sqlite-store.js";

const BUILT_BROKER = fileURLToPath(new URL("../dist/index.js", import.meta.url));
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

describe("append journal", () => {
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
      // New SENDs continue the id sequence.
      const [next] = await store.append(
        [{ mailbox: "inbox", priority: "normal", payload: Buffer.from("after"), sentMs: Date.now() }],
        Date.now(),
      );
      expect(next.id).toBe(40);
    } finally {
      await store.close();
    }
  });

  it("does the same with sync full, where each journal write is flushed to the disk", async () => {
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
    appendFileSync(join(dir, "data", "mq9.journal"), Buffer.from([200, 0, 0, 0, 1, 2, 3]));
    const store = new SqliteStore({ dataDir: join(dir, "data") });
    try {
      const stored = await readInbox(store);
      expect(stored).toHaveLength(5);
    } finally {
      await store.close();
    }
  });

  it("does not replay a journal whose records the database already holds", async () => {
    const dir = tempDir();
    const store = new SqliteStore({ dataDir: dir, commitIntervalMs: NEVER_MS });
    await store.createMailbox({ address: "inbox", ttlSeconds: 0, desc: "", createdMs: 1 }, Date.now());
    const payload = Buffer.from("once");
    await store.append([{ mailbox: "inbox", priority: "normal", payload, sentMs: 1 }], Date.now());
    await store.append([{ mailbox: "inbox", priority: "normal", payload, sentMs: 2, dueMs: 10 }], Date.now());
    // As if the process died between the commit and the journal's restart.
    const journal = join(dir, "mq9.journal");
    copyFileSync(journal, `${journal}.before-commit`);
    await store.close();
    copyFileSync(`${journal}.before-commit`, journal);
    const reopened = new SqliteStore({ dataDir: dir });
    try {
      const stored = await readInbox(reopened);
      expect(stored.map((m) => m.id)).toEqual([0]);
      expect(await reopened.promoteDue(Date.now())).toEqual(["inbox"]);
      expect(await readInbox(reopened)).toHaveLength(2);
    } finally {
      await reopened.close();
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

  it("stops reading at a record whose checksum does not match, and names a foreign file", () => {
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
    const header = Buffer.alloc(16);
    header.writeUInt32LE(0x4d51394a, 0);
    header.writeUInt32LE(1, 4);
    header.writeDoubleLE(3, 8);
    const record = (body: Buffer, crc: number) => {
      const head = Buffer.alloc(8);
      head.writeUInt32LE(body.length, 0);
      head.writeUInt32LE(crc, 4);
      return Buffer.concat([head, body]);
    };
    const file = Buffer.concat([header, record(rows, crc32(rows)), record(rows, crc32(rows) ^ 1)]);
    const parsed = parseJournal(file);
    expect(parsed.generation).toBe(3);
    expect(parsed.records).toHaveLength(1);
    expect(parsed.tornBytes).toBe(8 + rows.length);
    expect(decodeAppendedRows(parsed.records[0])[0]).toMatchObject({ id: 7, key: "k", priority: 2 });
    expect(() => parseJournal(Buffer.from("not a journal file at all"))).toThrow(/unknown format/);
  });
});
