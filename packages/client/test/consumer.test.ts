import { boxName, eventually, sleep } from "@mq9/testkit";
import { describe, expect, it } from "vitest";
import { type ConsumedMessage, connect, type Mq9Client, type Mq9Error } from "../src/index.js";
import { cleanups, leftOver, quiet, setup, setupProxied } from "./consume-fixtures.js";
import { TcpProxy } from "./tcp-proxy.js";

describe("consume as an async iterator", () => {
  it("yields messages in priority order and ACKs each when the next is asked for", async () => {
    const { client, box } = await setup();
    await client.send(box, "n");
    await client.send(box, "u", { priority: "urgent" });
    await client.send(box, "c", { priority: "critical" });
    const seen: string[] = [];
    for await (const message of client.consume(box, { group: "g", deliver: "earliest", leaseMs: 300 })) {
      seen.push(message.text());
      if (seen.length === 3) {
        await message.ack();
        break;
      }
    }
    expect(seen).toEqual(["c", "u", "n"]);
    await sleep(400);
    expect(await leftOver(client, box, "g")).toEqual([]);
  });

  it("leaving the loop leaves the current message un-ACKed: it comes back after its lease", async () => {
    const { client, box } = await setup();
    const id = await client.send(box, "job");
    for await (const message of client.consume(box, { group: "g", deliver: "earliest", leaseMs: 300 })) {
      expect(message.msgId).toBe(id);
      break;
    }
    await sleep(400);
    expect(await leftOver(client, box, "g")).toEqual([id]);
  });

  it("a stateless consumer tails new messages once each, without a group", async () => {
    const { client, box } = await setup();
    await client.send(box, "old");
    const consumer = client.consume(box, { maxWaitMs: 300 });
    const seen: string[] = [];
    const reading = (async () => {
      for await (const message of consumer) {
        seen.push(message.text());
        if (seen.length === 3) break;
      }
    })();
    await sleep(100);
    for (const text of ["a", "b", "c"]) await client.send(box, text);
    await reading;
    expect(seen).toEqual(["a", "b", "c"]);
  });
});

