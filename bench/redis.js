// Peer: Redis Streams with AOF (appendfsync everysec). Durable send = XADD; drain = XREADGROUP COUNT 100
// followed by one XACK with the batch's ids.
import Redis from "ioredis";
import {
  binaryVersion,
  findBinary,
  freePort,
  makeTempDir,
  NotMeasured,
  removeTempDir,
  startServer,
} from "./proc.js";

const KEY = "bench.q1";
const GROUP = "g";

export const id = "redis";
export const label = "Redis Streams";
export const durability =
  "XADD reply before fsync (AOF appendfsync everysec: at most ~1 s of writes at risk)";

export async function start({ payload, drainBatch }) {
  const bin = findBinary("redis-server", "BENCH_REDIS_SERVER", [
    "/usr/bin/redis-server",
    "/usr/local/bin/redis-server",
  ]);
  if (!bin) throw new NotMeasured("redis-server binary not found (set BENCH_REDIS_SERVER)");
  const port = await freePort();
  const dir = makeTempDir("redis");
  let server;
  let client;
  try {
    server = await startServer({
      name: "redis-server",
      cmd: bin,
      args: [
        "--port",
        String(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "yes",
        "--appendfsync",
        "everysec",
        "--dir",
        dir,
      ],
      port,
    });
    client = new Redis({
      host: "127.0.0.1",
      port,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    await client.connect();
    await client.xgroup("CREATE", KEY, GROUP, "0", "MKSTREAM");

    return {
      output: () => server.output(),
      pid: server.pid,
      version: binaryVersion(bin)?.replace(/^Redis server v=(\S+).*/, "redis-server v$1") ?? null,
      async send() {
        await client.xadd(KEY, "*", "d", payload);
      },
      async drainOnce(batch = drainBatch) {
        return readAndAck(["COUNT", batch]);
      },
      /** A consumer loop as Redis users write one: XREADGROUP BLOCK of a batch, one XACK of it. */
      async consume(count) {
        let consumed = 0;
        while (consumed < count) {
          const n = await readAndAck(["COUNT", drainBatch, "BLOCK", 1000]);
          if (n === 0) throw new Error(`Redis: consume stopped after ${consumed} of ${count}`);
          consumed += n;
        }
        return consumed;
      },
      async verify() {
        const [pending] = await client.xpending(KEY, GROUP);
        return pending === 0 ? null : `after drain: ${pending} entries still pending`;
      },
      async close() {
        await client.quit().catch(() => client.disconnect());
        await server.stop();
        removeTempDir(dir);
      },
    };

    /** One XREADGROUP (with `options`) and one XACK of what it read; returns how many. */
    async function readAndAck(options) {
      const res = await client.xreadgroupBuffer("GROUP", GROUP, "c", ...options, "STREAMS", KEY, ">");
      const entries = res?.[0]?.[1] ?? [];
      if (entries.length === 0) return 0;
      const ids = new Array(entries.length);
      for (let i = 0; i < entries.length; i++) {
        const [entryId, fields] = entries[i];
        if (fields[1].length !== payload.length)
          throw new Error(`Redis: got a ${fields[1].length}-byte payload`);
        ids[i] = entryId;
      }
      await client.xack(KEY, GROUP, ...ids);
      return entries.length;
    }
  } catch (err) {
    client?.disconnect();
    if (server) await server.stop();
    removeTempDir(dir);
    throw err;
  }
}
