// FETCH(BATCH)+ACK against a fresh broker of this checkout (or BENCH_MQ9_CLI), as the bench's
// drains do, and the broker's CPU per message: all threads, its main thread, user and system.
// Quicker than a bench run for A/B of the consume path; not part of `npm run bench`.
//
//   N=10000 ROUNDS=3 BATCH=1 node bench/consume-probe.js
//   PRE=150000     first send and drain this many (FETCH(100)), as the bench does before FETCH(1)
//   KEYED=1        every SEND with an idempotency key, so every drained message has a header block
//   CACHE_BYTES=0  the broker's --message-cache-bytes: 0 reads every message back from the log, as
//                  a drain of a backlog larger than the cache mostly does
//   GAP_MS=2000    idle this long before and after the drain of each round, so a --cpu-prof
//                  profile of the broker shows the drains apart (see bench/profile-phases.js)
//   STRACE=file    count the broker's system calls during the last round (strace -c -f)
//   PERF=file      record the broker with perf during the last round (add
//                  BENCH_MQ9_NODE_ARGS=--perf-basic-prof for JavaScript frames)
//   HEAP=1         also print the bytes the broker's heap allocated per message during the drain
//                  (preloads bench/heap-meter.cjs into the broker)

import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { sendWindow, startProbeBroker } from "./probe-broker.js";
import { cpuTimes, makeTempDir, threadCpuTimes } from "./proc.js";

const N = Number(process.env.N ?? 5000);
if (process.env.HEAP) {
  const meter = path.join(path.dirname(fileURLToPath(import.meta.url)), "heap-meter.cjs");
  process.env.BENCH_MQ9_NODE_ARGS = `${process.env.BENCH_MQ9_NODE_ARGS ?? ""} --require ${meter}`;
  process.env.HEAP_METER_FILE = path.join(makeTempDir("heap-meter"), "marks");
}
/** The broker's heap and external bytes allocated since the previous call (HEAP=1). */
async function heapMark(pid) {
  const before = readMarks().length;
  process.kill(pid, "SIGUSR2");
  while (readMarks().length === before) await new Promise((r) => setTimeout(r, 5));
  const [, heap, , external, , gcs, , gcUs, , kinds] = readMarks().at(-1).split(" ");
  return { heap: Number(heap), external: Number(external), gcs: Number(gcs), gcUs: Number(gcUs), kinds };
}
function readMarks() {
  try {
    return readFileSync(process.env.HEAP_METER_FILE, "utf8").split("\n").filter(Boolean);
  } catch {
    return [];
  }
}
const { server, client, stop } = await startProbeBroker(
  process.env.CACHE_BYTES === undefined ? [] : ["--message-cache-bytes", process.env.CACHE_BYTES],
);
const payload = Buffer.alloc(1024, 1);
const fetchOptions = {
  group: "g",
  deliver: "earliest",
  batch: Number(process.env.BATCH ?? 1),
  maxWaitMs: 0,
  member: "bench-1",
  rawPayloads: true,
};
async function round() {
  await sendWindow(client, N, payload);
  if (process.env.GAP_MS) await new Promise((r) => setTimeout(r, Number(process.env.GAP_MS)));
  let pendingAck = Promise.resolve();
  let tracer;
  if (process.env.PERF) {
    const { spawn } = await import("node:child_process");
    tracer = spawn("perf", ["record", "-F", "2000", "-g", "-p", String(server.pid), "-o", process.env.PERF], {
      stdio: "ignore",
    });
    await new Promise((r) => setTimeout(r, 1500));
  }
  if (process.env.STRACE) {
    const { spawn } = await import("node:child_process");
    tracer = spawn("strace", ["-c", "-f", "-p", String(server.pid), "-o", process.env.STRACE]);
    await new Promise((r) => setTimeout(r, 1500));
  }
  if (process.env.HEAP) await heapMark(server.pid);
  const us = () => {
    const f = readFileSync(`/proc/${server.pid}/stat`, "utf8").split(") ")[1].split(" ");
    return [Number(f[11]), Number(f[12])];
  };
  const u0 = us();
  const c0 = cpuTimes(server.pid);
  const threads0 = threadCpuTimes(server.pid);
  const client0 = process.cpuUsage();
  const t0 = performance.now();
  let got = 0;
  for (;;) {
    const ms = await client.fetch("q", fetchOptions);
    await pendingAck;
    if (ms.length === 0) break;
    got += ms.length;
    pendingAck = client.ack("q", "g", ms[ms.length - 1].msgId);
  }
  await pendingAck;
  if (tracer) {
    tracer.kill("SIGINT");
    await new Promise((r) => tracer.on("exit", r));
  }
  const elapsedMs = performance.now() - t0;
  const clientCpu = process.cpuUsage(client0);
  const heap = process.env.HEAP ? await heapMark(server.pid) : undefined;
  const c1 = cpuTimes(server.pid);
  const u1 = us();
  const threads1 = threadCpuTimes(server.pid);
  if (process.env.GAP_MS) await new Promise((r) => setTimeout(r, Number(process.env.GAP_MS)));
  const perMessage = (ms) => ((ms * 1000) / got).toFixed(1);
  console.log(
    `FETCH(${fetchOptions.batch})+ACK ${got} messages: ${((got / elapsedMs) * 1000).toFixed(0)} msg/s; ` +
      `broker CPU µs/msg ${perMessage(c1.allMs - c0.allMs)} (main thread ${perMessage(c1.mainMs - c0.mainMs)}; ` +
      `user ${perMessage((u1[0] - u0[0]) * 10)}, system ${perMessage((u1[1] - u0[1]) * 10)}); ` +
      `client CPU µs/msg ${perMessage((clientCpu.user + clientCpu.system) / 1000)} ` +
      `(load ${readFileSync("/proc/loadavg", "utf8").split(" ")[0]})`,
  );
  if (heap)
    console.log(
      `  broker allocated per message: heap ${(heap.heap / got).toFixed(0)} B, external ${(heap.external / got).toFixed(0)} B; ` +
        `${heap.gcs} GCs (${heap.kinds}), their time ${((heap.gcUs ?? 0) / got).toFixed(2)} µs/msg`,
    );
  // Threads other than the main one that used CPU during the drain (row worker, GC, libuv).
  const others = [];
  for (const [tid, t] of threads1 ?? []) {
    const used = t.ms - (threads0?.get(tid)?.ms ?? 0);
    if (tid !== String(server.pid) && used > 0) others.push(`${t.name}:${tid} ${perMessage(used)}`);
  }
  if (others.length > 0) console.log(`  other threads µs/msg: ${others.join(", ")}`);
}
if (process.env.PRE) {
  await sendWindow(client, Number(process.env.PRE), payload);
  for (;;) {
    const ms = await client.fetch("q", { ...fetchOptions, batch: 100 });
    if (ms.length === 0) break;
    await client.ack("q", "g", ms[ms.length - 1].msgId);
  }
  console.log("pre-drained", process.env.PRE);
}
for (let r = 0; r < Number(process.env.ROUNDS ?? 3); r++) await round();
await stop();
process.exit(0);
