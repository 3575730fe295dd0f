#!/usr/bin/env node
// `npm run bench`: durable SEND throughput/latency and FETCH+ACK drain rate of mq9 vs NATS JetStream vs
// Redis Streams, 1 KiB payloads on loopback, each server started fresh by this script on a free port.
// Figures only, no asserts. Progress goes to stderr, results to stdout.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import os from "node:os";
import { performance } from "node:perf_hooks";
import { runClusterBench } from "./cluster.js";
import * as jetstream from "./jetstream.js";
import * as mq9 from "./mq9.js";
import * as mq9Otlp from "./mq9-otlp.js";
import * as mq9Permissions from "./mq9-permissions.js";
import { runOrchestratorBench } from "./orchestrator.js";
import { binaryVersion, cleanupAll, cpuMeter, findBinary, installCleanupHandlers, progress } from "./proc.js";
import * as redis from "./redis.js";
import { runRegistryBench } from "./registry.js";
import { measureDrain, measureSend } from "./stats.js";

// BENCH_OTLP=1 adds our broker with OTLP tracing on: what tracing costs, next to it off.
const SYSTEMS = [mq9, mq9Permissions, jetstream, redis, ...(process.env.BENCH_OTLP === "1" ? [mq9Otlp] : [])];

const USAGE = `usage: node bench/run.js [--quick] [--registry] [--orchestrator] [--cluster] [--help]

  --quick      fast smoke run (small message counts)
  --registry   only the agent registry benchmark (bench/registry.js); BENCH_REGISTRY=1 adds it to a full run
  --orchestrator  only the orchestrator benchmark (bench/orchestrator.js); BENCH_ORCHESTRATOR=1 adds it to a full run
  --cluster    only the cluster benchmark (bench/cluster.js): mq9 on 1-3 nodes + PostgreSQL vs JetStream R3 and pg-boss

environment (defaults in brackets, quick-run defaults after the slash):
  BENCH_MESSAGES        messages sent at BENCH_CONCURRENCY in flight     [30000 / 2000]
  BENCH_SEQ_MESSAGES    messages sent one at a time                      [3000 / 300]
  BENCH_WARMUP          warm-up messages before each of the two runs     [3000 / 100]
                        (a fresh Node process needs ~2,500 round trips before V8 has optimised the
                        hot paths: our broker's first SENDs run at ~400 us p50, later ones at ~115 us)
  BENCH_CONCURRENCY     requests in flight for the windowed run          [64]
  BENCH_ROUNDS          rounds of the two SEND runs, the systems taking turns in each;
                        each round starts with the next system; the median
                        round of each system is reported                 [5 / 1]
  BENCH_PAYLOAD_BYTES   payload size                                     [1024]
  BENCH_DRAIN_BATCH     messages per FETCH / XREADGROUP                  [100]
  BENCH_SMALL_DRAIN     messages sent again, then drained by FETCH(1)+ACK, and sent again and
                        drained by each client's consume loop (0 skips both)   [10000 / 1000]
  BENCH_PHASE_TIMEOUT_S a phase stops early after this many seconds      [30 / 10]
  BENCH_CLUSTER_SYSTEMS --cluster: subset of mq9-pg,mq9-1,mq9-2,mq9-3,jetstream,pgboss
  BENCH_CLUSTER_MAILBOXES --cluster: mailboxes of the many-mailbox run   [64]
  BENCH_PG_COMMIT_DELAY --cluster: PostgreSQL's commit_delay in us (flushes shared by commits)   [0]
  BENCH_STALENESS_ROUNDS --cluster: REGISTERs timed until every node DISCOVERs them   [20]
  BENCH_CLUSTER_ROUNDS  --cluster: rounds, the systems taking turns; medians reported   [3 / 1]
  BENCH_CLUSTER_WARMUP  --cluster: SENDs (64 in flight) per mq9 node before each system's runs   [30000 / 0]
  BENCH_SYSTEMS         comma-separated subset of: ${SYSTEMS.map((s) => s.id).join(",")}
  BENCH_TMPDIR          where the servers' temp data dirs go             [os.tmpdir()]
  BENCH_NATS_SERVER, BENCH_REDIS_SERVER   binaries to use instead of the ones on PATH
  BENCH_MQ9_CLI         our CLI entry point                              [packages/cli/dist/main.js]
  BENCH_ORCH_MESSAGES   --orchestrator: routed messages of the loaded run     [30000 / 3000]
  BENCH_ORCH_TASKS      --orchestrator: 0 skips the task phases (split, bulkhead)   [1]
  BENCH_ORCH_SERVE_ARGS --orchestrator: extra flags of mq9 serve, e.g. "--poll-batch 512"   []
  BENCH_OTLP            1: adds mq9-otlp, our broker exporting its spans over OTLP/HTTP to a sink
                        in this process (--otlp-endpoint), and the tracing on / off ratios   [0]
  BENCH_MQ9_RAW         0: mq9's drains and consume loop ask for base64 payloads, not raw ones
                        (raw: an mq9 extension, @mq9/client's default)                [1]
  BENCH_MQ9_NODE_ARGS   node flags for our broker (every bench), e.g. "--cpu-prof --cpu-prof-dir=DIR"   [none]
`;

