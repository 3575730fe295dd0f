// The machine's floor for a SEND@1 round trip right now: a bare Node server in its own process
// doing a SEND's system calls (read 1 KiB, append it to a file with writeSync, write a 72-byte
// reply) and a bare Node client, one request at a time. Latency on this VM moves with how busy
// its cores are (an idle vCPU is slow to wake), so read SEND@1 p50s beside this figure taken in
// the same sitting, not beside a figure from another hour. Not part of `npm run bench`.
//
//   N=20000 ROUNDS=3 node bench/round-trip-floor.js
import { fork } from "node:child_process";
import { closeSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { percentile } from "./stats.js";

const REQUEST_BYTES = 1024;
const REPLY = Buffer.alloc(72, 0x61);

if (process.argv[2] === "--server") {
  const file = process.argv[3];
  const fd = openSync(file, "a");
  const server = net.createServer({ noDelay: true }, (socket) => {
    let pending = 0;
    socket.on("data", (chunk) => {
      writeSync(fd, chunk);
      pending += chunk.length;
      while (pending >= REQUEST_BYTES) {
        pending -= REQUEST_BYTES;
        socket.write(REPLY);
      }
    });
  });
  server.listen(0, "127.0.0.1", () => process.send(server.address().port));
  process.on("disconnect", () => {
    closeSync(fd);
    process.exit(0);
  });
} else {
  const N = Number(process.env.N ?? 10_000);
  const ROUNDS = Number(process.env.ROUNDS ?? 3);
  const file = path.join(os.tmpdir(), `mq9-bench-floor-${process.pid}.log`);
  const child = fork(fileURLToPath(import.meta.url), ["--server", file]);
  const port = await new Promise((resolve) => child.once("message", resolve));
  const socket = net.connect({ port, host: "127.0.0.1", noDelay: true });
  await new Promise((resolve) => socket.once("connect", resolve));
  let received = 0;
  let wake;
  socket.on("data", (chunk) => {
    received += chunk.length;
    if (received >= REPLY.length) {
      received -= REPLY.length;
      wake();
    }
  });
  const request = Buffer.alloc(REQUEST_BYTES, 1);
  const roundTrip = () =>
    new Promise((resolve) => {
      wake = resolve;
      socket.write(request);
    });
  const serverCpuMs = () => {
    const text = readFileSync(`/proc/${child.pid}/stat`, "utf8");
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  };
  for (let r = 0; r < ROUNDS; r++) {
    const latencies = new Float64Array(N);
    const server0 = serverCpuMs();
    const client0 = process.cpuUsage();
    for (let i = 0; i < N; i++) {
      const start = performance.now();
      await roundTrip();
      latencies[i] = performance.now() - start;
    }
    const client = process.cpuUsage(client0);
    const sorted = latencies.sort();
    console.log(
      `bare Node round trip x${N}: p50 ${percentile(sorted, 50).toFixed(3)} ms, p99 ${percentile(sorted, 99).toFixed(3)} ms; ` +
        `server CPU µs/request ${(((serverCpuMs() - server0) * 1000) / N).toFixed(1)}, ` +
        `client ${((client.user + client.system) / N).toFixed(1)}; load ${readFileSync("/proc/loadavg", "utf8").split(" ")[0]}`,
    );
  }
  socket.destroy();
  child.disconnect();
  await new Promise((resolve) => child.once("exit", resolve));
  rmSync(file, { force: true });
}
