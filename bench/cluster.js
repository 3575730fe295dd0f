// `npm run bench -- --cluster`: mq9 cluster mode against its peers, 1 KiB payloads, on this machine.
// Systems, all measured in one run: one mq9 broker on PostgreSQL with its own listener (no NATS
// cluster); mq9 with one, two and three nodes on one PostgreSQL behind a
// 3-node nats-server cluster; JetStream with an R3 file stream on a 3-node nats-server cluster;
// pg-boss on the same PostgreSQL. Two runs each: one mailbox (durable SEND one at a time and 64 in
// flight, then a FETCH(100)+ACK drain of what was sent), and 64 mailboxes (SEND@64 spread over
// them, then three consumers draining; BENCH_CLUSTER_MAILBOXES; pg-boss sits this one out). Also CPU microseconds per message of every process, and
// with two or more mq9 nodes how long after a REGISTER every node DISCOVERs the agent. The systems
// take turns over several rounds (BENCH_CLUSTER_ROUNDS), after a warm-up of each (BENCH_CLUSTER_WARMUP
// SENDs, 64 in flight); figures are medians. Figures only, no asserts.
import { readFileSync } from "node:fs";
import os from "node:os";
import { performance } from "node:perf_hooks";
import { connect as mq9Connect } from "@mq9/client";
import { AckPolicy, DeliverPolicy, connect as natsConnect, StorageType } from "nats";
import pgDriver from "pg";
import PgBoss from "pg-boss";
import { startMq9Node } from "../scripts/local-cluster/mq9-node.js";
import { startNatsCluster } from "../scripts/local-cluster/nats-cluster.js";
import { startPrivatePostgres } from "../scripts/local-cluster/private-postgres.js";
import { cpuMeter, MESSAGING_ONLY_ARGS, postgresPids, progress } from "./proc.js";
import { measureSend, percentile } from "./stats.js";

const env = (name, fallback) => Number(process.env[name] ?? fallback);
const PgPool = pgDriver.Pool;

/**
 * The database's transaction commits and WAL bytes so far. PostgreSQL publishes a backend's
 * counts when it goes idle, at most once a second: wait that long before the closing reading.
 */
async function databaseStats(db, settle = false) {
  if (settle) await new Promise((r) => setTimeout(r, 1100));
  const { rows } = await db.query(
    "SELECT xact_commit::float8 AS commits, pg_current_wal_lsn() - '0/0'::pg_lsn AS wal FROM pg_stat_database WHERE datname = current_database()",
  );
  return { commits: rows[0].commits, wal: Number(rows[0].wal) };
}

const perMessage = (used, n) =>
  Object.fromEntries(
    Object.entries(used).map(([k, ms]) => [k, ms < 0 ? "n/a" : Math.round((ms * 1000) / Math.max(1, n))]),
  );

/** Runs `drainOnce(lane)` on every lane at once, each until it returns 0: one drain over many consumers. */
async function measureDrainLanes(drainOnce, lanes, { maxMs }) {
  const t0 = performance.now();
  let truncated = false;
  const counts = await Promise.all(
    Array.from({ length: lanes }, async (_, lane) => {
      let count = 0;
      for (;;) {
        const n = await drainOnce(lane);
        if (n === 0) return count;
        count += n;
        if (performance.now() - t0 > maxMs) {
          truncated = true;
          return count;
        }
      }
    }),
  );
  const count = counts.reduce((a, b) => a + b, 0);
  const elapsedMs = performance.now() - t0;
  return { count, truncated, elapsedMs, rate: count / (elapsedMs / 1000) };
}

/**
 * One layout's runs: SEND@1 (one mailbox only), SEND@64 over three client connections, then the
 * drain of what was sent; CPU per message of every process in SEND@64 and in the drain.
 */
