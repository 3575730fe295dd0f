// Our broker, started from the built CLI, measured through our client SDK (@mq9/client), as agents use it.
// Durable SEND = client.send() (the reply comes once the message is durable: written to the broker's message log); drain = client.fetch() of 100 +
// one batch-aware ACK of the last msg_id of the batch.
import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import { connect } from "@mq9/client";
import { startOtlpSink } from "./otlp-sink.js";
import {
  freePort,
  MESSAGING_ONLY_ARGS,
  MQ9_CLI,
  makeTempDir,
  NotMeasured,
  progress,
  removeTempDir,
  sleep,
  startMq9Serve,
} from "./proc.js";

const MAILBOX = "bench.q1";
const GROUP = "g";
const REQUEST_TIMEOUT_MS = 10000;

export const id = "mq9";
export const label = "mq9 (ours)";
export const durability = "SEND reply after the write to its message log (survives kill -9)";

/** MAILBOX.CREATE, retried for a few seconds while nothing answers yet (port open before handlers are up). */
async function createMailbox(client) {
  const deadline = Date.now() + 5000;
  for (;;) {
    try {
      return await client.createMailbox({ name: MAILBOX });
    } catch (err) {
      if (err.code !== "NOT_CONNECTED" && err.code !== "TIMEOUT") throw err;
      if (Date.now() > deadline) throw new Error(`MAILBOX.CREATE: ${err.message}`);
      await sleep(100);
    }
  }
}

function startBroker(port, dir, extraArgs) {
  return startMq9Serve({ port, dir, args: extraArgs });
}

/**
 * Users with the agent profile (bench/mq9-permissions.js): every PUB and SUB of the bench client is
 * checked against its permissions, and replies are routed to the requester only.
 */
const PERMISSIONS_CONFIG = {
  auth: {
    users: [
      { user: "bench", password: "bench-pw", permissions: "agent" },
      { user: "other", password: "other-pw", permissions: "agent" },
    ],
  },
};

export function start(cfg) {
  return startWith(cfg, { permissions: false });
}

/** Starts our broker; with `permissions`, users are configured and the client is one of them. */
export async function startWith({ payload, drainBatch }, { permissions, otlp = false }) {
  if (!existsSync(MQ9_CLI)) {
    throw new NotMeasured(`${path.relative(REPO_ROOT, MQ9_CLI)} does not exist (the CLI is not built yet)`);
  }
  const port = await freePort();
  const dir = makeTempDir("mq9");
  let server;
  let client;
  let sink;
  try {
    try {
      // Messaging only: the registry's embedder and the orchestrator would only add their start-up
      // work to the measurement; the HTTP port is a free one so a running broker does not collide.
      const configArgs = [];
      if (permissions) {
        const file = path.join(dir, "mq9-users.json");
        writeFileSync(file, JSON.stringify(PERMISSIONS_CONFIG));
        configArgs.push("--config", file);
      }
      if (otlp) {
        sink = await startOtlpSink();
        configArgs.push("--otlp-endpoint", sink.url);
      }
      server = await startBroker(port, dir, [...configArgs, ...MESSAGING_ONLY_ARGS, "--http-port", "0"]);
    } catch (err) {
      // Tolerate a CLI that does not know --log-level (yet): try once more without it.
      if (!(err instanceof NotMeasured) || !/log.?level/i.test(err.details)) throw err;
      progress("mq9 broker rejected --log-level; retrying without it");
      server = await startBroker(port, dir, []);
    }
    client = await connect(`nats://127.0.0.1:${port}`, {
      reconnect: false,
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      ...(permissions ? { user: "bench", password: "bench-pw" } : {}),
    });
    const created = await createMailbox(client);
    if (created !== MAILBOX) {
      throw new Error(`MAILBOX.CREATE returned mail_address ${JSON.stringify(created)}`);
    }
    // A named member, and the delivery counts every group FETCH carries: what a consumer pays for
    // poison-message handling and inspection.
    // The drains ask for what @mq9/client asks by default: raw payloads (an mq9 extension);
    // BENCH_MQ9_RAW=0 asks for base64 in the JSON instead, as the other SDKs do.
    const rawPayloads = process.env.BENCH_MQ9_RAW !== "0";
    const fetchOptions = (batch) => ({
      group: GROUP,
      deliver: "earliest",
      batch,
      maxWaitMs: 0,
      member: "bench-1",
      rawPayloads,
    });
    // Like JetStream's m.ack(), the ACK is not waited for before the next FETCH: it travels
    // ahead of that FETCH on the same connection. Its reply is checked one batch later.
    let pendingAck = Promise.resolve();
    // Idempotency keys unique per SEND, as a client that retries safely sends them.
    const keyPrefix = `bench-${process.pid}-${Date.now().toString(36)}-`;
    let keyed = 0;

    return {
      output: () => server.output(),
      version: null,
      pid: server.pid,
      async send() {
        const msgId = await client.send(MAILBOX, payload);
        if (typeof msgId !== "number") throw new Error(`SEND resolved without a msg_id: ${msgId}`);
      },
      /** SEND with an idempotency key (mq9-idempotency-key): the broker remembers it for its dedup window. */
      async sendKeyed() {
        const msgId = await client.send(MAILBOX, payload, {
          idempotencyKey: keyPrefix + keyed++,
          retry: false,
        });
        if (typeof msgId !== "number") throw new Error(`keyed SEND resolved without a msg_id: ${msgId}`);
      },
      async drainOnce(batch = drainBatch) {
        const messages = await client.fetch(MAILBOX, fetchOptions(batch));
        await pendingAck;
        if (messages.length === 0) return 0;
        for (const m of messages) {
          const len = m.payload.length; // decoded, as a real consumer would
          if (len !== payload.length) throw new Error(`mq9: got a ${len}-byte payload`);
          if (m.deliveryCount !== 1)
            throw new Error(`mq9: delivery_count ${m.deliveryCount} on a first delivery`);
        }
        pendingAck = client.ack(MAILBOX, GROUP, messages[messages.length - 1].msgId);
        return messages.length;
      },
      /** `count` messages through the SDK's consume() loop (its batching and ACKs), then stopped. */
      async consume(count) {
        await pendingAck;
        let consumed = 0;
        let failure;
        let resolve;
        const done = new Promise((r) => {
          resolve = r;
        });
        const consumer = client.consume(
          MAILBOX,
          (m) => {
            if (m.payload.length !== payload.length)
              failure ??= new Error(`mq9: got a ${m.payload.length}-byte payload`);
            if (++consumed === count) resolve();
          },
          {
            group: GROUP,
            batch: drainBatch,
            member: "bench-1",
            maxWaitMs: 1000,
            rawPayloads,
            onError: (err) => (failure ??= err),
          },
        );
        await Promise.race([done, consumer.closed()]);
        await consumer.stop();
        if (failure) throw failure;
        return consumed;
      },
      async close() {
        // A drain stopped at its phase cap leaves its last ACK in flight: closing fails it.
        pendingAck.catch(() => {});
        await client.close().catch(() => {});
        await server.stop();
        if (sink) {
          progress(`OTLP sink: ${sink.counts.requests} exports, ${(sink.counts.bytes / 1e6).toFixed(1)} MB`);
          await sink.close();
        }
        removeTempDir(dir);
      },
    };
  } catch (err) {
    if (client) await client.close().catch(() => {});
    if (server) {
      await server.stop();
      err.details ??= server.output();
    }
    await sink?.close();
    removeTempDir(dir);
    throw err;
  }
}
