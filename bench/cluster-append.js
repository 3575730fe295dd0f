#!/usr/bin/env node
// What a SEND batch costs PostgreSQL, apart from NATS and the nodes: the store's append (the call
// every node makes per batch) at several batch sizes, from one connection and from three (three
// nodes), 1 KiB payloads, fsync on. Prints messages/s, WAL bytes and PostgreSQL CPU per message,
// so the cost splits into a part per message and a part per batch (two transactions, one flush).
// Figures only. Usage: node bench/cluster-append.js (BENCH_APPEND_MESSAGES, default 20000 per case)
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { PostgresStore } from "@mq9/broker/internal";
import pg from "pg";
import { startPrivatePostgres } from "../scripts/local-cluster/private-postgres.js";
import { cpuMeter, postgresPids } from "./proc.js";

const MESSAGES = Number(process.env.BENCH_APPEND_MESSAGES ?? 20_000);
const MAILBOXES = 64;

const db = await startPrivatePostgres({ fsync: true });
const postmaster = Number(readFileSync(`${db.dataDir}/postmaster.pid`, "utf8").split("\n")[0]);
const stats = new pg.Pool({ connectionString: db.url, max: 1 });
const walBytes = async () => {
  const { rows } = await stats.query("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn AS wal");
  return Number(rows[0].wal);
};
const payload = Buffer.alloc(1024, 7);
const lines = [
  "| batch | writers | mailboxes per batch | msg/s | WAL B/msg | PostgreSQL CPU us/msg |",
  "|---|---|---|---|---|---|",
];
try {
  let run = 0;
  for (const writers of [1, 3]) {
    for (const batch of [1, 8, 32, 128]) {
      for (const spread of [1, MAILBOXES]) {
        if (batch === 1 && spread > 1) continue;
        const schema = `append_${run++}`;
        const stores = await Promise.all(
          Array.from({ length: writers }, () => PostgresStore.open({ url: db.url, schema, poolSize: 2 })),
        );
        const boxes = Array.from({ length: MAILBOXES }, (_, i) => `m${i}`);
        for (const address of boxes) {
          await stores[0].createMailbox(
            { address, ttlSeconds: 0, desc: "", createdMs: Date.now() },
            Date.now(),
          );
        }
        let sent = 0;
        const writer = async (store) => {
          for (let k = 0; sent < MESSAGES; k++) {
            sent += batch;
            const messages = Array.from({ length: batch }, (_, i) => ({
              mailbox: boxes[spread === 1 ? 0 : (k * batch + i) % spread],
              priority: "normal",
              payload,
              sentMs: Date.now(),
            }));
            await store.append(messages, Date.now());
          }
        };
        const before = await walBytes();
        const cpu = cpuMeter(() => ({ postgres: postgresPids(postmaster) }));
        const t0 = performance.now();
        await Promise.all(stores.map((s) => writer(s)));
        const seconds = (performance.now() - t0) / 1000;
        const used = cpu();
        const after = await walBytes();
        await Promise.all(stores.map((s) => s.close()));
        lines.push(
          `| ${batch} | ${writers} | ${spread === 1 ? 1 : Math.min(batch, spread)} | ${Math.round(sent / seconds).toLocaleString("en-US")} | ${Math.round((after - before) / sent)} | ${Math.round((used.postgres * 1000) / sent)} |`,
        );
        process.stderr.write(`${lines[lines.length - 1]}\n`);
      }
    }
  }
} finally {
  await stats.end();
  await db.stop();
}
process.stdout.write(`${lines.join("\n")}\n`);
