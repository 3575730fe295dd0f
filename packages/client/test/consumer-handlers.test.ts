import { eventually, sleep, until } from "@mq9/testkit";
import { describe, expect, it } from "vitest";
import type { Consumer, Mq9Client } from "../src/index.js";
import { cleanups, leftOver, quiet, setup, setupProxied } from "./consume-fixtures.js";

/** Sends `count` messages "m0".."m<count-1>" one after the other; their msg_ids in order. */
async function sendMany(client: Mq9Client, box: string, count: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < count; i++) ids.push(await client.send(box, `m${i}`));
  return ids;
}

/** The group's messages not ACKed yet (leased or pending), from the broker's view. */
async function unacked(client: Mq9Client, box: string, group: string): Promise<number> {
  return (await client.groupInfo(box, group)).lag;
}

describe("handlers that return without a promise, with a promise, or throw", () => {
  it("a handler returning without a promise runs its whole batch in one turn, ACKed once per batch", async () => {
    const { proxy, client, box } = await setupProxied();
    const ids = await sendMany(client, box, 20);
    const order: string[] = [];
    const handled: number[] = [];
    const consumer = client.consume(
      box,
      (message) => {
        handled.push(message.msgId);
        order.push("handler");
        // Runs only once the batch's handlers all returned: none waits for a promise of the one before.
        queueMicrotask(() => order.push("microtask"));
      },
      { group: "g", deliver: "earliest", batch: 10, leaseMs: 30_000, maxWaitMs: 200 },
    );
    cleanups.push(() => consumer.stop());
    await eventually(() => handled.length === 20);
    await eventually(async () => (await unacked(client, box, "g")) === 0);
    await consumer.stop();
    expect(handled).toEqual(ids);
    expect(order.slice(0, 10)).toEqual(Array(10).fill("handler"));
    expect(order.slice(10, 20)).toEqual(Array(10).fill("microtask"));
    expect(proxy.count(`$mq9.AI.MSG.ACK.${box}`)).toBe(2);
  });

  it("an async handler's message is ACKed only once its promise settles, and holds back the batch's ACK", async () => {
    const { client, box } = await setup();
    const ids = await sendMany(client, box, 3);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const events: string[] = [];
    const consumer = client.consume(
      box,
      (message) => {
        events.push(`start ${message.text()}`);
        if (message.msgId !== ids[0]) return;
        return gate.then(() => {
          events.push(`end ${message.text()}`);
        });
      },
      { group: "g", deliver: "earliest", batch: 3, leaseMs: 30_000, maxWaitMs: 200 },
    );
    cleanups.push(() => consumer.stop());
    await eventually(() => events.length === 1);
    // Concurrency 1: the next handler waits for the first's promise, and nothing is ACKed meanwhile.
    await sleep(200);
    expect(events).toEqual(["start m0"]);
    expect(await unacked(client, box, "g")).toBe(3);
    open();
    await eventually(async () => (await unacked(client, box, "g")) === 0);
    await consumer.stop();
    expect(events).toEqual(["start m0", "end m0", "start m1", "start m2"]);
  });

  it("a handler that throws at once: its message is NAKed, delivered again with its count, the rest ACKed", async () => {
    const { client, box } = await setup();
    const ids = await sendMany(client, box, 3);
    const deliveries: [string, number | undefined][] = [];
    const errors: string[] = [];
    const consumer = client.consume(
      box,
      (message) => {
        deliveries.push([message.text(), message.deliveryCount]);
        if (message.msgId === ids[1] && message.deliveryCount === 1) throw new Error("not this time");
      },
      {
        group: "g",
        deliver: "earliest",
        backoffMs: [20],
        // Far beyond the test: only the NAK can bring the message back this soon.
        leaseMs: 60_000,
        maxWaitMs: 100,
        onError: (error) => errors.push(error.message),
      },
    );
    cleanups.push(() => consumer.stop());
    await eventually(() => deliveries.length === 4);
    await eventually(async () => (await unacked(client, box, "g")) === 0);
    await consumer.stop();
    expect(deliveries).toEqual([
      ["m0", 1],
      ["m1", 1],
      ["m2", 1],
      ["m1", 2],
    ]);
    expect(errors).toEqual(["not this time"]);
  });

  it("sync, async, throwing and rejecting handlers mixed: each message handled once, failures come back", async () => {
    const { client, box } = await setup();
    const ids = await sendMany(client, box, 24);
    const succeeded: number[] = [];
    const failedFirst: number[] = [];
    const kind = (id: number) => ids.indexOf(id) % 4;
    const consumer = client.consume(
      box,
      (message) => {
        const first = message.deliveryCount === 1;
        switch (kind(message.msgId)) {
          case 0:
            succeeded.push(message.msgId);
            return;
          case 1:
            return sleep(1).then(() => void succeeded.push(message.msgId));
          case 2:
            if (first) {
              failedFirst.push(message.msgId);
              throw new Error("sync failure");
            }
            succeeded.push(message.msgId);
            return;
          default:
            return sleep(1).then(() => {
              if (first) {
                failedFirst.push(message.msgId);
                throw new Error("async failure");
              }
              succeeded.push(message.msgId);
            });
        }
      },
      {
        group: "g",
        deliver: "earliest",
        batch: 8,
        concurrency: 3,
        backoffMs: [20],
        leaseMs: 60_000,
        maxWaitMs: 100,
        ...quiet,
      },
    );
    cleanups.push(() => consumer.stop());
    await eventually(() => succeeded.length === 24);
    await eventually(async () => (await unacked(client, box, "g")) === 0);
    await consumer.stop();
    expect([...succeeded].sort((a, b) => a - b)).toEqual(ids);
    expect([...failedFirst].sort((a, b) => a - b)).toEqual(ids.filter((id) => kind(id) >= 2));
  });

  it("stop() from a handler mid-batch: what was handled is ACKed, the rest comes back, none lost", async () => {
    const { client, box } = await setup();
    const ids = await sendMany(client, box, 10);
    const handled: number[] = [];
    const consumer: Consumer = client.consume(
      box,
      (message) => {
        handled.push(message.msgId);
        if (handled.length === 4) void consumer.stop();
      },
      { group: "g", deliver: "earliest", batch: 10, leaseMs: 300, maxWaitMs: 100 },
    );
    await consumer.closed();
    expect(handled).toEqual(ids.slice(0, 4));
    await sleep(400);
    expect(await leftOver(client, box, "g")).toEqual(ids.slice(4));
  });

  it("stop() while async handlers run: finished ones are ACKed, unstarted ones come back, none lost", async () => {
    const { client, box } = await setup();
    const ids = await sendMany(client, box, 10);
    const started: number[] = [];
    const finished: number[] = [];
    const consumer: Consumer = client.consume(
      box,
      async (message) => {
        started.push(message.msgId);
        if (started.length === 5) void consumer.stop();
        await sleep(5);
        finished.push(message.msgId);
      },
      { group: "g", deliver: "earliest", batch: 10, concurrency: 2, leaseMs: 300, maxWaitMs: 100 },
    );
    await consumer.closed();
    // stop() let the running handlers finish.
    expect(finished.sort((a, b) => a - b)).toEqual(started.sort((a, b) => a - b));
    await sleep(400);
    const back = await leftOver(client, box, "g");
    expect([...finished, ...back].sort((a, b) => a - b)).toEqual(ids);
    expect(back.length).toBeGreaterThan(0);
  });

  it("handlers that return without a promise fetch the next batch ahead; stopping gives that batch back at once", async () => {
    const { client, box } = await setup();
    const ids = await sendMany(client, box, 15);
    const handled: number[] = [];
    const consumer: Consumer = client.consume(
      box,
      (message) => {
        handled.push(message.msgId);
        // The first of the second batch: the third was fetched as the second arrived.
        if (handled.length === 6) void consumer.stop();
      },
      { group: "g", deliver: "earliest", batch: 5, leaseMs: 60_000, maxWaitMs: 100 },
    );
    await consumer.closed();
    expect(handled).toEqual(ids.slice(0, 6));
    // Given back without waiting for its lease: delivered once to the stopped consumer already.
    const back = await until("the batch fetched ahead, given back", async () => {
      const messages = await client.fetch(box, { group: "g", batch: 10, maxWaitMs: 100, leaseMs: 60_000 });
      return messages.length > 0 ? messages : undefined;
    });
    expect(back.map((m) => [m.msgId, m.deliveryCount])).toEqual(ids.slice(10).map((id) => [id, 2]));
  });

  it("async handlers do not fetch ahead: no batch is claimed before a handler could start on it", async () => {
    const { client, box } = await setup();
    const ids = await sendMany(client, box, 15);
    const handled: number[] = [];
    const consumer: Consumer = client.consume(
      box,
      async (message) => {
        handled.push(message.msgId);
        if (handled.length === 6) void consumer.stop();
      },
      { group: "g", deliver: "earliest", batch: 5, leaseMs: 60_000, maxWaitMs: 100 },
    );
    await consumer.closed();
    expect(handled).toEqual(ids.slice(0, 6));
    const rest = await client.fetch(box, { group: "g", batch: 10, maxWaitMs: 100, leaseMs: 60_000 });
    expect(rest.map((m) => [m.msgId, m.deliveryCount])).toEqual(ids.slice(10).map((id) => [id, 1]));
  });
});
