// One cluster node's SEND phase alone, at a node-of-three's share of in-flight SENDs (20) and at
// 64: the node's CPU per message and per batch (`CALL mq9_send`), and optionally a CPU profile of
// just that phase (the node's idle time and start-up left out). Not part of `npm run bench`.
//
//   N=20000 ROUNDS=3 node bench/cluster-send-profile.js
//   PROFILE=/tmp/prof   also profile one pass per concurrency into that folder (see profile-phases.js)
//   CLIS=a/main.js,b/main.js   A/B: the builds to run, alternating, a fresh node each round
//   CONCURRENCY=20,64   the in-flight counts
//   WARMUP=60000        SENDs (64 in flight) before the first measured pass: a fresh node's V8 is
//                       still compiling its hot paths for tens of thousands of messages
//   NODE_ARGS=...       node flags for the node (e.g. --single-threaded-gc)
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@mq9/client";
import { MQ9_CLI, startMq9Node } from "../scripts/local-cluster/mq9-node.js";
import { startNatsCluster } from "../scripts/local-cluster/nats-cluster.js";
import { startPrivatePostgres } from "../scripts/local-cluster/private-postgres.js";
import { MESSAGING_ONLY_ARGS, processCpuMs, threadCpuTimes } from "./proc.js";

const N = Number(process.env.N ?? 20_000);
const WARMUP = Number(process.env.WARMUP ?? 60_000);
const ROUNDS = Number(process.env.ROUNDS ?? 2);
const CONCURRENCY = (process.env.CONCURRENCY ?? "20,64").split(",").map(Number);
const CLIS = (process.env.CLIS ?? MQ9_CLI).split(",");
const PROFILE = process.env.PROFILE;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Inside the node: counts `CALL mq9_send` (printed on SIGWINCH) and profiles between two SIGUSR2.
const hook = join(tmpdir(), `mq9-send-profile-hook-${process.pid}.mjs`);
writeFileSync(
  hook,
  `import { Session } from "node:inspector";
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
const pg = createRequire(process.argv[1])("pg");
let sends = 0;
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (q, ...rest) {
  const text = typeof q === "string" ? q : q?.text;
  if (text?.startsWith("CALL mq9_send")) sends++;
  return query.call(this, q, ...rest);
};
import net from "node:net";
const writes = new Map();
const writeGeneric = net.Socket.prototype._writeGeneric;
net.Socket.prototype._writeGeneric = function (writev, ...rest) {
  const to = (writev ? "writev:" : "write:") + this.remotePort;
  writes.set(to, (writes.get(to) ?? 0) + 1);
  return writeGeneric.call(this, writev, ...rest);
};
const reads = new Map();
const push = net.Socket.prototype.push;
net.Socket.prototype.push = function (chunk, ...rest) {
  if (chunk) reads.set("read:" + this.remotePort, (reads.get("read:" + this.remotePort) ?? 0) + 1);
  return push.call(this, chunk, ...rest);
};
// Main-thread GC pauses by kind (minor, major, incremental, weak callbacks): count and ms.
import { PerformanceObserver, constants as perf } from "node:perf_hooks";
const gcKinds = { [perf.NODE_PERFORMANCE_GC_MINOR]: "minor", [perf.NODE_PERFORMANCE_GC_MAJOR]: "major", [perf.NODE_PERFORMANCE_GC_INCREMENTAL]: "incremental", [perf.NODE_PERFORMANCE_GC_WEAKCB]: "weakcb" };
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const kind = "gc-" + (gcKinds[e.detail?.kind] ?? "other");
    writes.set(kind, (writes.get(kind) ?? 0) + 1);
    writes.set(kind + "-us", (writes.get(kind + "-us") ?? 0) + e.duration * 1000);
  }
}).observe({ entryTypes: ["gc"] });
const session = new Session();
session.connect();
let on = false;
process.on("SIGUSR2", () => {
  if (!on) {
    on = true;
    session.post("Profiler.enable", () => session.post("Profiler.setSamplingInterval", { interval: 200 }, () => session.post("Profiler.start")));
  } else {
    on = false;
    session.post("Profiler.stop", (err, r) => {
      writeFileSync(process.env.MQ9_PROFILE_FILE, JSON.stringify(r.profile));
      process.stderr.write("PROFILED\\n");
    });
  }
});
process.on("SIGWINCH", () => process.stderr.write("SENDS " + sends + " " + JSON.stringify(Object.fromEntries([...writes, ...reads])) + "\\n"));
`,
);

