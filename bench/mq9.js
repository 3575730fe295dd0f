// Our broker, started from the built CLI. Durable SEND = request $mq9.AI.MSG.SEND.<mailbox> (the reply comes
// after the commit to disk); drain = FETCH(100) + one batch ACK for the last msg_id of the batch.
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { connect } from "nats";
import { freePort, makeTempDir, NotMeasured, progress, removeTempDir, sleep, startServer } from "./proc.js";

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const CLI = process.env.BENCH_MQ9_CLI
  ? path.resolve(process.env.BENCH_MQ9_CLI)
  : path.join(REPO_ROOT, "packages", "cli", "dist", "main.js");
const MAILBOX = "bench.q1";
const GROUP = "g";
const REQUEST_OPTS = { timeout: 10000 };

export const id = "mq9";
export const label = "mq9 (ours)";
export const durability = "SEND reply after the commit to disk";

const enc = new TextEncoder();
const json = (value) => enc.encode(JSON.stringify(value));

/** Request/reply with a JSON reply whose `error` field must be "". */
async function call(nc, subject, body) {
  const msg = await nc.request(subject, body, REQUEST_OPTS);
  const reply = msg.json();
  if (reply.error) throw new Error(`${subject}: ${reply.error}`);
  return reply;
}

/** MAILBOX.CREATE, retried for a few seconds while nothing answers yet (port open before handlers are up). */
async function createMailbox(nc) {
  const subject = "$mq9.AI.MAILBOX.CREATE";
  const deadline = Date.now() + 5000;
  for (;;) {
    try {
      return await call(nc, subject, json({ name: MAILBOX }));
    } catch (err) {
      if (err.code !== "503") throw err;
      if (Date.now() > deadline) throw new Error(`no responder for ${subject} (NATS 503)`);
      await sleep(100);
    }
  }
}

async function startBroker(port, dir, extraArgs) {
  return startServer({
    name: "mq9 broker",
    cmd: process.execPath,
    args: [CLI, "serve", "--host", "127.0.0.1", "--port", String(port), "--data", dir, ...extraArgs],
    port,
    cwd: REPO_ROOT,
  });
}

export async function start({ payload, drainBatch }) {
  if (!existsSync(CLI)) {
    throw new NotMeasured(`${path.relative(REPO_ROOT, CLI)} does not exist (the CLI is not built yet)`);
  }
  const port = await freePort();
  const dir = makeTempDir("mq9");
  let server;
  let nc;
  try {
    try {
      server = await startBroker(port, dir, ["--log-level", "warn"]);
    } catch (err) {
      // Tolerate a CLI that does not know --log-level (yet): try once more without it.
      if (!(err instanceof NotMeasured) || !/log.?level/i.test(err.details)) throw err;
      progress("mq9 broker rejected --log-level; retrying without it");
      server = await startBroker(port, dir, []);
    }
    nc = await connect({ servers: `127.0.0.1:${port}`, maxReconnectAttempts: 0 });
    const created = await createMailbox(nc);
    if (created.mail_address !== MAILBOX) {
      throw new Error(`MAILBOX.CREATE returned mail_address ${JSON.stringify(created.mail_address)}`);
    }

    const sendSubject = `$mq9.AI.MSG.SEND.${MAILBOX}`;
    const fetchSubject = `$mq9.AI.MSG.FETCH.${MAILBOX}`;
    const ackSubject = `$mq9.AI.MSG.ACK.${MAILBOX}`;
    const fetchBody = json({
      group_name: GROUP,
      deliver: "earliest",
      config: { num_msgs: drainBatch, max_wait_ms: 0 },
    });

    return {
      output: () => server.output(),
      version: null,
      async send() {
        const reply = await call(nc, sendSubject, payload);
        if (typeof reply.msg_id !== "number")
          throw new Error(`SEND reply without msg_id: ${JSON.stringify(reply)}`);
      },
      async drainOnce() {
        const { messages = [] } = await call(nc, fetchSubject, fetchBody);
        if (messages.length === 0) return 0;
        for (const m of messages) {
          const len = Buffer.from(m.payload, "base64").length; // decoded, as a real consumer would
          if (len !== payload.length) throw new Error(`mq9: got a ${len}-byte payload`);
        }
        const last = messages[messages.length - 1].msg_id;
        await call(nc, ackSubject, json({ group_name: GROUP, mail_address: MAILBOX, msg_id: last }));
        return messages.length;
      },
      async close() {
        await nc.close().catch(() => {});
        await server.stop();
        removeTempDir(dir);
      },
    };
  } catch (err) {
    if (nc) await nc.close().catch(() => {});
    if (server) {
      await server.stop();
      err.details ??= server.output();
    }
    removeTempDir(dir);
    throw err;
  }
}