describe("consume with a handler", () => {
  it("runs at most `concurrency` handlers at once and ACKs everything", async () => {
    const { client, box } = await setup();
    for (let i = 0; i < 30; i++) await client.send(box, `m${i}`);
    let running = 0;
    let most = 0;
    const handled = new Set<number>();
    const consumer = client.consume(
      box,
      async (message) => {
        running++;
        most = Math.max(most, running);
        await sleep(5 + (message.msgId % 3) * 5);
        handled.add(message.msgId);
        running--;
      },
      { group: "g", deliver: "earliest", concurrency: 4, batch: 10, leaseMs: 5_000 },
    );
    await eventually(() => handled.size === 30);
    await consumer.stop();
    expect(most).toBe(4);
    expect(await leftOver(client, box, "g")).toEqual([]);
  });

  it("FETCHes ask for raw payloads by default, base64 with rawPayloads false; every message arrives whole", async () => {
    const { proxy, client, box } = await setupProxied();
    const sent = Array.from({ length: 25 }, (_, i) =>
      Uint8Array.from({ length: 100 + i }, (_, k) => (k * i) % 256),
    );
    for (const bytes of sent) await client.send(box, bytes);
    const got = new Map<number, Uint8Array>();
    const consumer = client.consume(
      box,
      (message) => {
        got.set(message.msgId, message.payload);
      },
      { group: "g", deliver: "earliest", batch: 10 },
    );
    await eventually(() => got.size === 25);
    await consumer.stop();
    expect([...got.values()]).toEqual(sent);
    expect(proxy.sent.split('"payload_format":"raw"').length - 1).toBeGreaterThanOrEqual(3);
    expect(
      proxy.sent.split('"payload_format":"raw","header_format":"raw"').length - 1,
    ).toBeGreaterThanOrEqual(3);
    expect(await leftOver(client, box, "g")).toEqual([]);
    // rawPayloads false: the usual base64 form, asked for without the field.
    const rawAsks = proxy.sent.split('"payload_format":"raw"').length;
    got.clear();
    const plain = client.consume(
      box,
      (message) => {
        got.set(message.msgId, message.payload);
      },
      { group: "g2", deliver: "earliest", batch: 10, rawPayloads: false },
    );
    await eventually(() => got.size === 25);
    await plain.stop();
    const hex = (payloads: Iterable<Uint8Array>) => [...payloads].map((p) => Buffer.from(p).toString("hex"));
    expect(hex(got.values())).toEqual(hex(sent));
    expect(proxy.sent.split('"payload_format":"raw"').length).toBe(rawAsks);
    expect(proxy.sent.split('"header_format"').length).toBe(rawAsks);
  });

  it("a long-poll FETCH still waiting at stop() gives back what it claims: the next consumer gets it at once", async () => {
    const { client, box } = await setup();
    const first = client.consume(box, () => {}, { group: "g", deliver: "earliest", maxWaitMs: 3000 });
    // Its long-poll FETCH is waiting at the broker when it stops.
    await sleep(300);
    await first.stop();
    await client.send(box, "late");
    const got: ConsumedMessage[] = [];
    // The default lease is 30 s: without the give-back this consumer would wait that long.
    const second = client.consume(box, (m) => void got.push(m), { group: "g", maxWaitMs: 500 });
    await eventually(() => got.length === 1, 5000);
    await second.stop();
    expect(got[0].text()).toBe("late");
    // Its first delivery went to the stopped consumer's FETCH.
    expect(got[0].deliveryCount).toBe(2);
  });

  it("starts every handler of a fetched batch before any of them goes on past an await", async () => {
    const { client, box } = await setup();
    for (let i = 0; i < 8; i++) await client.send(box, `m${i}`);
    let started = 0;
    const startedWhenResumed: number[] = [];
    const consumer = client.consume(
      box,
      async () => {
        started++;
        await Promise.resolve();
        // What handlers publish here leaves in one socket write only if the batch started together.
        startedWhenResumed.push(started);
      },
      { group: "g", deliver: "earliest", concurrency: 8, batch: 8, leaseMs: 5_000 },
    );
    await eventually(() => startedWhenResumed.length === 8);
    await consumer.stop();
    expect(startedWhenResumed).toEqual(Array(8).fill(8));
  });

  it("does not ACK a message whose handler failed; it comes back after its lease and is retried", async () => {
    const { client, box } = await setup();
    const id = await client.send(box, "flaky");
    const attempts: number[] = [];
    const errors: string[] = [];
    const consumer = client.consume(
      box,
      (message) => {
        attempts.push(message.msgId);
        if (attempts.length === 1) throw new Error("first try fails");
      },
      {
        group: "g",
        deliver: "earliest",
        leaseMs: 300,
        maxWaitMs: 200,
        onError: (e) => errors.push(e.message),
      },
    );
    await eventually(() => attempts.length === 2);
    await consumer.stop();
    expect(attempts).toEqual([id, id]);
    expect(errors).toEqual(["first try fails"]);
    expect(await leftOver(client, box, "g")).toEqual([]);
  });

  it("a failed message holds back the ACK of later ones in its batch; they are not handled twice", async () => {
    const { client, box } = await setup();
    const ids: number[] = [];
    for (const text of ["ok1", "bad", "ok2"]) ids.push(await client.send(box, text));
    const calls: string[] = [];
    let failures = 0;
    const consumer = client.consume(
      box,
      (message) => {
        calls.push(message.text());
        if (message.text() === "bad" && failures++ === 0) throw new Error("bad once");
      },
      { group: "g", deliver: "earliest", leaseMs: 400, maxWaitMs: 200, ...quiet },
    );
    await eventually(() => calls.length === 4);
    await sleep(600);
    await consumer.stop();
    expect(calls).toEqual(["ok1", "bad", "ok2", "bad"]);
    expect(await leftOver(client, box, "g")).toEqual([]);
  });

  it("stop() waits for running handlers and sends their ACKs", async () => {
    const { client, box } = await setup();
    await client.send(box, "slow");
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let started = false;
    let finished = false;
    const consumer = client.consume(
      box,
      async () => {
        started = true;
        await gate;
        finished = true;
      },
      { group: "g", deliver: "earliest", leaseMs: 300 },
    );
    await eventually(() => started);
    let stopped = false;
    const stopping = consumer.stop().then(() => {
      stopped = true;
    });
    await sleep(100);
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(finished).toBe(true);
    expect(await consumer.closed()).toBeUndefined();
    await sleep(400);
    expect(await leftOver(client, box, "g")).toEqual([]);
  });

  it("with autoAck off, only message.ack() acknowledges", async () => {
    const { client, box } = await setup();
    const a = await client.send(box, "a");
    const b = await client.send(box, "b");
    const seen = new Set<number>();
    let acked = false;
    const consumer = client.consume(
      box,
      async (message: ConsumedMessage) => {
        seen.add(message.msgId);
        if (message.msgId === a) {
          await message.ack();
          acked = true;
        }
      },
      { group: "g", deliver: "earliest", autoAck: false, leaseMs: 300, batch: 1 },
    );
    // Wait for the handler to have met both, however slow the machine.
    await eventually(() => acked && seen.has(b));
    await consumer.stop();
    await sleep(400);
    expect(await leftOver(client, box, "g")).toEqual([b]);
  });

  it("with fetches: 2, two FETCHes are in flight at once and every message is handled once", async () => {
    const { proxy, client, box } = await setupProxied();
    const handled: number[] = [];
    const consumer = client.consume(box, (message) => void handled.push(message.msgId), {
      group: "g",
      batch: 5,
      concurrency: 20,
      fetches: 2,
      maxWaitMs: 1_000,
      leaseMs: 5_000,
    });
    // Both loops wait in a long-poll on the empty mailbox.
    await eventually(() => proxy.count(`$mq9.AI.MSG.FETCH.${box}`) === 2);
    const sent: number[] = [];
    for (let i = 0; i < 60; i++) sent.push(await client.send(box, `m${i}`));
    await eventually(() => handled.length >= 60);
    await consumer.stop();
    expect([...handled].sort((a, b) => a - b)).toEqual(sent);
    expect(await leftOver(client, box, "g")).toEqual([]);
  });

  it("fetches above 1 without a group is refused, and so is a count that is not a whole number", async () => {
    const { client, box } = await setup();
    expect(() => client.consume(box, () => {}, { fetches: 2 })).toThrow(/needs a group and a handler/);
    expect(() => client.consume(box, { group: "g", fetches: 2 })).toThrow(/needs a group and a handler/);
    expect(() => client.consume(box, () => {}, { group: "g", fetches: 0 })).toThrow(
      /fetches must be a positive/,
    );
  });

  it("long-polls: an idle consumer sends a FETCH per wait, not a busy loop", async () => {
    const { proxy, client, box } = await setupProxied();
    const consumer = client.consume(box, () => {}, { group: "g", maxWaitMs: 1_000 });
    await sleep(1_500);
    await consumer.stop();
    expect(proxy.count(`$mq9.AI.MSG.FETCH.${box}`)).toBeLessThanOrEqual(3);
  });
});