const [nats, pg] = await Promise.all([startNatsCluster({ size: 1 }), startPrivatePostgres({ fsync: true })]);
const payload = Buffer.alloc(1024, 1);
const loadavg = () => readFileSync("/proc/loadavg", "utf8").split(" ")[0];
/** µs the node's main thread spent on a CPU (schedstat, finer than /proc's ticks). */
const mainThreadUs = (pid) =>
  Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, "utf8").split(" ")[0]) / 1000;

/** The node's count of `CALL mq9_send` so far, and of its socket writes and reads by peer port. */
async function sendsOf(node) {
  const before = node.output().length;
  process.kill(node.pid, "SIGWINCH");
  for (let i = 0; i < 500; i++) {
    const said = /SENDS (\d+) (.*)\n/.exec(node.output().slice(before));
    if (said) return { batches: Number(said[1]), io: JSON.parse(said[2]) };
    await sleep(10);
  }
  throw new Error("the node did not say how many batches it committed");
}

async function sendAll(client, mailbox, count, inFlight) {
  const pending = new Set();
  for (let i = 0; i < count; i++) {
    const p = client.send(mailbox, payload).then(() => pending.delete(p));
    pending.add(p);
    if (pending.size >= inFlight) await Promise.race(pending);
  }
  await Promise.all(pending);
}

