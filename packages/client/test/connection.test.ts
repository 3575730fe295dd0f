import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NatsListener } from "@mq9/broker/internal";
import { boxName, eventually, sleep, startBroker, type TestBroker } from "@mq9/testkit";
import { connect as natsConnect, nkeys } from "nats";
import { afterEach, describe, expect, it } from "vitest";
import { connect, Mq9Client, Mq9Error } from "../src/index.js";
import { failure } from "./failure.js";
import { TcpProxy } from "./tcp-proxy.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

async function broker(options: Parameters<typeof startBroker>[0] = {}): Promise<TestBroker> {
  const t = await startBroker(options);
  cleanups.push(() => t.close());
  return t;
}

async function proxyTo(port: number): Promise<TcpProxy> {
  const proxy = await TcpProxy.start(port);
  cleanups.push(() => proxy.close());
  return proxy;
}

/** A bare NATS-protocol listener (no mq9 service) with a hand-written responder on `$mq9.AI.>`. */
async function handBroker(reply?: (subject: string) => string | undefined) {
  const listener = new NatsListener({ host: "127.0.0.1", port: 0 });
  const { port } = await listener.listen();
  const responder = await natsConnect({ servers: `127.0.0.1:${port}` });
  if (reply) {
    responder.subscribe("$mq9.AI.>", {
      callback: (_err, msg) => {
        const text = reply(msg.subject);
        if (text !== undefined) msg.respond(new TextEncoder().encode(text));
      },
    });
    await responder.flush();
  }
  cleanups.push(async () => {
    await responder.close();
    await listener.close({ drainTimeoutMs: 0 });
  });
  return `mq9://127.0.0.1:${port}`;
}

