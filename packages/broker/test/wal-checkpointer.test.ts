import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import type { CheckpointReply } from "../src/store/wal-checkpoint-worker.js";
import { WalCheckpointer } from "../src/store/wal-checkpointer.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function walDatabase(): { file: string; db: Database.Database } {
  const dir = mkdtempSync(join(tmpdir(), "mq9-wal-"));
  dirs.push(dir);
  const file = join(dir, "test.db");
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  // The checkpointer does the copying, as in the store.
  db.pragma("wal_autocheckpoint = 0");
  db.exec("CREATE TABLE t (n INTEGER)");
  return { file, db };
}

async function until<T>(find: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error("not seen in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("WAL checkpoints on a worker", () => {
  it("a commit while a checkpoint runs gets a checkpoint of its own, so an idle WAL ends fully copied", async () => {
    const { file, db } = walDatabase();
    const replies: CheckpointReply[] = [];
    const checkpointer = WalCheckpointer.start({ file, synchronous: "NORMAL" }, (reply) =>
      replies.push(reply),
    );
    expect(checkpointer, "the worker is built (npm run build)").toBeDefined();
    try {
      db.prepare("INSERT INTO t VALUES (1)").run();
      checkpointer!.request();
      // A reader's snapshot from before the second commit: the running checkpoint cannot copy
      // that commit, whenever the worker gets to it.
      const reader = new Database(file, { readonly: true });
      reader.exec("BEGIN");
      reader.prepare("SELECT count(*) FROM t").get();
      db.prepare("INSERT INTO t VALUES (2)").run();
      checkpointer!.request();
      const first = await until(() => replies[0]);
      expect(first).toMatchObject({ type: "checkpointed" });
      if (first.type === "checkpointed") expect(first.copiedFrames).toBeLessThan(first.walFrames);
      reader.exec("COMMIT");
      reader.close();
      // No commit comes after: only the request made while the first checkpoint ran can copy the rest.
      const last = await until(() => replies[1]);
      expect(last).toMatchObject({ type: "checkpointed" });
      if (last.type === "checkpointed") expect(last.copiedFrames).toBe(last.walFrames);
    } finally {
      await checkpointer?.close();
      db.close();
    }
  });
});
