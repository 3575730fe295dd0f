import { type NatsConnection, StringCodec } from "nats";
import { afterEach, describe, expect, test } from "vitest";
import { captureLogger, type RawClient, type Started, startListener, waitUntil } from "./nats-harness.js";

const sc = StringCodec();
let s: Started | undefined;

afterEach(async () => {
  await s?.stop();
  s = undefined;
});

/** Proves a nats client still gets full service: subscribe, request, reply. */
async function stillWorks(nc: NatsConnection): Promise<void> {
  const subject = `alive.${Math.random().toString(36).slice(2)}`;
  const sub = nc.subscribe(subject, { max: 1, callback: (_e, m) => m.respond(sc.encode("yes")) });
  const reply = await nc.request(subject, sc.encode("?"), { timeout: 2000 });
  expect(sc.decode(reply.data)).toBe("yes");
  sub.unsubscribe();
}

async function connectedRaw(started: Started, connect = "{}"): Promise<RawClient> {
  const raw = await started.raw();
  raw.send(`CONNECT ${connect}\r\nPING\r\n`);
  await raw.waitFor("PONG\r\n");
  return raw;
}

describe("nats listener — bad input costs only the offending connection", () => {
  test("garbage lines: -ERR 'Unknown Protocol Operation', closed; another client keeps working", async () => {
    const started = await startListener();
    s = started;
    const healthy = await started.nats();
    for (const garbage of [
      "HELLO WORLD\r\n",
      "PUB\r\n",
      "PUB foo bar baz qux 1\r\n",
      "SUB\r\n",
      "MSG a 1 1\r\n",
    ]) {
      const raw = await started.raw();
      raw.send(garbage);
      await raw.waitFor("-ERR 'Unknown Protocol Operation'\r\n");
      await raw.waitClosed();
    }
    await stillWorks(healthy);
    expect(started.listener.connectionCount).toBe(1);
  });

  test("random bytes: the offending client gets -ERR and is closed; another client keeps working", async () => {
    const started = await startListener();
    s = started;
    const healthy = await started.nats();
    let seed = 42;
    const bytes = Buffer.from(
      Array.from({ length: 8192 }, () => {
        seed = (seed * 1103515245 + 12345) >>> 0;
        return seed >>> 24;
      }),
    );
    const raw = await started.raw();
    raw.send(bytes);
    await raw.waitClosed();
    expect(raw.text).toMatch(/-ERR '(Unknown Protocol Operation|Maximum Control Line Exceeded)'\r\n/);
    await stillWorks(healthy);
  });

  test("a payload larger than maxPayload: -ERR 'Maximum Payload Violation' and close", async () => {
    s = await startListener({ maxPayload: 1024 });
    const raw = await connectedRaw(s);
    raw.send("PUB big 1025\r\n");
    await raw.waitFor("-ERR 'Maximum Payload Violation'\r\n");
    await raw.waitClosed();
    const hraw = await connectedRaw(s, '{"headers":true}');
    hraw.send("HPUB big 12 2000\r\n");
    await hraw.waitFor("-ERR 'Maximum Payload Violation'\r\n");
  });

  test("a control line longer than maxControlLine: -ERR 'Maximum Control Line Exceeded', with or without its newline", async () => {
    s = await startListener({ maxControlLine: 256 });
    const unterminated = await connectedRaw(s);
    unterminated.send(`SUB ${"a".repeat(300)}`);
    await unterminated.waitFor("-ERR 'Maximum Control Line Exceeded'\r\n");
    await unterminated.waitClosed();
    const terminated = await connectedRaw(s);
    terminated.send(`SUB ${"b".repeat(300)} 1\r\n`);
    await terminated.waitFor("-ERR 'Maximum Control Line Exceeded'\r\n");
    await terminated.waitClosed();
  });

  test("a payload not followed by CRLF is a protocol error", async () => {
    s = await startListener();
    const raw = await connectedRaw(s);
    raw.send("PUB foo 2\r\nabcd\r\n");
    await raw.waitFor("-ERR 'Unknown Protocol Operation'\r\n");
    await raw.waitClosed();
  });

  test("a client that sends -ERR is disconnected", async () => {
    s = await startListener();
    const raw = await connectedRaw(s);
    raw.send("-ERR 'whatever'\r\n");
    await raw.waitClosed();
  });
});