function intFromEnv(name, fallback, min = 1) {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) {
    process.stderr.write(`${name} must be an integer >= ${min}, got ${JSON.stringify(raw)}\n`);
    process.exit(2);
  }
  return n;
}

function parseConfig(argv) {
  const args = new Set(argv);
  if (args.has("--help") || args.has("-h")) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  for (const a of args) {
    if (a !== "--quick" && a !== "--registry" && a !== "--orchestrator" && a !== "--cluster") {
      process.stderr.write(`unknown argument ${a}\n${USAGE}`);
      process.exit(2);
    }
  }
  const quick = args.has("--quick");
  const registryOnly = args.has("--registry");
  const orchestratorOnly = args.has("--orchestrator");
  const wanted = (process.env.BENCH_SYSTEMS || SYSTEMS.map((s) => s.id).join(","))
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  for (const w of wanted) {
    if (!SYSTEMS.some((s) => s.id === w)) {
      process.stderr.write(`BENCH_SYSTEMS: unknown system ${w}\n`);
      process.exit(2);
    }
  }
  const payloadBytes = intFromEnv("BENCH_PAYLOAD_BYTES", 1024);
  return {
    quick,
    registryOnly,
    registry: registryOnly || process.env.BENCH_REGISTRY === "1",
    orchestratorOnly,
    clusterOnly: args.has("--cluster"),
    orchestrator: orchestratorOnly || process.env.BENCH_ORCHESTRATOR === "1",
    messages: intFromEnv("BENCH_MESSAGES", quick ? 2000 : 30000),
    seqMessages: intFromEnv("BENCH_SEQ_MESSAGES", quick ? 300 : 3000),
    warmup: intFromEnv("BENCH_WARMUP", quick ? 100 : 3000, 0),
    rounds: intFromEnv("BENCH_ROUNDS", quick ? 1 : 5),
    concurrency: intFromEnv("BENCH_CONCURRENCY", 64),
    drainBatch: intFromEnv("BENCH_DRAIN_BATCH", 100),
    smallDrain: intFromEnv("BENCH_SMALL_DRAIN", quick ? 1000 : 10000, 0),
    phaseMs: intFromEnv("BENCH_PHASE_TIMEOUT_S", quick ? 10 : 30) * 1000,
    payloadBytes,
    payload: randomBytes(payloadBytes),
    systems: SYSTEMS.filter((s) => wanted.includes(s.id)),
  };
}