async function measureLayout(system, layout, cfg, { seq }) {
  const seqRun = seq
    ? await measureSend(() => layout.send(0, 0), { count: cfg.seq, concurrency: 1, maxMs: cfg.phaseMs })
    : undefined;
  let n = 0;
  const next = () => {
    const i = n++;
    return layout.send(i % 3, i);
  };
  const database = system.usesPostgres ? cfg.databaseStats : undefined;
  const db0 = await database?.(true);
  const cpu = cpuMeter(system.pids);
  const par = await measureSend(next, { count: cfg.par, concurrency: 64, maxMs: cfg.phaseMs });
  const sendCpu = cpu();
  const db1 = await database?.(true);
  await layout.prepareDrain?.();
  const drainCpuMeter = cpuMeter(system.pids);
  const drain = await measureDrainLanes(layout.drainOnce, layout.drainLanes ?? 1, { maxMs: cfg.phaseMs * 2 });
  const drainCpu = drainCpuMeter();
  const db2 = await database?.(true);
  // Per message: commits and WAL bytes (the settle waits are outside the timed phases).
  const perMessageDb = (a, b, n) =>
    a && b
      ? { commits: (b.commits - a.commits) / Math.max(1, n), wal: (b.wal - a.wal) / Math.max(1, n) }
      : undefined;
  return {
    sendDb: perMessageDb(db0, db1, par.count),
    drainDb: perMessageDb(db1, db2, drain.count),
    seq: seqRun,
    par,
    drain,
    sendCpuUs: perMessage(sendCpu, par.count),
    drainCpuUs: perMessage(drainCpu, drain.count),
  };
}

/** The one-mailbox run (per-mailbox order), then, where the system has it, the many-mailbox run. */
async function measure(system, cfg) {
  // A fresh Node process (our nodes, pg-boss's client) runs its hot paths unoptimised at first:
  // every node needs its own warm-up, and gets a share of the SENDs.
  if (cfg.warmup > 0) {
    let n = 0;
    await measureSend(
      () => {
        const i = n++;
        return system.warmup(i % 3, i);
      },
      { count: cfg.warmup * (system.processes ?? 1), concurrency: 64, maxMs: cfg.phaseMs * 2 },
    );
  }
  const one = await measureLayout(system, system.one, cfg, { seq: true });
  const many = system.many ? await measureLayout(system, system.many, cfg, { seq: false }) : undefined;
  return { one, many };
}

/** nodeCount 0: one broker on PostgreSQL with its own listener, no NATS cluster (the (a)). */
async function mq9System(nats, pg, nodeCount, cfg, run) {
  const nodes = [];
  try {
    return await mq9On(nats, pg, nodeCount, cfg, run, nodes);
  } catch (err) {
    for (const n of nodes) await n.stop();
    throw err;
  }
}

