import { NatsListener } from "@mq9/broker/internal";
import { boxName, startBroker } from "@mq9/testkit";
import { type Msg, connect as natsConnect } from "nats";
import { afterEach, describe, expect, it } from "vitest";
import { connect } from "../src/index.js";
import { failure } from "./failure.js";
import { TcpProxy } from "./tcp-proxy.js";

// The SDK's request path over its one reply subscription: framing, order with other publishes,
// timeouts, late replies, a dropped connection, no responders and many requests in flight.

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

/**
 * A bare NATS-protocol listener with a hand-written responder on `$mq9.AI.>`, behind a TCP proxy
 * (to cut the connection and read what the client sent). `respond` decides, per request, what to
 * answer and when (undefined: never).
 */
async function handBroker(respond: (msg: Msg, seen: string[]) => void) {
  const listener = new NatsListener({ host: "127.0.0.1", port: 0 });
  const { port } = await listener.listen();
  const responder = await natsConnect({ servers: `127.0.0.1:${port}` });
  const seen: string[] = [];
  responder.subscribe(">", {
    callback: (_err, msg) => {
      if (!msg.subject.startsWith("_INBOX.")) seen.push(msg.subject);
      if (msg.subject.startsWith("$mq9.AI.")) respond(msg, seen);
    },
  });
  await responder.flush();
  const proxy = await TcpProxy.start(port);
  cleanups.push(async () => {
    proxy.close();
    await responder.close();
    await listener.close({ drainTimeoutMs: 0 });
  });
  return { proxy, seen };
}

const reply = (msg: Msg, text: string) => msg.respond(new TextEncoder().encode(text));

describe("a lone request", () => {
  it("goes out as one PUB with its reply subject and payload, headers as one HPUB", async () => {
    const { proxy } = await handBroker((msg) => reply(msg, '{"msg_id":7}'));
    const client = await connect(proxy.url);
    cleanups.push(() => client.close());
    expect(await client.send("a.box", "hello")).toBe(7);
    expect(proxy.sent).toMatch(/PUB \$mq9\.AI\.MSG\.SEND\.a\.box _INBOX\.\S+ 5\r\nhello\r\n/);
    expect(await client.send("a.box", "urgent", { priority: "urgent" })).toBe(7);
    const block = "NATS/1.0\r\nmq9-priority: urgent\r\n\r\n";
    const line = new RegExp(
      `HPUB \\$mq9\\.AI\\.MSG\\.SEND\\.a\\.box _INBOX\\.\\S+ ${block.length} ${block.length + 6}\r\n`,
    );
    expect(proxy.sent).toMatch(line);
    expect(proxy.sent).toContain(`${block}urgent\r\n`);
  });

  it("leaves after what was published on the connection before it", async () => {
    const { proxy, seen } = await handBroker((msg) => reply(msg, '{"msg_id":1}'));
    const client = await connect(proxy.url);
    cleanups.push(() => client.close());
    // Still in nats.js's queue (written in a microtask) when the SEND is made.
    client.nats.publish("plain.first", new TextEncoder().encode("1"));
    expect(await client.send("a.box", "second")).toBe(1);
    expect(seen).toEqual(["plain.first", "$mq9.AI.MSG.SEND.a.box"]);
  });

  it("times out with TIMEOUT when nothing replies", async () => {
    const { proxy } = await handBroker(() => {});
    const client = await connect(proxy.url, { requestTimeoutMs: 100 });
    cleanups.push(() => client.close());
    expect(await failure(client.send("a.box", "x"))).toMatchObject({ code: "TIMEOUT", retryable: true });
  });

  it("ignores a reply that comes after its timeout; the next request gets its own", async () => {
    let n = 0;
    const { proxy } = await handBroker((msg) => {
      const id = ++n;
      // The first reply comes after the request gave up, while the second request waits.
      if (id === 1) setTimeout(() => reply(msg, '{"msg_id":1}'), 400);
      else setTimeout(() => reply(msg, `{"msg_id":${id}}`), 150);
    });
    const client = await connect(proxy.url, { requestTimeoutMs: 300 });
    cleanups.push(() => client.close());
    expect((await failure(client.send("a.box", "first"))).code).toBe("TIMEOUT");
    // Made before the late reply arrives, answered after it.
    expect(await client.send("a.box", "second")).toBe(2);
  });

  it("fails with NOT_CONNECTED the moment the connection drops, not at its timeout", async () => {
    const { proxy } = await handBroker(() => {});
    // Far longer than the test may take: only the drop can end it in time.
    const client = await connect(proxy.url, { requestTimeoutMs: 600_000, reconnectDelayMs: 50 });
    cleanups.push(() => client.close());
    const sent = client.send("a.box", "lost?");
    await new Promise((resolve) => setTimeout(resolve, 100));
    proxy.cut();
    expect(await failure(sent)).toMatchObject({ code: "NOT_CONNECTED", retryable: true });
  });

  it("gets no responders as NOT_CONNECTED from a NATS server without an mq9 broker", async () => {
    const listener = new NatsListener({ host: "127.0.0.1", port: 0 });
    const { port } = await listener.listen();
    cleanups.push(() => listener.close({ drainTimeoutMs: 0 }));
    const client = await connect(`nats://127.0.0.1:${port}`);
    cleanups.push(() => client.close());
    const err = await failure(client.send("a.box", "x"));
    expect(err.code).toBe("NOT_CONNECTED");
    expect(err.message).toMatch(/no mq9 broker is answering/);
  });
});

describe("requests in flight together", () => {
  it("each get their own reply, whatever order the replies come in", async () => {
    const { proxy } = await handBroker((msg) => {
      const n = Number(new TextDecoder().decode(msg.data));
      // Later requests answered first.
      setTimeout(() => reply(msg, `{"msg_id":${n * 10}}`), 200 - n);
    });
    const client = await connect(proxy.url);
    cleanups.push(() => client.close());
    const ids = await Promise.all(Array.from({ length: 150 }, (_, n) => client.send("a.box", String(n))));
    expect(ids).toEqual(Array.from({ length: 150 }, (_, n) => n * 10));
  });

  it("against a real broker: a lone SEND after a window of them, all stored in order", async () => {
    const t = await startBroker();
    cleanups.push(() => t.close());
    const client = await connect(t.url);
    cleanups.push(() => client.close());
    const box = await client.createMailbox({ name: boxName() });
    const ids = await Promise.all(Array.from({ length: 64 }, (_, i) => client.send(box, `w${i}`)));
    const lone = await client.send(box, "lone", { key: "k" });
    expect(lone).toBeGreaterThan(Math.max(...ids));
    const texts = (await client.query(box)).map((m) => m.text());
    expect(texts).toEqual([...Array.from({ length: 64 }, (_, i) => `w${i}`), "lone"]);
  });
});
