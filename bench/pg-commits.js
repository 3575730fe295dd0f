// `node bench/pg-commits.js`: the PostgreSQL ceiling under a cluster, measured alone. A private
// PostgreSQL with fsync on, as the cluster bench runs it, takes durable commits of `batch` 1 KiB
// rows from `clients` connections at once, two ways:
//   spread:  every commit inserts into its own mailbox's rows (SENDs spread over mailboxes);
//   one row: every commit also moves one shared counter row, as the SENDs of one mailbox move its
//            id counter, so commits of that mailbox take turns on the row's lock.
// It prints commits/s, rows/s, the mean commit time and PostgreSQL's CPU per row: what the nodes'
// batches can reach at most, whatever the nodes do. BENCH_PG_SECONDS per cell [3];
// BENCH_PG_BATCHES [1,8,32,128]; BENCH_PG_CLIENTS [1,4,16].
import { readFileSync } from "node:fs";
import os from "node:os";
import { performance } from "node:perf_hooks";
import pg from "pg";
import { startPrivatePostgres } from "../scripts/local-cluster/private-postgres.js";
import { cpuMeter, postgresPids, progress } from "./proc.js";

const list = (name, fallback) => (process.env[name] ?? fallback).split(",").map(Number);
const SECONDS = Number(process.env.BENCH_PG_SECONDS ?? 3);
const BATCHES = list("BENCH_PG_BATCHES", "1,8,32,128");
const CLIENTS = list("BENCH_PG_CLIENTS", "1,4,16");
const PAYLOAD = Buffer.alloc(1024, 7);

const INSERT = `INSERT INTO rows (mailbox, payload) SELECT $1, $2 FROM generate_series(1, $3::int)`;

/** One connection committing batches until `until`; returns the commits it made and their total ms. */
async function commitLoop(client, mailbox, batch, oneRow, until) {
  let commits = 0;
  let busyMs = 0;
  while (performance.now() < until) {
    const t0 = performance.now();
    if (oneRow) {
      await client.query("BEGIN");
      await client.query("UPDATE counter SET next_id = next_id + $1 WHERE id = 1", [batch]);
      await client.query(INSERT, [mailbox, PAYLOAD, batch]);
      await client.query("COMMIT");
    } else {
      await client.query(INSERT, [mailbox, PAYLOAD, batch]);
    }
    busyMs += performance.now() - t0;
    commits++;
  }
  return { commits, busyMs };
}

progress("pg-commits: starting PostgreSQL (fsync on)");
const server = await startPrivatePostgres({ fsync: true });
const postmaster = Number(readFileSync(`${server.dataDir}/postmaster.pid`, "utf8").split("\n")[0]);
const maxClients = Math.max(...CLIENTS);
const clients = [];
try {
  for (let i = 0; i < maxClients; i++) {
    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    clients.push(client);
  }
  await clients[0].query(
    "CREATE TABLE rows (id bigserial PRIMARY KEY, mailbox text NOT NULL, payload bytea NOT NULL)",
  );
  await clients[0].query("CREATE INDEX rows_mailbox ON rows (mailbox, id)");
  await clients[0].query("CREATE TABLE counter (id int PRIMARY KEY, next_id bigint NOT NULL)");
  await clients[0].query("INSERT INTO counter VALUES (1, 0)");
  const lines = [
    `PostgreSQL commit ceiling (fsync on, 1 KiB rows, ${SECONDS} s a cell; ${os.cpus().length} cores, load ${os.loadavg()[0].toFixed(1)} at start)`,
    "",
    "| way | batch | clients | commits/s | rows/s | mean commit ms | PostgreSQL CPU µs/row |",
    "|---|---:|---:|---:|---:|---:|---:|",
  ];
  for (const oneRow of [false, true]) {
    for (const batch of BATCHES) {
      for (const n of CLIENTS) {
        progress(`pg-commits: ${oneRow ? "one row" : "spread"}, batch ${batch}, ${n} clients`);
        const cpu = cpuMeter(() => ({ postgres: postgresPids(postmaster) }));
        const until = performance.now() + SECONDS * 1000;
        const t0 = performance.now();
        const done = await Promise.all(
          clients.slice(0, n).map((client, i) => commitLoop(client, `box.${i}`, batch, oneRow, until)),
        );
        const seconds = (performance.now() - t0) / 1000;
        const used = cpu();
        const commits = done.reduce((sum, d) => sum + d.commits, 0);
        const busyMs = done.reduce((sum, d) => sum + d.busyMs, 0);
        const rows = commits * batch;
        lines.push(
          `| ${oneRow ? "one row" : "spread"} | ${batch} | ${n} | ${Math.round(commits / seconds).toLocaleString("en-US")} | ${Math.round(rows / seconds).toLocaleString("en-US")} | ${(busyMs / commits).toFixed(2)} | ${((used.postgres * 1000) / rows).toFixed(1)} |`,
        );
        await clients[0].query("TRUNCATE rows");
      }
    }
  }
  process.stdout.write(`${lines.join("\n")}\n`);
} finally {
  await Promise.all(clients.map((client) => client.end().catch(() => {})));
  await server.stop();
}