async function mq9On(nats, pg, nodeCount, cfg, run, nodes) {
  const schema = `bench_${nodeCount}n_${run}`;
  const standalone = nodeCount === 0;
  for (let i = 0; i < Math.max(1, nodeCount); i++) {
    nodes.push(
      await startMq9Node({
        nodeId: `n${i + 1}`,
        nats: standalone ? undefined : [nats.urls[i % 3]],
        postgres: pg.url,
        // e.g. BENCH_MQ9_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" to profile the nodes.
        nodeArgs: (process.env.BENCH_MQ9_NODE_ARGS ?? "").split(" ").filter(Boolean),
        args: ["--postgres-schema", schema, ...MESSAGING_ONLY_ARGS],
      }),
    );
  }
  // Three client connections either way: one per nats-server, or three to the broker's own port.
  const urls = standalone ? [0, 1, 2].map(() => `nats://127.0.0.1:${nodes[0].port}`) : nats.urls;
  const clients = await Promise.all(urls.map((url) => mq9Connect(url, { requestTimeoutMs: 15_000 })));
  const boxes = Array.from({ length: cfg.mailboxes }, (_, i) => `bench.m${i}`);
  for (const name of ["bench.q1", ...boxes]) await clients[0].createMailbox({ name });
  const payload = cfg.payload;
  const send = async (lane, mailbox) => {
    const id = await clients[lane].send(mailbox, payload);
    if (typeof id !== "number") throw new Error("SEND without msg_id");
  };
  // Each lane drains its mailboxes in turn with FETCH(100), ACKing a batch while fetching the next.
  const drainer = (lanes) => {
    const left = Array.from({ length: lanes }, (_, lane) =>
      lanes === 1 ? ["bench.q1"] : boxes.filter((_, i) => i % lanes === lane),
    );
    const acks = Array.from({ length: lanes }, () => Promise.resolve());
    let turn = 0;
    return async (lane) => {
      const mine = left[lane];
      while (mine.length > 0) {
        const mailbox = mine[turn++ % mine.length];
        const messages = await clients[lane].fetch(mailbox, {
          group: "g",
          deliver: "earliest",
          batch: 100,
          maxWaitMs: 0,
        });
        await acks[lane];
        if (messages.length === 0) {
          mine.splice(mine.indexOf(mailbox), 1);
          continue;
        }
        acks[lane] = clients[lane].ack(mailbox, "g", messages[messages.length - 1].msgId);
        return messages.length;
      }
      await acks[lane];
      return 0;
    };
  };
  return {
    label: standalone
      ? "mq9, 1 node on PostgreSQL (own listener)"
      : `mq9 cluster, ${nodeCount} node${nodeCount > 1 ? "s" : ""}`,
    pids: () => ({
      ...Object.fromEntries(nodes.map((n) => [`mq9 ${n.nodeId}`, [n.pid]])),
      ...(standalone ? {} : Object.fromEntries(nats.servers.map((s) => [`nats ${s.name}`, [s.pid]]))),
      postgres: postgresPids(pg.postmasterPid),
    }),
    usesPostgres: true,
    processes: nodes.length,
    warmup: (lane) => send(lane, "bench.q1"),
    one: { send: (lane) => send(lane, "bench.q1"), drainOnce: drainer(1) },
    many: {
      send: (lane, i) => send(lane, boxes[i % boxes.length]),
      drainOnce: drainer(3),
      drainLanes: 3,
    },
    // With two or more nodes: how long after a REGISTER is answered every node's DISCOVER finds it.
    staleness:
      nodeCount > 1 ? () => registerStaleness(clients, nodes, env("BENCH_STALENESS_ROUNDS", 20)) : undefined,
    async close() {
      await Promise.all(clients.map((c) => c.close().catch(() => {})));
      for (const n of nodes) await n.stop();
    },
  };
}

/** Whether a node's own DISCOVER (its HTTP API answers from its in-memory registry) finds `tag`. */
async function nodeDiscovers(node, tag) {
  const res = await fetch(`http://127.0.0.1:${node.httpPort}/api/v1/agents/discover`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ mode: "tag", tags: [tag] }),
  });
  if (!res.ok) throw new Error(`DISCOVER on ${node.nodeId}: HTTP ${res.status}`);
  const { agents } = await res.json();
  return agents.length > 0;
}

/**
 * REGISTER through NATS (any node takes it), then poll every node's DISCOVER until each finds the
 * agent: per registration the time until the last node found it, from the REGISTER's reply.
 */
async function registerStaleness(clients, nodes, rounds) {
  const worst = [];
  for (let i = 0; i < rounds; i++) {
    const tag = `stale${i}x${Date.now()}`;
    await clients[i % clients.length].register({
      name: `staleness-${tag}`,
      mailbox: `staleness.${tag}`,
      payload: "an agent the staleness probe registers",
      tags: [tag],
    });
    const answered = performance.now();
    const seen = await Promise.all(
      nodes.map(async (node) => {
        for (;;) {
          if (await nodeDiscovers(node, tag)) return performance.now() - answered;
          if (performance.now() - answered > 10_000) return Number.POSITIVE_INFINITY;
          await new Promise((r) => setTimeout(r, 2));
        }
      }),
    );
    worst.push(Math.max(...seen));
  }
  worst.sort((a, b) => a - b);
  return { rounds, p50: percentile(worst, 50), max: worst[worst.length - 1] };
}