describe("consume under connection loss", () => {
  it("survives killed connections: reconnects, loses nothing, handles nothing twice", async () => {
    const { t, client: producer, box } = await setup();
    const proxy = await TcpProxy.start(t.port);
    cleanups.push(() => proxy.close());
    const sent: number[] = [];
    for (let i = 0; i < 300; i++) sent.push(await producer.send(box, `m${i}`));
    // A cut during the reconnect handshake stalls nats.js for up to its connect timeout.
    const client = await connect(proxy.url, { reconnectDelayMs: 20, connectTimeoutMs: 1_000 });
    cleanups.push(() => client.close());
    const handled: number[] = [];
    const consumer = client.consume(
      box,
      async (message) => {
        // Slow enough (300 x 5 ms over 3 handlers) that the cuts below land mid-stream.
        await sleep(5);
        handled.push(message.msgId);
      },
      {
        group: "g",
        deliver: "earliest",
        batch: 5,
        concurrency: 3,
        leaseMs: 1_500,
        maxWaitMs: 300,
        retry: { initialDelayMs: 10, maxDelayMs: 500 },
        ...quiet,
      },
    );
    // Cut while handlers run and ACKs are in flight, again and again (at least three times).
    // Each cut waits for the client to be back: a cut between connections would cut nothing.
    for (let cut = 0; cut < 8 && (cut < 3 || handled.length < sent.length); cut++) {
      await eventually(() => proxy.connects > cut, 10_000);
      await sleep(40);
      proxy.cut();
    }
    await eventually(() => new Set(handled).size === sent.length, 20_000).catch(async (err) => {
      const ended = await Promise.race([consumer.closed(), sleep(10).then(() => "still running")]);
      const missing = sent.filter((id) => !handled.includes(id));
      throw new Error(
        `${err.message}: ${missing.length} not handled (${missing.slice(0, 5)}…); consumer ${ended}`,
      );
    });
    await sleep(1_700);
    await consumer.stop();
    // It really was cut and came back: one CONNECT per connection through the proxy.
    expect(proxy.connects).toBeGreaterThanOrEqual(4);
    expect(handled.length).toBe(sent.length);
    expect([...handled].sort((a, b) => a - b)).toEqual(sent);
    expect(await leftOver(producer, box, "g")).toEqual([]);
  });

  it("keeps going across a broker restart", async () => {
    const { t, client: producer, box } = await setup();
    const client = await connect(t.url, { reconnectDelayMs: 50 });
    cleanups.push(() => client.close());
    const handled: string[] = [];
    const consumer = client.consume(box, (m) => void handled.push(m.text()), {
      group: "g",
      deliver: "earliest",
      maxWaitMs: 300,
      retry: { initialDelayMs: 20, maxDelayMs: 200 },
      ...quiet,
    });
    await producer.send(box, "before");
    await eventually(() => handled.length === 1);
    await t.stop();
    await sleep(200);
    await t.start();
    const again = await t.client();
    await again.send(box, "after");
    await eventually(() => handled.length === 2);
    await consumer.stop();
    expect(handled).toEqual(["before", "after"]);
  });

  it("gives up after its retries when the broker stays away, and says why", async () => {
    const { t, box } = await setup();
    const client = await connect(t.url, { reconnectDelayMs: 50 });
    cleanups.push(() => client.close());
    const consumer = client.consume(box, () => {}, {
      group: "g",
      maxWaitMs: 200,
      retry: { attempts: 3, initialDelayMs: 10, maxDelayMs: 20 },
      ...quiet,
    });
    await t.stop();
    const err = (await consumer.closed()) as Mq9Error;
    expect(err.code).toBe("NOT_CONNECTED");
    await t.start();
  });

  it("stops with MAILBOX_NOT_FOUND when the mailbox does not exist", async () => {
    const { client } = await setup();
    const consumer = client.consume(boxName("gone"), () => {}, { group: "g", ...quiet });
    expect(((await consumer.closed()) as Mq9Error).code).toBe("MAILBOX_NOT_FOUND");
  });
});