describe("connect", () => {
  it("NOT_CONNECTED when nothing listens, saying where it tried", async () => {
    const err = await failure(connect("mq9://127.0.0.1:1"));
    expect(err.code).toBe("NOT_CONNECTED");
    expect(err.message).toContain("mq9://127.0.0.1:1");
  });

  it("accepts mq9://, nats:// and bare host:port for the same broker", async () => {
    const t = await broker();
    for (const url of [t.url, `nats://127.0.0.1:${t.port}`, `127.0.0.1:${t.port}`]) {
      const client = await connect(url);
      expect(await client.createMailbox()).toMatch(/^[0-9a-v]{26}$/);
      await client.close();
    }
  });

  it("wraps a NATS connection opened elsewhere", async () => {
    const t = await broker();
    const nc = await natsConnect({ servers: `127.0.0.1:${t.port}` });
    const client = new Mq9Client(nc, { requestTimeoutMs: 2_000 });
    expect(client.requestTimeoutMs).toBe(2_000);
    expect(client.nats).toBe(nc);
    const box = await client.createMailbox({ name: boxName() });
    expect(await client.send(box, "x")).toBe(0);
    await client.close();
    expect(nc.isClosed()).toBe(true);
  });

  it("token auth from options or from the URL; a wrong token is a non-retryable NOT_CONNECTED", async () => {
    const t = await broker({ auth: { token: "s3cret" } });
    const a = await connect(t.url, { token: "s3cret" });
    const b = await connect(`mq9://s3cret@127.0.0.1:${t.port}`);
    expect(await a.createMailbox({ name: boxName() })).toBeTruthy();
    expect(await b.createMailbox({ name: boxName() })).toBeTruthy();
    await a.close();
    await b.close();
    const err = await failure(connect(t.url, { token: "wrong" }));
    expect(err).toMatchObject({ code: "NOT_CONNECTED", retryable: false });
    expect(err.message).toMatch(/credentials/);
  });

  it("user/password auth", async () => {
    const t = await broker({ auth: { user: "agent", password: "pa55" } });
    const client = await connect(t.url, { user: "agent", password: "pa55" });
    expect(await client.createMailbox({ name: boxName() })).toBeTruthy();
    await client.close();
    expect((await failure(connect(t.url, { user: "agent", password: "nope" }))).code).toBe("NOT_CONNECTED");
  });

  it("NKey auth: the seed signs in as its user; another seed or a public key does not", async () => {
    const pair = nkeys.createUser();
    const seed = new TextDecoder().decode(pair.getSeed());
    const t = await broker({ auth: { users: [{ nkey: pair.getPublicKey(), permissions: "agent" }] } });
    const client = await connect(t.url, { nkeySeed: `${seed}\n` });
    expect(await client.createMailbox({ name: boxName() })).toBeTruthy();
    await client.close();
    const bytes = await connect(t.url, { nkeySeed: pair.getSeed() });
    await bytes.close();
    const stranger = new TextDecoder().decode(nkeys.createUser().getSeed());
    expect(await failure(connect(t.url, { nkeySeed: stranger }))).toMatchObject({
      code: "NOT_CONNECTED",
      retryable: false,
    });
    const wrong = await failure(connect(t.url, { nkeySeed: pair.getPublicKey() }));
    expect(wrong.code).toBe("INVALID_REQUEST");
    expect(wrong.message).toMatch(/not an NKey user seed/);
    // A .creds file carries its own seed: both at once is a mistake, said before connecting.
    const both = await failure(connect(t.url, { nkeySeed: seed, creds: "-----BEGIN NATS USER JWT-----" }));
    expect(both).toMatchObject({ code: "INVALID_REQUEST", retryable: false });
    expect(both.message).toMatch(/either creds or nkeySeed/);
  });

  it("mq9s:// speaks TLS to a broker with a certificate", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mq9-client-tls-"));
    const certFile = join(dir, "c.pem");
    const keyFile = join(dir, "k.pem");
    execFileSync(
      "openssl",
      [
        ...["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost"],
        ...["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        ...["-keyout", keyFile, "-out", certFile, "-days", "1"],
      ],
      { stdio: "ignore" },
    );
    const t = await broker({ tls: { certFile, keyFile } });
    const client = await connect(`mq9s://127.0.0.1:${t.port}`, { tls: { caFile: certFile } });
    const box = await client.createMailbox({ name: boxName() });
    await client.send(box, "secret");
    expect((await client.query(box))[0].text()).toBe("secret");
    await client.close();
    const untrusted = await failure(connect(`mq9s://127.0.0.1:${t.port}`));
    expect(untrusted.code).toBe("NOT_CONNECTED");
  });
});