async function jetstreamSystem(cfg) {
  const cluster = await startNatsCluster({ size: 3, jetstream: true, name: "js" });
  try {
    return await jetstreamOn(cluster, cfg);
  } catch (err) {
    // Not measured: its servers must not outlive the run.
    await cluster.stop();
    throw err;
  }
}

async function jetstreamOn(cluster, cfg) {
  const conns = await Promise.all(cluster.urls.map((url) => natsConnect({ servers: url })));
  // JetStream answers once its meta leader is elected, a moment after the routes are up.
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      const jsm = await conns[0].jetstreamManager({ timeout: 30_000 });
      // The one mailbox is a stream of its own; the many mailboxes are the subjects of one more
      // stream, one durable consumer for their group (what fits JetStream: a stream is a raft group).
      for (const [name, subject] of [
        ["BENCH", "bench.q1"],
        ["BENCHM", "bench.m.*"],
      ]) {
        await jsm.streams.add({ name, subjects: [subject], storage: StorageType.File, num_replicas: 3 });
        await jsm.consumers.add(name, {
          durable_name: "g",
          ack_policy: AckPolicy.Explicit,
          deliver_policy: DeliverPolicy.All,
        });
      }
      break;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  const streams = conns.map((nc) => nc.jetstream({ timeout: 30_000 }));
  // A loaded machine answers an R3 publish slowly: the client's default 5 s is too short.
  const publish = (lane, subject) => streams[lane].publish(subject, cfg.payload, { timeout: 30_000 });
  /** Fetchers of one durable consumer, one per lane, sharing what is left to drain. */
  const drainOf = async (stream) => {
    const consumers = await Promise.all(streams.map((js) => js.consumers.get(stream, "g")));
    let remaining = 0;
    return {
      async prepareDrain() {
        remaining = (await consumers[0].info()).num_pending;
      },
      async drainOnce(lane) {
        const want = Math.min(100, remaining);
        if (want === 0) {
          await conns[lane].flush();
          return 0;
        }
        remaining -= want;
        const iter = await consumers[lane].fetch({ max_messages: want, expires: 5000 });
        let n = 0;
        for await (const m of iter) {
          m.ack();
          n++;
        }
        remaining += want - n;
        return n;
      },
    };
  };
  return {
    label: "JetStream R3 (3 nats-servers)",
    pids: () => Object.fromEntries(cluster.servers.map((s) => [`nats ${s.name}`, [s.pid]])),
    warmup: (lane) => publish(lane, "bench.q1"),
    one: { send: (lane) => publish(lane, "bench.q1"), ...(await drainOf("BENCH")) },
    many: {
      send: (lane, i) => publish(lane, `bench.m.${i % cfg.mailboxes}`),
      ...(await drainOf("BENCHM")),
      drainLanes: 3,
    },
    async close() {
      await Promise.all(conns.map((nc) => nc.close().catch(() => {})));
      await cluster.stop();
    },
  };
}

async function pgBossSystem(pg, cfg, round) {
  const boss = new PgBoss({ connectionString: pg.url, max: 16, schema: `pgboss${round}` });
  boss.on("error", () => {});
  await boss.start();
  await boss.createQueue("bench");
  const data = { payload: cfg.payload.toString("base64") };
  const send = () => boss.send("bench", data).then(() => {});
  return {
    label: "pg-boss (same PostgreSQL)",
    pids: () => ({ postgres: postgresPids(pg.postmasterPid) }),
    usesPostgres: true,
    warmup: send,
    one: {
      send,
      async drainOnce() {
        const jobs = await boss.fetch("bench", { batchSize: 100 });
        if (!jobs || jobs.length === 0) return 0;
        await boss.complete(
          "bench",
          jobs.map((j) => j.id),
        );
        return jobs.length;
      },
    },
    async close() {
      await boss.stop({ graceful: false, wait: true }).catch(() => {});
    },
  };
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)];
};

