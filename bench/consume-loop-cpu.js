// The CPU of @mq9/client's consume loop alone, per message: a Consumer over a source that answers
// each FETCH from memory one event-loop turn later and every ACK at once, so neither the broker
// nor the socket nor nats.js is measured, only what the SDK does per message (message objects,
// handler calls, ACK batching, slots). Steadier than consume-loop-probe.js on a shared machine,
// and meant for A/B of the loop with BENCH_CLIENT (see probe-broker.js).
//
//   N=200000 ROUNDS=5 BATCH=100 HANDLER=sync node bench/consume-loop-cpu.js
//
// HANDLER: sync (returns nothing), async (an async function), or iterator (for await).
import path from "node:path";
import { pathToFileURL } from "node:url";

const { Consumer } = await import(
  process.env.BENCH_CLIENT ? pathToFileURL(path.resolve(process.env.BENCH_CLIENT)).href : "@mq9/client"
);

const N = Number(process.env.N ?? 200_000);
const BATCH = Number(process.env.BATCH ?? 100);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const HANDLER = process.env.HANDLER ?? "sync";
const PAYLOAD = 1024;

/** A source holding `count` messages; FETCH takes up to `batch` of them, as a raw FETCH reply decodes. */
function memorySource(count) {
  let next = 1;
  let acks = 0;
  const connection = { connected: true, changed: () => new Promise(() => {}), on: () => () => {} };
  return {
    connection,
    logger: { warn: (line) => console.error(line) },
    get acks() {
      return acks;
    },
    fetchItems(_address, body) {
      const take = Math.min(body.config?.num_msgs ?? BATCH, count - next + 1);
      return new Promise((resolve) =>
        setImmediate(() => {
          // One buffer per reply, as the decoder copies a reply's payloads into one.
          const bytes = new Uint8Array(take * PAYLOAD);
          const items = [];
          for (let i = 0; i < take; i++) {
            items.push({
              msg_id: next++,
              payload_len: PAYLOAD,
              priority: "normal",
              header: null,
              create_time: 1_700_000_000,
              delivery_count: 1,
              payload: "",
              payload_bytes: bytes.subarray(i * PAYLOAD, (i + 1) * PAYLOAD),
            });
          }
          resolve(items);
        }),
      );
    },
    ack() {
      acks++;
      return Promise.resolve();
    },
    nak() {
      return Promise.resolve({ deadLetter: false });
    },
  };
}

async function round() {
  const source = memorySource(N);
  let handled = 0;
  let resolve;
  const done = new Promise((r) => {
    resolve = r;
  });
  const options = { group: "g", deliver: "earliest", batch: BATCH, maxWaitMs: 1000 };
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let consumer;
  if (HANDLER === "iterator") {
    consumer = new Consumer(source, "q", options);
    for await (const _message of consumer) {
      if (++handled === N) break;
    }
  } else {
    const handler =
      HANDLER === "async"
        ? async () => {
            if (++handled === N) resolve();
          }
        : () => {
            if (++handled === N) resolve();
          };
    consumer = new Consumer(source, "q", options, handler);
    await done;
    await consumer.stop();
  }
  const elapsedMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  console.log(
    `consume loop (${HANDLER} handler) ${handled} messages, batch ${BATCH}: ` +
      `${((handled / elapsedMs) * 1000).toFixed(0)} msg/s; CPU µs/msg ${((cpu.user + cpu.system) / handled).toFixed(2)}; ` +
      `ACKs ${source.acks}`,
  );
}

for (let r = 0; r < ROUNDS; r++) await round();
