// @mq9/client consume() against a fresh broker of this checkout (or BENCH_MQ9_CLI): N messages
// sent, then consumed through the SDK's loop (its batching and ACKs), with the client's and the
// broker's CPU per message. Quicker than a bench run for A/B of the consume loop.
//
//   N=50000 ROUNDS=3 BATCH=100 node bench/consume-loop-probe.js
import { sendWindow, startProbeBroker } from "./probe-broker.js";
import { cpuTimes } from "./proc.js";

const N = Number(process.env.N ?? 50_000);
const BATCH = Number(process.env.BATCH ?? 100);
const { server, client, stop } = await startProbeBroker();
const payload = Buffer.alloc(1024, 1);

async function round() {
  await sendWindow(client, N, payload);
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
  const clientCpu = process.cpuUsage(client0);
  const broker1 = cpuTimes(server.pid);
  const per = (ms) => ((ms * 1000) / consumed).toFixed(1);
  console.log(
    `consume() ${consumed} messages, batch ${BATCH}: ${((consumed / elapsedMs) * 1000).toFixed(0)} msg/s; ` +
      `client CPU µs/msg ${per((clientCpu.user + clientCpu.system) / 1000)}, broker ${per(broker1.allMs - broker0.allMs)}`,
  );
}
for (let r = 0; r < Number(process.env.ROUNDS ?? 3); r++) await round();
await stop();
process.exit(0);
