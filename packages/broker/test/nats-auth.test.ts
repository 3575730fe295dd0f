import { StringCodec } from "nats";
import { afterEach, describe, expect, test } from "vitest";
import { type Started, startListener } from "./nats-harness.js";

const sc = StringCodec();
let s: Started | undefined;

afterEach(async () => {
  await s?.stop();
  s = undefined;
});

async function roundTrip(started: Started, opts: Parameters<Started["nats"]>[0]): Promise<void> {
  const nc = await started.nats(opts);
  nc.subscribe("auth.echo", { callback: (_e, m) => m.respond(m.data) });
  const reply = await nc.request("auth.echo", sc.encode("ok"));
  expect(sc.decode(reply.data)).toBe("ok");
}

describe("nats listener — token auth", () => {
  test("INFO says auth_required and the right token connects", async () => {
    s = await startListener({ auth: { token: "s3cret" } });
    const raw = await s.raw();
    expect(JSON.parse((await raw.waitFor("\r\n")).split("\r\n")[0].slice(5)).auth_required).toBe(true);
    await roundTrip(s, { token: "s3cret" });
  });

  test("a wrong or missing token gets 'Authorization Violation' and is closed", async () => {
    const started = await startListener({ auth: { token: "s3cret" } });
    s = started;
    await expect(started.nats({ token: "wrong" })).rejects.toMatchObject({ code: "AUTHORIZATION_VIOLATION" });
    await expect(started.nats()).rejects.toMatchObject({ code: "AUTHORIZATION_VIOLATION" });
    const raw = await started.raw();
    raw.send('CONNECT {"auth_token":"nope"}\r\n');
    await raw.waitFor("-ERR 'Authorization Violation'\r\n");
    await raw.waitClosed();
    expect(started.listener.connectionCount).toBe(0);
  });

  test("operations before CONNECT are an authorization violation when auth is on", async () => {
    s = await startListener({ auth: { token: "t" } });
    const raw = await s.raw();
    raw.send("SUB x 1\r\n");
    await raw.waitFor("-ERR 'Authorization Violation'\r\n");
    await raw.waitClosed();
  });
});

describe("nats listener — user/password auth", () => {
  test("the right user and password connect", async () => {
    s = await startListener({ auth: { user: "agent", password: "pa55" } });
    await roundTrip(s, { user: "agent", pass: "pa55" });
  });

  test("a wrong password or unknown user is rejected", async () => {
    const started = await startListener({ auth: { user: "agent", password: "pa55" } });
    s = started;
    await expect(started.nats({ user: "agent", pass: "bad" })).rejects.toMatchObject({
      code: "AUTHORIZATION_VIOLATION",
    });
    await expect(started.nats({ user: "intruder", pass: "pa55" })).rejects.toMatchObject({
      code: "AUTHORIZATION_VIOLATION",
    });
  });

  test("token and user/password may both be configured; either one is accepted", async () => {
    s = await startListener({ auth: { token: "tok", user: "u", password: "p" } });
    await roundTrip(s, { token: "tok" });
    await roundTrip(s, { user: "u", pass: "p" });
  });
});

describe("nats listener — auth timeout", () => {
  test("a connection that never sends CONNECT is closed with 'Authentication Timeout'", async () => {
    s = await startListener({ authTimeoutMs: 150 });
    const raw = await s.raw();
    await raw.waitFor("-ERR 'Authentication Timeout'\r\n");
    await raw.waitClosed();
    expect(s.listener.connectionCount).toBe(0);
  });
});