/**
 * One system's rounds of one layout ("one" or "many") as one result: each rate the median of the
 * rounds'; latencies and CPU from the round whose SEND@64 rate is the median.
 */
function medianRound(rounds, id, label, layout) {
  const ok = rounds
    .filter((r) => r.id === id && !r.error && r[layout])
    .map((r) => ({ ...r[layout], round: r }));
  if (ok.length === 0) {
    const failed = rounds.find((r) => r.id === id && r.error);
    return { id, label, error: failed ? failed.error : undefined, absent: !failed };
  }
  const byPar = [...ok].sort((a, b) => a.par.rate - b.par.rate);
  const middle = byPar[Math.floor((byPar.length - 1) / 2)];
  const rate = (metric) => median(ok.map((r) => r[metric].rate));
  return {
    id,
    label,
    ...middle,
    seq: middle.seq && { ...middle.seq, rate: rate("seq") },
    par: { ...middle.par, rate: rate("par") },
    drain: { ...middle.drain, rate: rate("drain") },
  };
}

/** CPU per message by process, with the mq9 nodes and the nats-servers each also summed. */
function cpuLine(used) {
  const parts = Object.keys(used.sendCpuUs).map(
    (k) => `${k} ${used.sendCpuUs[k]} | ${used.drainCpuUs[k] ?? "-"}`,
  );
  for (const [prefix, name] of [
    ["mq9 ", "mq9 nodes, summed"],
    ["nats ", "nats-servers, summed"],
  ]) {
    const keys = Object.keys(used.sendCpuUs).filter((k) => k.startsWith(prefix));
    if (keys.length === 0 || (prefix === "nats " && keys.length < 2)) continue;
    const sum = (of) => keys.reduce((total, k) => total + (Number(of[k]) || 0), 0);
    parts.unshift(`${name} ${sum(used.sendCpuUs)} | ${sum(used.drainCpuUs)}`);
  }
  const db = (d) =>
    d ? `${(d.commits * 100).toFixed(1)} commits per 100 msgs, ${Math.round(d.wal)} B WAL per msg` : "-";
  if (used.sendDb) parts.push(`PostgreSQL ${db(used.sendDb)} | ${db(used.drainDb)}`);
  return parts.join("; ");
}

const fmt = (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "n/a");