describe("requests", () => {
  it("share one wildcard reply subscription however many are in flight", async () => {
    const t = await broker();
    const proxy = await proxyTo(t.port);
    const client = await connect(proxy.url);
    cleanups.push(() => client.close());
    const box = await client.createMailbox({ name: boxName() });
    const ids = await Promise.all(Array.from({ length: 64 }, (_, i) => client.send(box, `m${i}`)));
    expect(new Set(ids).size).toBe(64);
    const subs = proxy.sent.split("\r\n").filter((line) => line.startsWith("SUB "));
    expect(subs).toHaveLength(1);
    expect(subs[0]).toMatch(/^SUB _INBOX\.\S+\.\* \d+$/);
  });

  it("TIMEOUT when nothing replies within requestTimeoutMs", async () => {
    const url = await handBroker(() => undefined);
    const client = await connect(url, { requestTimeoutMs: 200 });
    cleanups.push(() => client.close());
    const err = await failure(client.send("some.box", "x"));
    expect(err).toMatchObject({ code: "TIMEOUT", retryable: true });
    expect(err.message).toContain("$mq9.AI.MSG.SEND.some.box");
  });

  it("NOT_CONNECTED when the NATS server has no mq9 broker behind it (no responders)", async () => {
    const url = await handBroker();
    const client = await connect(url);
    cleanups.push(() => client.close());
    const err = await failure(client.createMailbox());
    expect(err.code).toBe("NOT_CONNECTED");
    expect(err.message).toMatch(/no mq9 broker is answering/);
  });

  it("INTERNAL when a reply is not JSON; UNKNOWN_SUBJECT and AGENT_NOT_FOUND from the broker's texts", async () => {
    const url = await handBroker((subject) => {
      if (subject.endsWith("CREATE")) return "<html>";
      if (subject.endsWith("REPORT")) return '{"error":"agent not found"}';
      return `{"error":"unrecognized mq9 subject: ${subject}"}`;
    });
    const client = await connect(url);
    cleanups.push(() => client.close());
    expect((await failure(client.createMailbox())).code).toBe("INTERNAL");
    expect((await failure(client.report({ mailbox: "nobody" }))).code).toBe("AGENT_NOT_FOUND");
    const unknown = await failure(client.query("box"));
    expect(unknown).toMatchObject({
      code: "UNKNOWN_SUBJECT",
      message: "unrecognized mq9 subject: $mq9.AI.MSG.QUERY.box",
    });
  });

  it("error codes travel as data: the broker sends them, and a reply's code wins over its text", async () => {
    const t = await broker();
    const raw = await natsConnect({ servers: `127.0.0.1:${t.port}` });
    cleanups.push(() => raw.close());
    const reply = await raw.request("$mq9.AI.MSG.SEND.no.such.box", new TextEncoder().encode("x"));
    expect(JSON.parse(new TextDecoder().decode(reply.data))).toEqual({
      error: "mailbox no.such.box does not exist",
      code: "MAILBOX_NOT_FOUND",
    });
    const client = await t.client();
    expect((await failure(client.send("no.such.box", "x"))).code).toBe("MAILBOX_NOT_FOUND");
    const box = await client.createMailbox({ name: boxName() });
    expect((await failure(client.createMailbox({ name: box }))).code).toBe("MAILBOX_EXISTS");

    // A broker whose code and text disagree: the code is what the client goes by.
    const url = await handBroker(() => '{"error":"mailbox x does not exist","code":"PERMISSION_DENIED"}');
    const other = await connect(url);
    cleanups.push(() => other.close());
    expect(await failure(other.send("x", "y"))).toMatchObject({
      code: "PERMISSION_DENIED",
      message: "mailbox x does not exist",
    });
  });

  it("fail at once with NOT_CONNECTED when the connection drops, not after their timeout", async () => {
    const t = await broker();
    const proxy = await proxyTo(t.port);
    const client = await connect(proxy.url, { requestTimeoutMs: 30_000 });
    cleanups.push(() => client.close());
    const box = await client.createMailbox({ name: boxName() });
    const polling = client.fetch(box, { group: "g", maxWaitMs: 4_000 });
    await sleep(100);
    proxy.cut();
    expect((await failure(polling)).code).toBe("NOT_CONNECTED");
  });

  it("fail with NOT_CONNECTED while the broker is away, and work again once it is back", async () => {
    const t = await broker();
    const client = await connect(t.url, { reconnectDelayMs: 50 });
    cleanups.push(() => client.close());
    const box = await client.createMailbox({ name: boxName() });
    await t.stop();
    await eventually(() => !client.isConnected);
    const err = await failure(client.send(box, "lost?"));
    expect(err).toMatchObject({ code: "NOT_CONNECTED", retryable: true });
    await t.start();
    await eventually(() => client.isConnected);
    expect(await client.send(box, "back")).toBeGreaterThanOrEqual(0);
    // The send made while away was never published, so only "back" is stored.
    expect((await client.query(box)).map((m) => m.text())).toEqual(["back"]);
  });

  it("fail with a non-retryable NOT_CONNECTED after close()", async () => {
    const t = await broker();
    const client = await connect(t.url);
    await client.close();
    expect(await client.closed()).toBeUndefined();
    expect(client.isConnected).toBe(false);
    expect(await failure(client.createMailbox())).toMatchObject({ code: "NOT_CONNECTED", retryable: false });
    expect(() => client.consume("x")).toThrow(Mq9Error);
  });
});
