import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { type RawClient, type Started, startListener } from "./nats-harness.js";

let s: Started;

beforeEach(async () => {
  s = await startListener({ serverName: "test-node", maxPayload: 4096 });
});

afterEach(async () => {
  await s.stop();
});

function infoOf(text: string): Record<string, unknown> {
  const line = text.split("\r\n")[0];
  expect(line.startsWith("INFO ")).toBe(true);
  return JSON.parse(line.slice(5));
}

async function connected(opts: Record<string, unknown> = {}): Promise<RawClient> {
  const raw = await s.raw();
  await raw.waitFor("\r\n");
  raw.send(`CONNECT ${JSON.stringify(opts)}\r\nPING\r\n`);
  await raw.waitFor("PONG\r\n");
  return raw;
}

describe("nats protocol — handshake", () => {
  test("INFO advertises identity, limits, headers support and the client's id and ip", async () => {
    const a = await s.raw();
    const b = await s.raw();
    const infoA = infoOf(await a.waitFor("\r\n"));
    const infoB = infoOf(await b.waitFor("\r\n"));
    expect(infoA).toMatchObject({
      server_name: "test-node",
      version: "2.10.0",
      proto: 1,
      go: "n/a",
      host: "127.0.0.1",
      port: s.port,
      headers: true,
      max_payload: 4096,
      client_ip: "127.0.0.1",
    });
    expect(infoA.server_id).toMatch(/^N[A-Z2-7]{55}$/);
    expect(infoA.auth_required).toBeUndefined();
    expect(infoA.tls_required).toBeUndefined();
    expect(typeof infoA.client_id).toBe("number");
    expect(infoB.client_id).not.toBe(infoA.client_id);
    expect(infoB.server_id).toBe(infoA.server_id);
  });

  test("CONNECT verbose — +OK after CONNECT, SUB, PUB and UNSUB but not after PING", async () => {
    const raw = await s.raw();
    await raw.waitFor("\r\n");
    raw.send('CONNECT {"verbose":true}\r\n');
    await raw.waitFor("+OK\r\n");
    raw.send("SUB foo 1\r\nPUB foo 2\r\nhi\r\nUNSUB 1\r\nPING\r\n");
    const text = await raw.waitFor("PONG\r\n");
    const afterInfo = text.slice(text.indexOf("\r\n") + 2);
    expect(afterInfo).toBe("+OK\r\n+OK\r\n+OK\r\nMSG foo 1 2\r\nhi\r\n+OK\r\nPONG\r\n");
  });

  test("PING is answered with PONG, and operation names are case-insensitive", async () => {
    const raw = await connected();
    raw.send("ping\r\nPiNg\r\nsub foo 7\r\npub foo 3\r\nabc\r\n");
    const text = await raw.waitFor("MSG foo 7 3\r\nabc\r\n");
    expect(text.match(/PONG\r\n/g)).toHaveLength(3);
  });

  test("a client may send operations before CONNECT when auth is off (telnet style)", async () => {
    const raw = await s.raw();
    raw.send("SUB a 1\r\nPUB a 1\r\nx\r\n");
    await raw.waitFor("MSG a 1 1\r\nx\r\n");
  });
});

describe("nats protocol — delivery details", () => {
  test("a PUB and an HPUB split into 1-byte chunks arrive intact", async () => {
    const sub = await connected({ headers: true });
    sub.send("SUB split.* 9\r\nPING\r\n");
    await sub.waitFor(/PONG\r\n.*PONG\r\n/s);
    const pub = await connected({ headers: true });
    const header = "NATS/1.0\r\nX-A: 1\r\n\r\n";
    const wire = Buffer.from(
      `PUB split.a reply.to 12\r\nhello\r\nworld\r\nHPUB split.b ${header.length} ${header.length + 3}\r\n${header}xyz\r\n`,
    );
    for (const byte of wire) {
      pub.send(Buffer.from([byte]));
      await new Promise((resolve) => setImmediate(resolve));
    }
    await sub.waitFor(`HMSG split.b 9 ${header.length} ${header.length + 3}\r\n${header}xyz\r\n`);
    expect(sub.text).toContain("MSG split.a 9 reply.to 12\r\nhello\r\nworld\r\n");
  });

  test("invalid subjects get -ERR 'Invalid Subject' and the connection stays open", async () => {
    const raw = await connected();
    raw.send("SUB foo..bar 1\r\n");
    await raw.waitFor("-ERR 'Invalid Subject'\r\n");
    raw.send("SUB foo.>.bar 2\r\nPUB .foo 1\r\nx\r\nSUB ok 3\r\nPUB ok 2\r\nok\r\n");
    await raw.waitFor("MSG ok 3 2\r\nok\r\n");
    expect(raw.text.match(/-ERR 'Invalid Subject'\r\n/g)).toHaveLength(3);
    expect(raw.closed).toBe(false);
  });

  test("pedantic clients may not publish to wildcard subjects or use partial wildcards", async () => {
    const raw = await connected({ pedantic: true });
    raw.send("PUB foo.* 1\r\nx\r\nSUB foo* 1\r\nPING\r\n");
    await raw.waitFor(/PONG\r\n.*PONG\r\n/s);
    expect(raw.text).toContain("-ERR 'Invalid Publish Subject'\r\n");
    expect(raw.text).toContain("-ERR 'Invalid Subject'\r\n");
    expect(raw.closed).toBe(false);
  });

  test("UNSUB with max counts deliveries already made", async () => {
    const raw = await connected();
    raw.send("SUB m 1\r\nPUB m 1\r\n1\r\nPUB m 1\r\n2\r\nUNSUB 1 3\r\n");
    raw.send("PUB m 1\r\n3\r\nPUB m 1\r\n4\r\nPUB m 1\r\n5\r\nPING\r\n");
    const text = await raw.waitFor(/PONG\r\n.*PONG\r\n/s);
    expect(text.match(/MSG m 1 1\r\n(\d)\r\n/g)?.map((m) => m.at(-3))).toEqual(["1", "2", "3"]);
  });

  test("a message with headers reaches a client that did not enable headers as a plain MSG", async () => {
    const plain = await connected();
    plain.send("SUB h 1\r\nPING\r\n");
    await plain.waitFor(/PONG\r\n.*PONG\r\n/s);
    const pub = await connected({ headers: true });
    const header = "NATS/1.0\r\nK: v\r\n\r\n";
    pub.send(`HPUB h ${header.length} ${header.length + 4}\r\n${header}body\r\n`);
    await plain.waitFor("MSG h 1 4\r\nbody\r\n");
    expect(plain.text).not.toMatch(/^HMSG /m);
  });

  test("a repeated sid keeps the first subscription", async () => {
    const raw = await connected();
    raw.send("SUB one 1\r\nSUB two 1\r\nPUB two 1\r\nx\r\nPUB one 1\r\ny\r\nPING\r\n");
    const text = await raw.waitFor(/PONG\r\n.*PONG\r\n/s);
    expect(text).toContain("MSG one 1 1\r\ny\r\n");
    expect(text).not.toContain("MSG two");
  });
});
