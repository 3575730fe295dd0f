#!/usr/bin/env node
// How should a node's long-poll hear of a message another node stored? Measures the two candidates
// on this machine: (1) a NATS publish after COMMIT, heard by a subscriber on another server of the
// cluster; (2) PostgreSQL NOTIFY inside the SEND's transaction, heard by a LISTENing connection.
// Prints wake latency (p50/p99) and what each costs the SEND path (commits/s, 16 in flight).
// Figures only. Usage: node bench/cluster-wake.js
import { performance } from "node:perf_hooks";
import { connect } from "nats";
import pg from "pg";
import { startNatsCluster } from "../scripts/local-cluster/nats-cluster.js";
import { startPrivatePostgres } from "../scripts/local-cluster/private-postgres.js";

const ROUNDS = Number(process.env.BENCH_WAKE_ROUNDS ?? 500);
const COMMITS = Number(process.env.BENCH_WAKE_COMMITS ?? 4000);
const pct = (xs, p) => xs.sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];
const us = (ms) => `${Math.round(ms * 1000)} us`;

const [nats, db] = await Promise.all([startNatsCluster({ size: 3 }), startPrivatePostgres({ fsync: true })]);
try {
  const pool = new pg.Pool({ connectionString: db.url, max: 16 });
  await pool.query("CREATE TABLE m (id bigserial PRIMARY KEY, body bytea)");
  const body = Buffer.alloc(1024, 7);

  // Wake latency: NATS across two servers of the cluster.
  const pub = await connect({ servers: nats.urls[0] });
  const sub = await connect({ servers: nats.urls[1] });
  const natsLatency = [];
  let resolveNats;
  sub.subscribe("_mq9.cluster.wake", { callback: () => resolveNats?.() });
  await sub.flush();
  await new Promise((r) => setTimeout(r, 500));
  for (let i = 0; i < ROUNDS; i++) {
    const heard = new Promise((r) => (resolveNats = r));
    const t = performance.now();
    pub.publish("_mq9.cluster.wake", JSON.stringify({ node: "x", mailboxes: ["box"] }));
    await heard;
    natsLatency.push(performance.now() - t);
  }

  // Wake latency: NOTIFY at COMMIT, heard by a LISTENing connection.
  const listener = new pg.Client({ connectionString: db.url });
  await listener.connect();
  await listener.query("LISTEN mq9_wake");
  let resolvePg;
  listener.on("notification", () => resolvePg?.());
  const pgLatency = [];
  const writer = await pool.connect();
  for (let i = 0; i < ROUNDS; i++) {
    const heard = new Promise((r) => (resolvePg = r));
    await writer.query("BEGIN");
    await writer.query("INSERT INTO m (body) VALUES ($1)", [body]);
    await writer.query("SELECT pg_notify('mq9_wake', 'box')");
    const t = performance.now();
    await writer.query("COMMIT");
    await heard;
    pgLatency.push(performance.now() - t);
  }
  writer.release();

  // Cost on the SEND path: commits per second with 16 in flight, with and without NOTIFY.
  const commitRate = async (notify) => {
    let left = COMMITS;
    const t = performance.now();
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        const c = await pool.connect();
        while (left-- > 0) {
          await c.query("BEGIN");
          await c.query("INSERT INTO m (body) VALUES ($1)", [body]);
          if (notify) await c.query(`SELECT pg_notify('mq9_wake', 'box${left % 64}')`);
          await c.query("COMMIT");
        }
        c.release();
      }),
    );
    return COMMITS / ((performance.now() - t) / 1000);
  };
  const plain = await commitRate(false);
  const notified = await commitRate(true);
  console.log("wake-up across nodes, this machine:");
  console.log(
    `  NATS publish -> subscriber on another server: p50 ${us(pct(natsLatency, 50))}, p99 ${us(pct(natsLatency, 99))}`,
  );
  console.log(
    `  PostgreSQL NOTIFY at COMMIT -> LISTEN:        p50 ${us(pct(pgLatency, 50))}, p99 ${us(pct(pgLatency, 99))} (from COMMIT sent)`,
  );
  console.log(
    `  commits/s, 16 in flight, 1 KiB row: ${Math.round(plain)} plain, ${Math.round(notified)} with NOTIFY (${((notified / plain) * 100).toFixed(0)} %)`,
  );
  await listener.end();
  await pool.end();
  await pub.close();
  await sub.close();
} finally {
  await nats.stop();
  await db.stop();
}
