// Peer: nats-server with JetStream, file storage. Durable send = js.publish() awaited (publish with ack);
// drain = durable pull consumer with explicit ack, fetch(100) + m.ack() per message.
import { AckPolicy, connect, DeliverPolicy, StorageType } from "nats";
import {
  binaryVersion,
  findBinary,
  freePort,
  makeTempDir,
  NotMeasured,
  removeTempDir,
  startServer,
} from "./proc.js";

const STREAM = "BENCH";
const SUBJECT = "bench.q1";
const DURABLE = "g";

export const id = "jetstream";
export const label = "NATS JetStream";
export const durability = "PubAck after the write to the file store; fsync is periodic, not per message";

export async function start({ payload, drainBatch }) {
  const bin = findBinary("nats-server", "BENCH_NATS_SERVER", [
    "/usr/sbin/nats-server",
    "/usr/local/bin/nats-server",
  ]);
  if (!bin) throw new NotMeasured("nats-server binary not found (set BENCH_NATS_SERVER)");
  const port = await freePort();
  const dir = makeTempDir("jetstream");
  let server;
  let nc;
  try {
    server = await startServer({
      name: "nats-server",
      cmd: bin,
      args: ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", dir],
      port,
    });
    nc = await connect({ servers: `127.0.0.1:${port}`, maxReconnectAttempts: 0 });
    const jsm = await nc.jetstreamManager();
    await jsm.streams.add({ name: STREAM, subjects: [SUBJECT], storage: StorageType.File, num_replicas: 1 });
    await jsm.consumers.add(STREAM, {
      durable_name: DURABLE,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
    });
    const js = nc.jetstream();
    const consumer = await js.consumers.get(STREAM, DURABLE);
    let remaining = 0;

    return {
      output: () => server.output(),
      pid: server.pid,
      version: binaryVersion(bin),
      async send() {
        await js.publish(SUBJECT, payload);
      },
      async prepareDrain() {
        // A fetch that cannot be filled waits for `expires` (>= 1 s), so size the last batch exactly.
        remaining = (await consumer.info()).num_pending;
      },
      async drainOnce(batch = drainBatch) {
        if (remaining === 0) {
          await nc.flush(); // the acks have reached the server
          return 0;
        }
        const iter = await consumer.fetch({ max_messages: Math.min(batch, remaining), expires: 5000 });
        let n = 0;
        for await (const m of iter) {
          if (m.data.length !== payload.length)
            throw new Error(`JetStream: got a ${m.data.length}-byte payload`);
          m.ack();
          n++;
        }
        remaining -= n;
        return n;
      },
      /** `count` messages through nats.js's consume() (its pull batches of `drainBatch`), each acked. */
      async consume(count) {
        const messages = await consumer.consume({ max_messages: drainBatch, expires: 1000 });
        let consumed = 0;
        for await (const m of messages) {
          if (m.data.length !== payload.length)
            throw new Error(`JetStream: got a ${m.data.length}-byte payload`);
          m.ack();
          if (++consumed === count) break;
        }
        // Leaving the loop stops the pull (close() would wait for a pull that is not coming).
        messages.stop();
        await nc.flush();
        return consumed;
      },
      async verify() {
        const info = await consumer.info();
        return info.num_pending === 0 && info.num_ack_pending === 0
          ? null
          : `after drain: num_pending=${info.num_pending}, num_ack_pending=${info.num_ack_pending}`;
      },
      async close() {
        await nc.close().catch(() => {});
        await server.stop();
        removeTempDir(dir);
      },
    };
  } catch (err) {
    if (nc) await nc.close().catch(() => {});
    if (server) await server.stop();
    removeTempDir(dir);
    throw err;
  }
}