function cpuModel() {
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync("/proc/cpuinfo", "utf8"));
    if (m) return m[1].trim();
  } catch {
    // not Linux
  }
  return os.cpus()[0]?.model ?? "unknown";
}

/** Starts one system and warms it up; the result holds `skipped` or `failed` when it cannot be measured. */
async function startSystem(mod, cfg) {
  const r = {
    id: mod.id,
    label: mod.label,
    durability: mod.durability,
    seqRounds: [],
    parRounds: [],
    keyedRounds: [],
    sent: 0,
  };
  progress(`${mod.label}: starting`);
  let sys;
  try {
    sys = await mod.start(cfg);
  } catch (err) {
    r.skipped = err.message;
    r.details = err.details ?? "";
    progress(`${mod.label}: not measured (${r.skipped})`);
    return { r };
  }
  r.version = sys.version;
  const entry = { r, sys, mod };
  if (cfg.warmup > 0) {
    progress(
      `${mod.label}: warm-up (${cfg.warmup} sequential + ${cfg.warmup} at ${cfg.concurrency} in flight)`,
    );
    await guarded(entry, async () => {
      r.sent += (await measureSend(() => sys.send(), sendOptions(cfg, cfg.warmup, 1))).count;
      r.sent += (await measureSend(() => sys.send(), sendOptions(cfg, cfg.warmup, cfg.concurrency))).count;
    });
  }
  return entry;
}

function sendOptions(cfg, count, concurrency) {
  return { count, concurrency, maxMs: cfg.phaseMs };
}

/** Runs `step`; a failure marks the system failed, and later steps skip it. */
async function guarded(entry, step) {
  if (!entry.sys || entry.r.failed) return;
  try {
    await step();
  } catch (err) {
    entry.r.failed = err.message;
    entry.r.details = entry.sys.output();
    progress(`${entry.mod.label}: failed: ${err.message}`);
  }
}

/** One round of the two SEND phases of one system. */
async function sendRound(entry, cfg, round) {
  const { r, sys, mod } = entry;
  const send = () => sys.send();
  await guarded(entry, async () => {
    progress(`${mod.label}: round ${round}: SEND x${cfg.seqMessages}, 1 in flight`);
    const seq = await metered(sys, () => measureSend(send, sendOptions(cfg, cfg.seqMessages, 1)));
    progress(`${mod.label}: round ${round}: SEND x${cfg.messages}, ${cfg.concurrency} in flight`);
    const par = await metered(sys, () => measureSend(send, sendOptions(cfg, cfg.messages, cfg.concurrency)));
    r.seqRounds.push(seq);
    r.parRounds.push(par);
    r.sent += seq.count + par.count;
    // A system that takes idempotency keys (ours): the same window with a key on every SEND.
    if (sys.sendKeyed) {
      progress(
        `${mod.label}: round ${round}: SEND x${cfg.messages} with idempotency keys, ${cfg.concurrency} in flight`,
      );
      const keyed = await measureSend(() => sys.sendKeyed(), sendOptions(cfg, cfg.messages, cfg.concurrency));
      r.keyedRounds.push(keyed);
      r.sent += keyed.count;
    }
  });
}

/** Runs a phase and adds to its result the CPU ms the server process (`serverMs`) and this one used. */
async function metered(sys, phase) {
  const meter = cpuMeter(() => ({ server: sys.pid ? [sys.pid] : [] }));
  const result = await phase();
  const used = meter();
  return { ...result, serverMs: used.server, clientMs: used.client };
}

/** CPU µs per message of the server (or `who`) over phases (all the rounds of a SEND run, or one drain). */
function serverUsPerMessage(phases, who = "serverMs") {
  const measured = phases.filter((p) => p && Number.isFinite(p[who]));
  const count = measured.reduce((sum, p) => sum + p.count, 0);
  if (count === 0) return Number.NaN;
  return (1000 * measured.reduce((sum, p) => sum + p[who], 0)) / count;
}

