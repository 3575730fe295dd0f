import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { StringCodec } from "nats";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { type Started, startListener } from "./nats-harness.js";

const sc = StringCodec();
let dir: string;
let certFile: string;
let keyFile: string;
let s: Started | undefined;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "mq9-nats-tls-"));
  certFile = join(dir, "c.pem");
  keyFile = join(dir, "k.pem");
  // The IP SAN lets clients verify the certificate while dialling 127.0.0.1.
  execFileSync(
    "openssl",
    [
      ...["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost"],
      ...["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
      ...["-keyout", keyFile, "-out", certFile, "-days", "1"],
    ],
    { stdio: "ignore" },
  );
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

afterEach(async () => {
  await s?.stop();
  s = undefined;
});

describe("nats listener — TLS", () => {
  test("INFO is plain text and says tls_required; the nats client upgrades and works", async () => {
    s = await startListener({ tls: { certFile, keyFile } });
    const raw = await s.raw();
    const info = JSON.parse((await raw.waitFor("\r\n")).split("\r\n")[0].slice(5));
    expect(info).toMatchObject({ tls_required: true, tls_available: true });

    const nc = await s.nats({ tls: { caFile: certFile } });
    const other = await s.nats({ tls: { caFile: certFile } });
    other.subscribe("secure.echo", { callback: (_e, m) => m.respond(m.data) });
    await other.flush();
    const reply = await nc.request("secure.echo", sc.encode("over tls"));
    expect(sc.decode(reply.data)).toBe("over tls");
  });

  test("a client that does not trust the certificate fails, and one that skips verification connects", async () => {
    const started = await startListener({ tls: { certFile, keyFile } });
    s = started;
    await expect(started.nats({ tls: {} })).rejects.toThrow();
    const nc = await started.nats({ tls: { rejectUnauthorized: false } as never });
    await nc.flush();
  });

  test("a client that keeps talking plain text after INFO is dropped", async () => {
    s = await startListener({ tls: { certFile, keyFile } });
    const raw = await s.raw();
    await raw.waitFor("\r\n");
    raw.send("CONNECT {}\r\nPING\r\n");
    await raw.waitClosed();
    expect(raw.text).not.toContain("PONG");
  });

  test("with caFile, clients must present a certificate signed by that CA", async () => {
    const started = await startListener({ tls: { certFile, keyFile, caFile: certFile } });
    s = started;
    await expect(started.nats({ tls: { caFile: certFile } })).rejects.toThrow();
    const nc = await started.nats({ tls: { caFile: certFile, certFile, keyFile } });
    await nc.flush();
    expect(started.listener.connectionCount).toBe(1);
  });

  test("an unreadable certificate file makes listen() fail with a clear error", async () => {
    await expect(startListener({ tls: { certFile: join(dir, "missing.pem"), keyFile } })).rejects.toThrow(
      /TLS certificate file .*missing\.pem/,
    );
  });
});
