// @mq9/client consume() against a fresh broker of this checkout (or BENCH_MQ9_CLI): N messages
// sent, then consumed through the SDK's loop (its batching and ACKs), with the client's and the
// broker's CPU per message. Quicker than a bench run for A/B of the consume loop.
//
//   N=50000 ROUNDS=3 BATCH=100 node bench/consume-loop-probe.js
//
// BENCH_CLIENT picks the client build (see probe-broker.js); CONSUME_PROFILE=dir writes a V8 CPU
// profile of the client over the consume phase of the last round only (not the SENDs before it).
import { mkdirSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import path from "node:path";
import { sendWindow, startProbeBroker } from "./probe-broker.js";
import { cpuTimes } from "./proc.js";

const N = Number(process.env.N ?? 50_000);
const BATCH = Number(process.env.BATCH ?? 100);
const { server, client, stop } = await startProbeBroker();
const payload = Buffer.alloc(1024, 1);

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const PROFILE_DIR = process.env.CONSUME_PROFILE;
const inspector = PROFILE_DIR ? new Session() : undefined;
if (inspector) {
  inspector.connect();
  await inspector.post("Profiler.enable");
}

async function round(last) {
  await sendWindow(client, N, payload);
  if (last && inspector) await inspector.post("Profiler.start");
  const broker0 = cpuTimes(server.pid);
  const client0 = process.cpuUsage();
  const t0 = performance.now();
  let consumed = 0;
  let resolve;
  const done = new Promise((r) => {
    resolve = r;
  });
  const consumer = client.consume(
    "q",
    () => {
      if (++consumed === N) resolve();
    },
    { group: "g", deliver: "earliest", batch: BATCH, member: "probe-1", maxWaitMs: 1000, rawPayloads: true },
  );
  await Promise.race([done, consumer.closed()]);
  const elapsedMs = performance.now() - t0;
  await consumer.stop();
  if (last && inspector) {
    const { profile } = await inspector.post("Profiler.stop");
    mkdirSync(PROFILE_DIR, { recursive: true });
    const file = path.join(PROFILE_DIR, `consume-${process.pid}.cpuprofile`);
    writeFileSync(file, JSON.stringify(profile));
    console.log(`profile of the last round: ${file}`);
  }
  const clientCpu = process.cpuUsage(client0);
  const broker1 = cpuTimes(server.pid);
  const per = (ms) => ((ms * 1000) / consumed).toFixed(1);
  console.log(
    `consume() ${consumed} messages, batch ${BATCH}: ${((consumed / elapsedMs) * 1000).toFixed(0)} msg/s; ` +
      `client CPU µs/msg ${per((clientCpu.user + clientCpu.system) / 1000)}, broker ${per(broker1.allMs - broker0.allMs)}`,
  );
}
for (let r = 0; r < ROUNDS; r++) await round(r === ROUNDS - 1);
await stop();
process.exit(0);
