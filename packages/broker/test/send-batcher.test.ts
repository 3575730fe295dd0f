import { freshSchema, postgresMissing, usePrivatePostgres } from "@mq9/testkit";
import { describe, expect, it } from "vitest";
import { SendBatcher } from "../src/engine/send-batcher.js";
import { PostgresStore } from "../src/store/postgres/postgres-store.js";
import type { AppendResult } from "../src/store/store.js";

const missing = postgresMissing();
const T0 = 1_800_000_000_000;

describe.skipIf(missing !== undefined)(`send batcher${missing ? ` (skipped: ${missing})` : ""}`, () => {
  const db = usePrivatePostgres();

  it("on a store that appends elsewhere, callers that send again as soon as they are answered share one commit", async () => {
    const store = await PostgresStore.open({ url: db.pg.url, schema: freshSchema(), poolSize: 2 });
    try {
      expect(store.capabilities.appendsElsewhere).toBe(true);
      await store.createMailbox({ address: "box", ttlSeconds: 0, desc: "", createdMs: T0 }, T0);
      // The real store, with each batch's size noted on its way in.
      const sizes: number[] = [];
      let onFirstAppend: (() => void) | undefined;
      const append = store.append.bind(store);
      store.append = (batch, nowMs) => {
        sizes.push(batch.length);
        const first = onFirstAppend;
        onFirstAppend = undefined;
        const appended = append(batch, nowMs);
        first?.();
        return appended;
      };
      const batcher = new SendBatcher(
        store,
        () => {},
        () => T0,
      );
      const rounds = 10;
      const ids: number[] = [];
      // A caller in a closed loop: sends again as soon as its previous message is committed.
      const caller = (name: string) =>
        new Promise<void>((resolve, reject) => {
          let left = rounds;
          const sendOne = () =>
            batcher.append(
              { mailbox: "box", priority: "normal", payload: new TextEncoder().encode(name), sentMs: T0 },
              (err: unknown, result?: AppendResult) => {
                if (err !== undefined) return reject(err);
                if (result === undefined || !("id" in result)) return reject(new Error("not stored"));
                ids.push(result.id);
                if (--left > 0) sendOne();
                else resolve();
              },
            );
          sendOne();
        });
      // Half the callers start now; the other half while the first commit runs, so they wait in
      // the queue and, without the wait for the answered ones, would commit in a batch of their own.
      const late: Promise<void>[] = [];
      onFirstAppend = () => {
        for (const name of ["e", "f", "g", "h"]) late.push(caller(name));
      };
      const early = ["a", "b", "c", "d"].map(caller);
      await Promise.all(early);
      await Promise.all(late);
      expect(ids.length).toBe(8 * rounds);
      expect(new Set(ids).size).toBe(8 * rounds);
      expect(Math.max(...sizes)).toBe(8);
      // Batches of all eight after the first: the two halves do not take turns (2 × rounds commits).
      expect(sizes.length).toBeLessThanOrEqual(rounds + 2);
    } finally {
      await store.close();
    }
  });
});