/** `items` starting at index `by` (modulo their count), wrapping around. */
function rotated(items, by) {
  const start = by % items.length;
  return [...items.slice(start), ...items.slice(0, start)];
}

/** The round with the median rate (its latencies come with it). */
function medianRound(rounds) {
  if (rounds.length === 0) return undefined;
  const sorted = [...rounds].sort((a, b) => a.rate - b.rate);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

/** Drains everything sent, checks it, and stops the system. */
async function drainAndClose(entry, cfg) {
  const { r, sys, mod } = entry;
  if (!sys) return;
  r.seq = medianRound(r.seqRounds);
  r.par = medianRound(r.parRounds);
  r.keyed = medianRound(r.keyedRounds);
  await guarded(entry, async () => {
    progress(`${mod.label}: drain ${r.sent} messages, FETCH(${cfg.drainBatch}) + ACK`);
    await sys.prepareDrain?.();
    r.drain = await metered(sys, () => measureDrain(() => sys.drainOnce(), { maxMs: cfg.phaseMs }));
    if (!r.drain.truncated && r.drain.count !== r.sent)
      r.warning = `drained ${r.drain.count} of ${r.sent} sent`;
    if (cfg.smallDrain > 0 && !r.drain.truncated) {
      const n = cfg.smallDrain;
      const refill = () => measureSend(() => sys.send(), sendOptions(cfg, n, cfg.concurrency));
      progress(`${mod.label}: SEND x${n}, then drain them FETCH(1) + ACK`);
      await refill();
      await sys.prepareDrain?.();
      r.drain1 = await metered(sys, () => measureDrain(() => sys.drainOnce(1), { maxMs: cfg.phaseMs }));
      progress(`${mod.label}: SEND x${n}, then drain them through the client's consume loop`);
      await refill();
      await sys.prepareDrain?.();
      r.consume = await metered(sys, async () => {
        const t0 = performance.now();
        const count = await sys.consume(n);
        const elapsedMs = performance.now() - t0;
        return { count, elapsedMs, rate: count / (elapsedMs / 1000) };
      });
      for (const [what, phase] of [
        ["FETCH(1)+ACK", r.drain1],
        ["consume", r.consume],
      ]) {
        if (!phase.truncated && phase.count !== n) {
          r.warning = [r.warning, `${what} drained ${phase.count} of ${n}`].filter(Boolean).join("; ");
        }
      }
    }
    const note = await sys.verify?.();
    if (note) r.warning = [r.warning, note].filter(Boolean).join("; ");
  });
  await sys.close().catch((err) => progress(`${mod.label}: close failed: ${err.message}`));
}

/**
 * Every system is started first; then the SEND phases run in rounds, each round measuring the
 * systems one after the other, and the median round of each counts. The VM's speed drifts over
 * a run: interleaved rounds let each system meet the same spells, so the ratios are fairer
 * than one long pass per system would make them. Each round starts with the next system, so
 * none always runs right after the same peer (whose disk writes and memory it would inherit).
 */
async function benchMessaging(cfg) {
  const entries = [];
  for (const mod of cfg.systems) entries.push(await startSystem(mod, cfg));
  for (let round = 1; round <= cfg.rounds; round++) {
    for (const entry of rotated(entries, round - 1)) await sendRound(entry, cfg, round);
  }
  for (const entry of entries) await drainAndClose(entry, cfg);
  return entries.map((e) => e.r);
}

// ---------------------------------------------------------------------------------------------- output

const fmtRate = (v) => (Number.isFinite(v) ? Math.round(v).toLocaleString("en-US") : "-");
const fmtMs = (v) => (Number.isFinite(v) ? v.toFixed(3) : "-");
const fmtRatio = (v) => (Number.isFinite(v) ? `${v.toFixed(2)}x` : "n/a");

/** Plain-text table; the first `leftColumns` columns are left-aligned, the rest right-aligned. */
function table(rows, leftColumns = 1) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => String(row[i]).length)));
  const line = (cells) => cells.join("  ").trimEnd();
  const lines = rows.map((row) =>
    line(
      row.map((cell, i) =>
        i < leftColumns ? String(cell).padEnd(widths[i]) : String(cell).padStart(widths[i]),
      ),
    ),
  );
  lines.splice(1, 0, line(widths.map((w) => "-".repeat(w))));
  return lines.join("\n");
}