describe("nats listener — resource limits", () => {
  test("slow consumer: a subscriber that never reads is disconnected; other clients are unaffected", async () => {
    const logger = captureLogger();
    const started = await startListener({ maxPendingBytes: 1024 * 1024, logger });
    s = started;
    const stuck = await connectedRaw(started);
    stuck.send("SUB flood 1\r\nPING\r\n");
    await stuck.waitFor(/PONG\r\n.*PONG\r\n/s);
    stuck.socket.pause();
    const reader = await started.nats();
    let readerGot = 0;
    reader.subscribe("flood", { callback: () => readerGot++ });
    await reader.flush();
    const publisher = await started.nats();
    const chunk = new Uint8Array(64 * 1024);
    let sent = 0;
    // Socket buffers soak up a few MB before the server's own queue grows; keep going until it trips.
    while (started.listener.connectionCount === 3 && sent < 4000) {
      for (let i = 0; i < 50; i++) publisher.publish("flood", chunk);
      sent += 50;
      await publisher.flush();
    }
    expect(started.listener.connectionCount).toBe(2);
    expect(logger.entries.some((e) => e.level === "warn" && e.msg?.includes("slow consumer"))).toBe(true);
    await waitUntil(() => readerGot === sent, 10_000, "the healthy reader to get every message");
    await stillWorks(publisher);
    stuck.socket.resume();
    await stuck.waitClosed(5000);
  });

  test("maxConnections: the connection beyond the limit gets -ERR and is closed", async () => {
    const started = await startListener({ maxConnections: 2 });
    s = started;
    const first = await started.nats();
    await started.nats();
    const refused = await started.raw();
    await refused.waitFor("-ERR 'maximum connections exceeded'\r\n");
    await refused.waitClosed();
    expect(refused.text.startsWith("INFO ")).toBe(true);
    await expect(started.nats()).rejects.toThrow(/maximum connections exceeded/i);
    await first.close();
    await waitUntil(() => started.listener.connectionCount === 1);
    await stillWorks(await started.nats());
  });

  test("stale connection: a client that never answers PING is closed; a live client stays", async () => {
    const started = await startListener({ pingIntervalMs: 40, maxPingsOut: 2 });
    s = started;
    const live = await started.nats();
    const silent = await connectedRaw(started);
    await silent.waitFor("-ERR 'Stale Connection'\r\n", 3000);
    await silent.waitClosed();
    expect(silent.text.match(/PING\r\n/g)).toHaveLength(2);
    await stillWorks(live);
    expect(started.listener.connectionCount).toBe(1);
  });
});

describe("nats listener — disconnects and shutdown", () => {
  test("half-closed socket: queued replies are still sent, then the connection is cleaned up", async () => {
    const started = await startListener();
    s = started;
    const raw = await started.raw();
    raw.send("CONNECT {}\r\nSUB half 1\r\nPUB half 2\r\nhi\r\nPING\r\n");
    raw.socket.end();
    await raw.waitFor("MSG half 1 2\r\nhi\r\nPONG\r\n");
    await raw.waitClosed();
    await waitUntil(() => started.listener.connectionCount === 0);
    expect(started.listener.subscriptionCount).toBe(0);
  });

  test("abrupt disconnects remove the client's subscriptions", async () => {
    const started = await startListener();
    s = started;
    const raws = await Promise.all([0, 1, 2].map(() => connectedRaw(started)));
    for (const raw of raws) raw.send("SUB a.> 1\r\nSUB b q 2\r\nSUB _INBOX.x.* 3\r\n");
    await waitUntil(() => started.listener.subscriptionCount === 9);
    for (const raw of raws) raw.socket.resetAndDestroy();
    await waitUntil(() => started.listener.connectionCount === 0 && started.listener.subscriptionCount === 0);
    // Publishing to what was their interest must not touch the dead connections.
    started.listener.publish("a.b", sc.encode("x"));
    started.listener.publish("b", sc.encode("x"));
  });

  test("a server-originated publish to a subject that would corrupt MSG lines is refused", async () => {
    const started = await startListener();
    s = started;
    for (const bad of ["two words", "line\r\nPING", "a..b", ""]) {
      expect(() => started.listener.publish(bad, sc.encode("x"))).toThrow(TypeError);
    }
  });

  test("close() flushes queued output, closes every connection, refuses new ones and is idempotent", async () => {
    const started = await startListener();
    const raw = await connectedRaw(started);
    raw.send("SUB bye 1\r\nPING\r\n");
    await raw.waitFor(/PONG\r\n.*PONG\r\n/s);
    const nc = await started.nats();
    started.listener.publish("bye", sc.encode("last words"));
    const first = started.listener.close({ drainTimeoutMs: 1000 });
    expect(started.listener.close()).toBe(first);
    await first;
    expect(raw.text).toContain("MSG bye 1 10\r\nlast words\r\n");
    await raw.waitClosed();
    await nc.closed();
    expect(started.listener.connectionCount).toBe(0);
    await expect(started.nats()).rejects.toThrow();
  });
});
