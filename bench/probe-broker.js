// What the quick probes (send-probe, consume-probe, consume-loop-probe) share: a fresh broker of
// this checkout (or BENCH_MQ9_CLI) for messaging only, a client on it, mailbox "q", and a window
// of SENDs. BENCH_CLIENT: the client build to use instead of @mq9/client (a path to a copy of an
// older packages/client/dist/index.js inside this checkout, for A/B of the SDK in one sitting).
import path from "node:path";
import { pathToFileURL } from "node:url";
import { freePort, MESSAGING_ONLY_ARGS, makeTempDir, removeTempDir, startMq9Serve } from "./proc.js";

const { connect } = await import(
  process.env.BENCH_CLIENT ? pathToFileURL(path.resolve(process.env.BENCH_CLIENT)).href : "@mq9/client"
);

/** Starts the broker (with `extraArgs`) on `port`, connects, creates mailbox "q"; `stop()` undoes it all. */
export async function startProbeBroker(extraArgs = []) {
  const port = await freePort();
  const dir = makeTempDir("mq9");
  const server = await startMq9Serve({
    port,
    dir,
    args: [...MESSAGING_ONLY_ARGS, "--http-port", "0", ...extraArgs],
  });
  // The port opens before every handler is in place: the first requests may go unanswered.
  const client = await retried(() => connect(`nats://127.0.0.1:${port}`, { reconnect: false }));
  await retried(() => client.createMailbox({ name: "q" }));
  return {
    server,
    port,
    client,
    async stop() {
      await client.close();
      await server.stop();
      removeTempDir(dir);
    },
  };
}

/** Sends `count` messages to "q" with `inFlight` outstanding at a time. */
export async function sendWindow(client, count, payload, inFlight = 64) {
  const sends = [];
  // KEYED=1: each SEND carries an idempotency key (a header block), as the bench's keyed phase does.
  const keyed = process.env.KEYED ? `k-${Date.now()}-` : undefined;
  for (let i = 0; i < count; i++) {
    sends.push(client.send("q", payload, keyed ? { idempotencyKey: keyed + i } : undefined));
    if (sends.length >= inFlight) await sends.shift();
  }
  await Promise.all(sends);
}

async function retried(attempt) {
  for (let i = 0; ; i++) {
    try {
      return await attempt();
    } catch (err) {
      if (i > 50) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
