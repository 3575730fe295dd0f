// SEND@1 (or SEND@CONCURRENCY) against a fresh broker of this checkout (or BENCH_MQ9_CLI): the
// client's latency and the broker's CPU per SEND, split by thread and into user and system time.
// Quicker than a bench run for A/B of the send path; not part of `npm run bench`.
//
//   N=20000 ROUNDS=3 node bench/send-probe.js
//   BENCH_MQ9_NODE_ARGS=--cpu-prof  write the broker's profile into the repository root
//   CONCURRENCY=64                   requests in flight (latencies are then per request)
//   KEYED=1                          every SEND with its own idempotency key
//   PRE=100000                       first send this many, 64 in flight, as the bench's SEND@64 does
//                                    before the next round's SEND@1
//   STRACE=file                      count the broker's system calls during the last round
//   RAW=1                            send with a bare NATS-protocol socket instead of @mq9/client
//                                    (no keys, CONCURRENCY 1): the broker's share of the p50
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { sendWindow, startProbeBroker } from "./probe-broker.js";
import { threadCpuTimes } from "./proc.js";
import { rawNatsSender } from "./raw-nats-sender.js";
import { percentile } from "./stats.js";

const N = Number(process.env.N ?? 10_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 1);
const keyPrefix = `probe-${process.pid}-`;
let keyed = 0;
const RAW = process.env.RAW === "1";
if (RAW && (CONCURRENCY !== 1 || process.env.KEYED === "1"))
  throw new Error("RAW=1 sends one at a time, keyless");
const { server, port, client, stop } = await startProbeBroker();
const raw = RAW ? await rawNatsSender(port, "q") : undefined;
const sendOne = () =>
  raw
    ? raw.send(payload)
    : process.env.KEYED === "1"
      ? client.send("q", payload, { idempotencyKey: keyPrefix + keyed++, retry: false })
      : client.send("q", payload);
const payload = Buffer.alloc(1024, 1);

/** CPU ms per thread name, summed over threads of the same name. */
function cpuByThread() {
  const byName = new Map();
  for (const { name, ms } of threadCpuTimes(server.pid).values()) {
    byName.set(name, (byName.get(name) ?? 0) + ms);
  }
  return byName;
}

function userSystemMs() {
  const fields = readFileSync(`/proc/${server.pid}/stat`, "utf8").split(") ")[1].split(" ");
  return { user: Number(fields[11]) * 10, system: Number(fields[12]) * 10 };
}

async function round(last) {
  let tracer;
  if (last && process.env.STRACE) {
    tracer = spawn("strace", ["-c", "-f", "-p", String(server.pid), "-o", process.env.STRACE]);
    await new Promise((r) => setTimeout(r, 1500));
  }
  const before = cpuByThread();
  const times0 = userSystemMs();
  const client0 = process.cpuUsage();
  const latencies = new Float64Array(N);
  const t0 = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < N) {
      const i = next++;
      const start = performance.now();
      await sendOne();
      latencies[i] = performance.now() - start;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const elapsedMs = performance.now() - t0;
  if (tracer) {
    tracer.kill("SIGINT");
    await new Promise((r) => tracer.on("exit", r));
  }
  const clientCpu = process.cpuUsage(client0);
  const after = cpuByThread();
  const times1 = userSystemMs();
  const perSend = (ms) => ((ms * 1000) / N).toFixed(1);
  const threads = [...after]
    .map(([name, ms]) => [name, ms - (before.get(name) ?? 0)])
    .filter(([, ms]) => ms > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([name, ms]) => `${name} ${perSend(ms)}`)
    .join(", ");
  const total = [...after].reduce((sum, [name, ms]) => sum + ms - (before.get(name) ?? 0), 0);
  const sorted = Array.from(latencies).sort((a, b) => a - b);
  console.log(
    `SEND@${CONCURRENCY}${process.env.KEYED === "1" ? " keyed" : ""}${RAW ? " raw" : ""} ${N}: ${((N / elapsedMs) * 1000).toFixed(0)} msg/s, p50 ${percentile(sorted, 50).toFixed(3)} ms, ` +
      `p99 ${percentile(sorted, 99).toFixed(3)} ms; broker CPU µs/SEND ${perSend(total)} ` +
      `(user ${perSend(times1.user - times0.user)}, system ${perSend(times1.system - times0.system)}; ${threads}); ` +
      `client CPU µs/SEND ${perSend((clientCpu.user + clientCpu.system) / 1000)}; ` +
      `load ${readFileSync("/proc/loadavg", "utf8").split(" ")[0]}`,
  );
}
for (let r = 0; r < ROUNDS; r++) {
  if (process.env.PRE) await sendWindow(client, Number(process.env.PRE), payload);
  await round(r === ROUNDS - 1);
}
raw?.close();
await stop();
process.exit(0);
