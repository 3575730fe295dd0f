import type { NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsNotifier } from "../src/cluster/nats-notifier.js";
import type { Logger } from "../src/logger.js";
import { captureLogger, type Started, sleep, startListener, waitUntil } from "./nats-harness.js";

// Two nodes' notifiers over the embedded listener's plain pub/sub: what each hears of the other.
const LINGER_MS = 50;

describe("wake-up news between cluster nodes", () => {
  let broker: Started;
  const notifiers: NatsNotifier[] = [];

  beforeAll(async () => {
    broker = await startListener();
  });
  afterAll(async () => {
    for (const notifier of notifiers) await notifier.close();
    await broker.stop();
  });

  const node = async (id: string) => {
    const connection = await broker.nats();
    const notifier = new NatsNotifier(connection, id, captureLogger() as unknown as Logger, LINGER_MS);
    notifiers.push(notifier);
    return { connection, notifier };
  };
  /** Messages the connection received so far, after a round trip that lets anything sent before it arrive. */
  const received = async (connection: NatsConnection) => {
    await connection.flush();
    return connection.stats().inMsgs;
  };

  it("a node with no waiting long-poll reads nothing when another node appends", async () => {
    const a = await node("a");
    const b = await node("b");
    const before = await received(b.connection);
    a.notifier.notify("box");
    a.notifier.notify("other");
    await a.connection.flush();
    expect(await received(b.connection)).toBe(before);
    expect(b.notifier.listening).toBe(false);
  });

  it("a watch hears the other node's news once ready, and stops hearing it after the linger", async () => {
    const a = await node("a");
    const b = await node("b");
    const watch = b.notifier.watch("box");
    expect(watch.ready).toBeDefined();
    await watch.ready;
    // No wait beyond `ready`: the subscription is in place at the server.
    a.notifier.notify("box");
    await watch.fired;
    watch.cancel();
    // A second watch within the linger needs no round trip.
    const again = b.notifier.watch("box");
    expect(again.ready).toBeUndefined();
    again.cancel();
    await waitUntil(() => !b.notifier.listening, 2_000, "b to stop listening");
    const before = await received(b.connection);
    a.notifier.notify("box");
    await a.connection.flush();
    expect(await received(b.connection)).toBe(before);
  });

  it("news of one mailbox does not wake another's watch; a node's own SEND wakes its watch", async () => {
    const a = await node("a");
    const b = await node("b");
    const watch = b.notifier.watch("box");
    await watch.ready;
    let woke = false;
    void watch.fired.then(() => {
      woke = true;
    });
    a.notifier.notify("elsewhere");
    await a.connection.flush();
    await b.connection.flush();
    await sleep(20);
    expect(woke).toBe(false);
    b.notifier.notify("box");
    await watch.fired;
    watch.cancel();
  });
});