export async function runClusterBench(base) {
  const cfg = {
    payload: base.payload,
    seq: env("BENCH_SEQ_MESSAGES", base.quick ? 200 : 1000),
    par: env("BENCH_MESSAGES", base.quick ? 2000 : 10000),
    phaseMs: base.phaseMs,
    // Tens of thousands: a node keeps compiling its hot paths that long (bench/CLUSTER-RESULTS.md, Run O).
    warmup: env("BENCH_CLUSTER_WARMUP", base.quick ? 0 : 30000),
    rounds: env("BENCH_CLUSTER_ROUNDS", base.quick ? 1 : 3),
    mailboxes: env("BENCH_CLUSTER_MAILBOXES", 64),
  };
  progress("cluster bench: starting a 3-node nats cluster and PostgreSQL");
  const [nats, pg] = await Promise.all([
    startNatsCluster({ size: 3 }),
    startPrivatePostgres({ fsync: true }),
  ]);
  pg.postmasterPid = Number(readFileSync(`${pg.dataDir}/postmaster.pid`, "utf8").split("\n")[0]);
  const rounds = [];
  const results = {};
  let chosen = [];
  const db = new PgPool({ connectionString: pg.url, max: 1 });
  cfg.databaseStats = (settle) => databaseStats(db, settle);
  // e.g. BENCH_PG_COMMIT_DELAY=1000: PostgreSQL waits that many us before a WAL flush when other
  // transactions are running, so the commits of several nodes share it.
  if (process.env.BENCH_PG_COMMIT_DELAY) {
    await db.query(`ALTER SYSTEM SET commit_delay = ${Number(process.env.BENCH_PG_COMMIT_DELAY)}`);
    await db.query("SELECT pg_reload_conf()");
  }
  try {
    const makers = [
      ["mq9-pg", "mq9, 1 node on PostgreSQL (own listener)", (round) => mq9System(nats, pg, 0, cfg, round)],
      ["mq9-1", "mq9 cluster, 1 node", (round) => mq9System(nats, pg, 1, cfg, round)],
      ["mq9-2", "mq9 cluster, 2 nodes", (round) => mq9System(nats, pg, 2, cfg, round)],
      ["mq9-3", "mq9 cluster, 3 nodes", (round) => mq9System(nats, pg, 3, cfg, round)],
      ["jetstream", "JetStream R3 (3 nats-servers)", () => jetstreamSystem(cfg)],
      ["pgboss", "pg-boss (same PostgreSQL)", (round) => pgBossSystem(pg, cfg, round)],
    ];
    const wanted = (process.env.BENCH_CLUSTER_SYSTEMS ?? makers.map(([id]) => id).join(",")).split(",");
    chosen = makers.filter(([id]) => wanted.includes(id));
    // The systems take turns, each round starting with the next one, so a load that comes and goes
    // on a shared machine falls on all of them; ratios are taken within a round.
    for (let round = 0; round < cfg.rounds; round++) {
      for (let k = 0; k < chosen.length; k++) {
        const [id, label, make] = chosen[(k + round) % chosen.length];
        let system;
        try {
          system = await make(round + 1);
          progress(`${label}: measuring (round ${round + 1} of ${cfg.rounds})`);
          const figures = await measure(system, cfg);
          if (system.staleness && round === 0) {
            progress(`${label}: REGISTER -> DISCOVER staleness`);
            figures.staleness = await system.staleness();
          }
          rounds.push({ id, label, round, loadavg: os.loadavg()[0], ...figures });
        } catch (err) {
          rounds.push({ id, label, round, error: err.message });
          progress(`not measured: ${err.message}`);
        } finally {
          await system?.close().catch(() => {});
        }
      }
    }
    for (const layout of ["one", "many"]) {
      results[layout] = chosen.map(([id, label]) => medianRound(rounds, id, label, layout));
    }
  } finally {
    await db.end().catch(() => {});
    await nats.stop();
    await pg.stop();
  }
  const lines = [
    `mq9 cluster benchmark — ${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.cpus()[0]?.model ?? ""}, node ${process.version}`,
    `payload ${cfg.payload.length} B; SEND@1 ${cfg.seq} msgs, SEND@64 ${cfg.par} msgs over 3 client connections (one per nats-server); drain by FETCH(100)+ACK`,
    "PostgreSQL 15 with fsync on (synchronous_commit on): an mq9 SEND is answered after its COMMIT's WAL fsync",
    "JetStream R3 file streams: a publish is acked once a quorum of servers stored it; nats-server's file store does not fsync each write (it syncs on an interval), so JetStream's ack promises less than a PostgreSQL COMMIT",
  ];
  const runs = [
    [
      "one",
      "One mailbox (per-mailbox order: every SEND takes its turn on one id counter); drain by one consumer",
    ],
    [
      "many",
      `${cfg.mailboxes} mailboxes, SENDs spread over them; drain by 3 consumers (one per connection), each over its third of the mailboxes. JetStream: the mailboxes are the ${cfg.mailboxes} subjects of one R3 stream, one durable consumer fetched by 3 clients`,
    ],
  ];
  for (const [layout, title] of runs) {
    const measured = results[layout].filter((r) => !r.absent);
    if (measured.length === 0) continue;
    lines.push("", `## ${title}`, "");
    lines.push(
      layout === "one"
        ? "| system | SEND@1 msg/s (p50 ms) | SEND@64 msg/s (p50 / p99 ms) | drain msg/s |"
        : "| system | SEND@64 msg/s (p50 / p99 ms) | drain msg/s |",
      layout === "one" ? "|---|---|---|---|" : "|---|---|---|",
    );
    for (const r of measured) {
      if (r.error) {
        lines.push(`| ${r.label} | not measured: ${r.error} | |${layout === "one" ? " |" : ""}`);
        continue;
      }
      const seq = layout === "one" ? ` ${fmt(r.seq.rate)} (${r.seq.p50.toFixed(2)}) |` : "";
      lines.push(
        `| ${r.label} |${seq} ${fmt(r.par.rate)} (${r.par.p50.toFixed(2)} / ${r.par.p99.toFixed(2)}) | ${fmt(r.drain.rate)} |`,
      );
    }
    const ok = measured.filter((x) => !x.error);
    if (cfg.rounds > 1) {
      lines.push(
        "",
        `each figure is the median of ${cfg.rounds} rounds; per round (load average at its end):`,
      );
      for (const r of ok) {
        const of = rounds.filter((x) => x.id === r.id && !x.error && x[layout]);
        lines.push(
          `  ${r.label}: SEND@64 ${of.map((x) => fmt(x[layout].par.rate)).join(" / ")}; drain ${of.map((x) => fmt(x[layout].drain.rate)).join(" / ")} (load ${of.map((x) => x.loadavg.toFixed(1)).join(" / ")})`,
        );
      }
    }
    lines.push(
      "",
      `ratios (SEND@64, drain)${cfg.rounds > 1 ? ", the median of the rounds' ratios (peers measured in the same round)" : ""}:`,
    );
    const ratio = (id, peer, metric) => {
      const each = [];
      for (let round = 0; round < cfg.rounds; round++) {
        const mine = rounds.find((x) => x.id === id && x.round === round && !x.error && x[layout]);
        const theirs = rounds.find((x) => x.id === peer && x.round === round && !x.error && x[layout]);
        if (mine && theirs) each.push(mine[layout][metric].rate / theirs[layout][metric].rate);
      }
      return each.length > 0 ? `${median(each).toFixed(2)}x` : "n/a";
    };
    for (const r of ok.filter((x) => x.id.startsWith("mq9"))) {
      const withBoss = layout === "one" && chosen.some(([id]) => id === "pgboss");
      const boss = withBoss ? `, ${ratio(r.id, "pgboss", "par")} pg-boss` : "";
      const bossDrain = withBoss ? `, ${ratio(r.id, "pgboss", "drain")} pg-boss` : "";
      const scale =
        r.id === "mq9-1" || r.id === "mq9-pg"
          ? ""
          : `; vs 1 node: SEND@64 ${ratio(r.id, "mq9-1", "par")}, drain ${ratio(r.id, "mq9-1", "drain")}`;
      lines.push(
        `  ${r.label}: SEND@64 ${ratio(r.id, "jetstream", "par")} JetStream R3${boss}; drain ${ratio(r.id, "jetstream", "drain")} JetStream R3${bossDrain}${scale}`,
      );
    }
    lines.push("", "CPU us per message (SEND@64 | drain), by process:");
    for (const r of ok) lines.push(`  ${r.label}: ${cpuLine(r)}`);
  }
  const stale = rounds.filter((r) => r.staleness);
  if (stale.length > 0) {
    lines.push("", "REGISTER answered -> DISCOVER finds it on every node (the issue asks <= 1 s):");
    for (const r of stale) {
      const { rounds: n, p50, max } = r.staleness;
      lines.push(`  ${r.label}: p50 ${p50.toFixed(0)} ms, max ${max.toFixed(0)} ms over ${n} registrations`);
    }
  }
  return lines.join("\n");
}