const results = new Map();
let run = 0;
try {
  for (let round = 0; round < ROUNDS; round++) {
    // ABBA: the order alternates, so neither build always runs on a database the other warmed.
    for (const cli of round % 2 === 0 ? CLIS : [...CLIS].reverse()) {
      const profileFile = PROFILE ? join(PROFILE, `r${round}-b${CLIS.indexOf(cli)}`) : "";
      if (PROFILE) mkdirSync(PROFILE, { recursive: true });
      const node = await startMq9Node({
        cli,
        nodeId: "n1",
        nats: nats.urls,
        postgres: pg.url,
        nodeArgs: ["--import", hook, ...(process.env.NODE_ARGS ?? "").split(" ").filter(Boolean)],
        env: { MQ9_PROFILE_FILE: profileFile },
        args: ["--postgres-schema", `p${run++}`, ...MESSAGING_ONLY_ARGS],
      });
      const client = await connect(nats.urls[0], { requestTimeoutMs: 15_000 });
      try {
        await client.createMailbox({ name: "q" });
        await sendAll(client, "q", WARMUP, 64);
        for (const inFlight of CONCURRENCY) {
          const sends0 = await sendsOf(node);
          const cpu0 = processCpuMs(node.pid);
          const main0 = mainThreadUs(node.pid);
          const threads0 = threadCpuTimes(node.pid);
          const t0 = performance.now();
          await sendAll(client, "q", N, inFlight);
          const ms = performance.now() - t0;
          const cpu = processCpuMs(node.pid) - cpu0;
          const main = mainThreadUs(node.pid) - main0;
          // The other threads' CPU by name (V8's GC helpers and compiler, libuv's pool), us per message.
          const others = new Map();
          for (const [tid, t] of threadCpuTimes(node.pid)) {
            if (tid === String(node.pid)) continue;
            const ms = t.ms - (threads0.get(tid)?.ms ?? 0);
            others.set(t.name, (others.get(t.name) ?? 0) + ms);
          }
          const otherThreads = [...others]
            .filter(([, ms]) => ms > 0)
            .map(([name, ms]) => `${name} ${((ms * 1000) / N).toFixed(1)}`);
          const sends1 = await sendsOf(node);
          const batches = sends1.batches - sends0.batches;
          const peer = (port) =>
            port === new URL(pg.url).port
              ? "PostgreSQL"
              : nats.urls.some((u) => u.endsWith(`:${port}`))
                ? "NATS"
                : port;
          const gc = Object.entries(sends1.io)
            .filter(([k]) => k.startsWith("gc-") && !k.endsWith("-us"))
            .map(([k, v]) => {
              const us = sends1.io[`${k}-us`] - (sends0.io[`${k}-us`] ?? 0);
              return `${k.slice(3)} ${v - (sends0.io[k] ?? 0)} (${(us / batches).toFixed(0)} us/batch)`;
            });
          const io = Object.entries(sends1.io)
            .filter(([k]) => !k.startsWith("gc-"))
            .map(([k, v]) => [k, (v - (sends0.io[k] ?? 0)) / batches])
            .filter(([, v]) => v >= 0.05)
            .map(([k, v]) => `${k.split(":")[0]} ${peer(k.split(":")[1])} ${v.toFixed(2)}`);
          let gcPauseUs = 0;
          for (const [k, v] of Object.entries(sends1.io))
            if (k.startsWith("gc-") && k.endsWith("-us")) gcPauseUs += v - (sends0.io[k] ?? 0);
          const row = {
            mainLessGcPerBatchUs: (main - gcPauseUs) / batches,
            cpuPerMsgUs: (cpu * 1000) / N,
            cpuPerBatchUs: (cpu * 1000) / batches,
            mainPerBatchUs: main / batches,
            perBatch: N / batches,
            rate: (N / ms) * 1000,
            load: loadavg(),
          };
          const key = `${cli} @${inFlight}`;
          results.set(key, [...(results.get(key) ?? []), row]);
          console.log(
            `round ${round} ${cli.split("/").slice(-5, -3).join("/")} @${inFlight}: ${row.cpuPerMsgUs.toFixed(1)} us/msg, ${row.cpuPerBatchUs.toFixed(0)} us/batch (main thread ${row.mainPerBatchUs.toFixed(0)}, less GC pauses ${row.mainLessGcPerBatchUs.toFixed(0)}), ${row.perBatch.toFixed(1)} msg/batch, ${row.rate.toFixed(0)} msg/s (load ${row.load})\n    per batch: ${io.join(", ")}\n    main-thread GC pauses: ${gc.join(", ")}\n    other threads, us/msg: ${otherThreads.join(", ")}`,
          );
          if (PROFILE && round === 0) {
            const outputBefore = node.output().length;
            process.kill(node.pid, "SIGUSR2");
            const s0 = (await sendsOf(node)).batches;
            await sendAll(client, "q", N, inFlight);
            const s1 = (await sendsOf(node)).batches;
            process.kill(node.pid, "SIGUSR2");
            while (!node.output().slice(outputBefore).includes("PROFILED")) await sleep(20);
            renameSync(profileFile, `${profileFile}-c${inFlight}-batches${s1 - s0}-n${N}.cpuprofile`);
            console.log(`  profiled: ${profileFile}-c${inFlight}-batches${s1 - s0}-n${N}.cpuprofile`);
          }
        }
      } finally {
        await client.close().catch(() => {});
        await node.stop();
      }
    }
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log("medians:");
  for (const [key, rows] of results)
    console.log(
      `  ${key}: ${median(rows.map((r) => r.cpuPerMsgUs)).toFixed(1)} us/msg, ${median(rows.map((r) => r.cpuPerBatchUs)).toFixed(0)} us/batch (main thread ${median(rows.map((r) => r.mainPerBatchUs)).toFixed(0)}, less GC pauses ${median(rows.map((r) => r.mainLessGcPerBatchUs)).toFixed(0)}), ${median(rows.map((r) => r.perBatch)).toFixed(1)} msg/batch (loads ${rows.map((r) => r.load).join(" ")})`,
    );
} finally {
  await nats.stop?.();
  await pg.stop?.();
}