function indent(text, maxLines = 25) {
  const lines = text.split("\n");
  const shown = lines.length > maxLines ? ["...", ...lines.slice(-maxLines)] : lines;
  return shown.map((l) => `      | ${l}`).join("\n");
}

function report(cfg, results, machine, totalMs) {
  const out = [];
  out.push("");
  out.push(
    `mq9 benchmark — ${cfg.payloadBytes}-byte payloads, loopback${cfg.quick ? " (--quick smoke run)" : ""}`,
  );
  out.push(`machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memGiB} GiB RAM, ${machine.os}`);
  out.push(
    `node ${process.version}; ${machine.nats ?? "nats-server: n/a"}; ${machine.redis ?? "redis-server: n/a"}`,
  );
  out.push(
    `runs: warm-up ${cfg.warmup}+${cfg.warmup}, then ${cfg.rounds} round(s) of SEND ${cfg.seqMessages} at 1 in flight and ` +
      `${cfg.messages} at ${cfg.concurrency} in flight, the systems taking turns (median round shown), ` +
      `drain FETCH(${cfg.drainBatch})+ACK (mq9: delivery counts and a named member on); ` +
      `phases capped at ${cfg.phaseMs / 1000}s; temp dirs in ${process.env.BENCH_TMPDIR || os.tmpdir()}`,
  );
  out.push("");

  const c = cfg.concurrency;
  const rows = [
    [
      "system",
      "SEND@1 msg/s",
      "p50@1 ms",
      "p99@1 ms",
      `SEND@${c} msg/s`,
      `p50@${c} ms`,
      `p99@${c} ms`,
      "drain msg/s",
    ],
  ];
  for (const r of results) {
    if (r.skipped) {
      rows.push([r.label, "not measured", "", "", "", "", "", ""]);
      continue;
    }
    rows.push([
      r.label,
      fmtRate(r.seq?.rate),
      fmtMs(r.seq?.p50),
      fmtMs(r.seq?.p99),
      fmtRate(r.par?.rate),
      fmtMs(r.par?.p50),
      fmtMs(r.par?.p99),
      fmtRate(r.drain?.rate),
    ]);
  }
  out.push(table(rows));
  out.push("");

  const fmtUs = (v) => (Number.isFinite(v) ? Math.round(v).toLocaleString("en-US") : "-");
  const drains = [["system", "FETCH(1)+ACK msg/s", "consume() msg/s", "server CPU µs/msg:", "SEND@1"]];
  drains[0].push(`SEND@${c}`, `FETCH(${cfg.drainBatch})+ACK`, "FETCH(1)+ACK", "consume()");
  for (const r of results) {
    if (r.skipped) continue;
    drains.push([
      r.label,
      fmtRate(r.drain1?.rate),
      fmtRate(r.consume?.rate),
      "",
      fmtUs(serverUsPerMessage(r.seqRounds)),
      fmtUs(serverUsPerMessage(r.parRounds)),
      fmtUs(serverUsPerMessage([r.drain])),
      fmtUs(serverUsPerMessage([r.drain1])),
      fmtUs(serverUsPerMessage([r.consume])),
    ]);
  }
  out.push(
    `consume loops (mq9: @mq9/client consume() batch ${cfg.drainBatch}; JetStream: consumer.consume(), ` +
      `max_messages ${cfg.drainBatch}; Redis: XREADGROUP BLOCK COUNT ${cfg.drainBatch} + XACK), and the ` +
      "server process's CPU (all its threads, from /proc) per message, over all rounds of each phase",
  );
  out.push(table(drains));
  out.push("");

  for (const r of results) {
    if (r.skipped) {
      const why = r.id === "mq9" ? `our broker could not start: ${r.skipped}` : r.skipped;
      out.push(`${r.label}: not measured (${why})`);
      if (r.details) out.push(indent(r.details));
      continue;
    }
    const notes = [];
    if (r.seq?.truncated) notes.push(`SEND@1 stopped after ${r.seq.count} msgs (time cap)`);
    if (r.par?.truncated) notes.push(`SEND@${c} stopped after ${r.par.count} msgs (time cap)`);
    if (r.parRounds.length > 1) {
      notes.push(`SEND@${c} rounds ${r.parRounds.map((p) => fmtRate(p.rate)).join(" / ")} msg/s`);
    }
    if (r.keyed) {
      const share = Number.isFinite(r.par?.rate)
        ? ` (${Math.round((100 * r.keyed.rate) / r.par.rate)}% of keyless)`
        : "";
      notes.push(
        `SEND@${c} with idempotency keys ${fmtRate(r.keyed.rate)} msg/s${share}, p50 ${fmtMs(r.keyed.p50)} ms, p99 ${fmtMs(r.keyed.p99)} ms`,
      );
    }
    const us = (phases) =>
      `${serverUsPerMessage(phases).toFixed(1)}/${serverUsPerMessage(phases, "clientMs").toFixed(1)}`;
    notes.push(
      `CPU µs/msg server/bench client: SEND@1 ${us(r.seqRounds)}, SEND@${c} ${us(r.parRounds)}` +
        (r.drain ? `, FETCH(${cfg.drainBatch})+ACK ${us([r.drain])}` : ""),
    );
    if (r.drain) notes.push(`drained ${r.drain.count} msgs in ${r.drain.batches} batches`);
    if (r.drain?.truncated) notes.push("drain stopped early (time cap)");
    if (r.warning) notes.push(`WARNING ${r.warning}`);
    out.push(`${r.label}: ${r.durability}${notes.length ? `; ${notes.join("; ")}` : ""}`);
    if (r.failed) {
      out.push(`  FAILED during measurement: ${r.failed}`);
      if (r.details) out.push(indent(r.details));
    }
  }
  out.push("");

  const ours = results.find((r) => r.id === "mq9");
  const peer = (id) => results.find((r) => r.id === id);
  const ratio = (a, b) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? a / b : Number.NaN);
  const lines = [];
  const add = (metric, versus, a, b, target) => {
    const v = ratio(a, b);
    const verdict =
      target === undefined ? "(no target)" : Number.isFinite(v) ? (v >= target ? "met" : "NOT met") : "-";
    lines.push([metric, versus, fmtRatio(v), target === undefined ? "" : `>= ${target}x`, verdict]);
  };
  const js = peer("jetstream");
  const rd = peer("redis");
  const perms = peer("mq9-perms");
  add(`SEND@${c} throughput`, "mq9 / JetStream", ours?.par?.rate, js?.par?.rate, 1.5);
  add(`SEND@${c} throughput`, "mq9 / Redis XADD", ours?.par?.rate, rd?.par?.rate, 1);
  add("SEND@1 p50 latency", "JetStream / mq9", js?.seq?.p50, ours?.seq?.p50, 1);
  add("SEND@1 p50 latency", "Redis / mq9", rd?.seq?.p50, ours?.seq?.p50, 0.77);
  add(`SEND@${c} throughput`, "permissions on / off", perms?.par?.rate, ours?.par?.rate, 0.95);
  add("SEND@1 p50 latency", "permissions off / on", ours?.seq?.p50, perms?.seq?.p50, 0.95);
  const otlp = peer("mq9-otlp");
  if (otlp) {
    add(`SEND@${c} throughput`, "OTLP tracing on / off", otlp?.par?.rate, ours?.par?.rate);
    add("SEND@1 p50 latency", "OTLP tracing off / on", ours?.seq?.p50, otlp?.seq?.p50);
    add(`drain FETCH(${cfg.drainBatch})+ACK`, "OTLP tracing on / off", otlp?.drain?.rate, ours?.drain?.rate);
    add("consume loop", "OTLP tracing on / off", otlp?.consume?.rate, ours?.consume?.rate);
  }
  add(`drain FETCH(${cfg.drainBatch})+ACK`, "mq9 / JetStream", ours?.drain?.rate, js?.drain?.rate, 2);
  add(`drain FETCH(${cfg.drainBatch})+ACK`, "mq9 / Redis", ours?.drain?.rate, rd?.drain?.rate, 1);
  add("drain FETCH(1)+ACK", "mq9 / Redis", ours?.drain1?.rate, rd?.drain1?.rate);
  add("consume loop", "mq9 / Redis", ours?.consume?.rate, rd?.consume?.rate);
  add("consume loop", "mq9 / JetStream", ours?.consume?.rate, js?.consume?.rate);
  const cpuRatio = (phases) => (r) => 1 / serverUsPerMessage(phases(r) ?? []);
  for (const [metric, phases] of [
    [`server CPU/msg SEND@${c}`, (r) => r?.parRounds],
    [`server CPU/msg FETCH(${cfg.drainBatch})+ACK`, (r) => [r?.drain]],
  ]) {
    add(metric, "Redis / mq9", cpuRatio(phases)(ours), cpuRatio(phases)(rd));
  }
  out.push("ratios vs the issue's targets (p50 ratios are peer_p50 / our_p50: > 1 means mq9 is faster)");
  out.push(table([["metric", "ratio", "value", "target", ""], ...lines], 2));
  if (!ours || ours.skipped || ours.failed) out.push("(n/a: our broker was not measured in this run)");
  out.push("");
  out.push("(these are figures, not asserts: the exit code does not depend on them)");
  out.push(`total bench time ${(totalMs / 1000).toFixed(1)}s`);
  process.stdout.write(`${out.join("\n")}\n`);
}