describe("client.close", () => {
  it("stops consumers first, letting their handlers finish", async () => {
    const { t } = await setup();
    const client = await connect(t.url);
    const box = await client.createMailbox({ name: boxName() });
    await client.send(box, "x");
    let finished = false;
    client.consume(
      box,
      async () => {
        await sleep(200);
        finished = true;
      },
      { group: "g", deliver: "earliest" },
    );
    await sleep(100);
    await client.close();
    expect(finished).toBe(true);
  });
});

describe("poison messages in the consume loop", () => {
  it("a throwing handler's message is NAKed with the error, retried, and after maxDeliver lands in dead letters", async () => {
    const { client, box } = await setup();
    for (const body of ["ok 1", "poison", "ok 2"]) await client.send(box, body);
    const attempts: (number | undefined)[] = [];
    const handled: string[] = [];
    const consumer = client.consume(
      box,
      (message) => {
        if (message.text() === "poison") {
          attempts.push(message.deliveryCount);
          throw new Error("cannot parse the job");
        }
        handled.push(message.text());
      },
      {
        group: "g",
        deliver: "earliest",
        maxDeliver: 3,
        backoffMs: [50],
        leaseMs: 60_000,
        maxWaitMs: 100,
        ...quiet,
      },
    );
    cleanups.push(() => consumer.stop());
    let dlq: Awaited<ReturnType<Mq9Client["fetch"]>> = [];
    await eventually(async () => {
      dlq = await client.fetch(`${box}.dlq`, { deliver: "earliest", maxWaitMs: 0 }).catch(() => []);
      return dlq.length > 0;
    });
    await consumer.stop();
    // Its last long-poll FETCH may still wait on the broker for up to maxWaitMs.
    await sleep(200);
    // Each try came back after the backoff, not after the 60 s lease.
    expect(attempts).toEqual([1, 2, 3]);
    expect(handled.sort()).toEqual(["ok 1", "ok 2"]);
    expect(dlq.map((m) => m.text())).toEqual(["poison"]);
    expect(dlq[0].headers).toMatchObject({
      "mq9-dlq-mailbox": box,
      "mq9-dlq-group": "g",
      "mq9-dlq-delivery-count": "3",
      "mq9-dlq-reason": "cannot parse the job",
    });
    // The good ones were ACKed around the poison one (a NAKed message stands out of its batch).
    expect(await leftOver(client, box, "g")).toEqual([]);
    // The dead letters can be sent back and consumed like any mailbox's messages.
    expect(await client.retryDeadLetters(`${box}.dlq`)).toBe(1);
    const back = await client.fetch(box, { group: "g", maxWaitMs: 0 });
    expect(back.map((m) => [m.text(), m.deliveryCount])).toEqual([["poison", 1]]);
  });

  it("message.nak() gives a message back at once or terminally, from an async iterator too", async () => {
    const { client, box } = await setup();
    await client.send(box, "again");
    await client.send(box, "dead");
    const seen: string[] = [];
    for await (const message of client.consume(box, {
      group: "g",
      deliver: "earliest",
      leaseMs: 60_000,
      maxWaitMs: 100,
    })) {
      seen.push(`${message.text()}#${message.deliveryCount}`);
      if (message.text() === "dead")
        expect(await message.nak({ terminal: true, reason: "bad" })).toEqual({ deadLetter: true });
      else if (message.deliveryCount === 1) expect(await message.nak()).toEqual({ deadLetter: false });
      if (seen.length === 3) break;
    }
    expect(seen).toEqual(["again#1", "dead#1", "again#2"]);
  });

  it("nakOnError false keeps the old behaviour: the message waits out its lease", async () => {
    const { client, box } = await setup();
    await client.send(box, "slow");
    let calls = 0;
    const consumer = client.consume(
      box,
      () => {
        calls++;
        throw new Error("no");
      },
      { group: "g", deliver: "earliest", nakOnError: false, leaseMs: 60_000, maxWaitMs: 100, ...quiet },
    );
    cleanups.push(() => consumer.stop());
    await sleep(600);
    await consumer.stop();
    expect(calls).toBe(1);
  });
});