async function main() {
  const cfg = parseConfig(process.argv.slice(2));
  installCleanupHandlers();
  const t0 = performance.now();
  if (cfg.clusterOnly) {
    process.stdout.write(`${await runClusterBench(cfg)}\n`);
    return;
  }
  if (cfg.registryOnly || cfg.orchestratorOnly) {
    if (cfg.registryOnly) process.stdout.write(`${await runRegistryBench(cfg)}\n`);
    if (cfg.orchestratorOnly) process.stdout.write(`${await runOrchestratorBench(cfg)}\n`);
    return;
  }
  const results = await benchMessaging(cfg);
  const machine = {
    cpu: cpuModel(),
    cores: os.availableParallelism?.() ?? os.cpus().length,
    memGiB: (os.totalmem() / 2 ** 30).toFixed(1),
    os: `${os.type()} ${os.release()}`,
    nats: binaryVersion(findBinary("nats-server", "BENCH_NATS_SERVER", ["/usr/sbin/nats-server"])),
    redis:
      binaryVersion(findBinary("redis-server", "BENCH_REDIS_SERVER", ["/usr/bin/redis-server"]))?.replace(
        /^Redis server v=(\S+).*/,
        "redis-server v$1",
      ) ?? null,
  };
  report(cfg, results, machine, performance.now() - t0);
  if (cfg.registry) process.stdout.write(`${await runRegistryBench(cfg)}\n`);
  if (cfg.orchestrator) process.stdout.write(`${await runOrchestratorBench(cfg)}\n`);
}

main()
  .catch((err) => {
    process.stderr.write(`bench failed: ${err.stack ?? err}\n`);
    process.exitCode = 1;
  })
  .finally(cleanupAll);
