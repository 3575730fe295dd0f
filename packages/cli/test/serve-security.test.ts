import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Subjects } from "@mq9/protocol";
import { connect } from "nats";
import { describe, expect, it } from "vitest";
import { spawnServe, tempDir } from "./cli-harness.js";

const createBox = new TextEncoder().encode('{"name":"secure.box"}');

describe("mq9 serve — auth and TLS", () => {
  it("--token: clients with the token are served, clients without it are refused", async () => {
    const serve = await spawnServe(["--data", tempDir(), "--token", "s3cret"]);
    try {
      await expect(connect({ servers: `127.0.0.1:${serve.port}`, reconnect: false })).rejects.toThrow(
        /Authorization/i,
      );
      await expect(
        connect({ servers: `127.0.0.1:${serve.port}`, token: "wrong", reconnect: false }),
      ).rejects.toThrow(/Authorization/i);
      const nc = await connect({ servers: `127.0.0.1:${serve.port}`, token: "s3cret" });
      const reply = JSON.parse(
        new TextDecoder().decode((await nc.request(Subjects.mailboxCreate, createBox)).data),
      );
      expect(reply.error).toBe("");
      await nc.close();
    } finally {
      serve.child.kill("SIGTERM");
      await serve.exited;
    }
  });

  it("--auth-throttle-max-wait-ms: a second wrong token waits its turn by default, and is refused unchecked past the wait", async () => {
    const throttledRefusals = async (httpPort: number) => {
      const text = await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
      const line = text.split("\n").find((l) => /^mq9_auth_throttled_total\{.*outcome="refused"/.test(l));
      return Number(line?.split(" ").pop() ?? 0);
    };
    const wrongTwice = async (port: number) => {
      for (const token of ["wrong-1", "wrong-2"]) {
        await expect(connect({ servers: `127.0.0.1:${port}`, token, reconnect: false })).rejects.toThrow(
          /Authorization/i,
        );
      }
    };
    const paced = await spawnServe(["--data", tempDir(), "--token", "s3cret"]);
    const strict = await spawnServe([
      "--data",
      tempDir(),
      "--token",
      "s3cret",
      "--auth-throttle-max-wait-ms",
      "100",
    ]);
    try {
      await wrongTwice(paced.port);
      expect(await throttledRefusals(paced.httpPort)).toBe(0);
      await wrongTwice(strict.port);
      expect(await throttledRefusals(strict.httpPort)).toBe(1);
    } finally {
      for (const serve of [paced, strict]) serve.child.kill("SIGTERM");
      await Promise.all([paced.exited, strict.exited]);
    }
  });

  it("--token also guards the HTTP routes (MCP, A2A, orchestrator API), not /healthz", async () => {
    const serve = await spawnServe(["--data", tempDir(), "--token", "s3cret"]);
    try {
      const base = `http://127.0.0.1:${serve.httpPort}`;
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      for (const path of ["/api/tasks", "/mcp", "/a2a/anyone/.well-known/agent-card.json"]) {
        expect((await fetch(`${base}${path}`)).status, path).toBe(401);
      }
      const withToken = await fetch(`${base}/api/tasks`, { headers: { authorization: "Bearer s3cret" } });
      expect(withToken.status).not.toBe(401);
    } finally {
      serve.child.kill("SIGTERM");
      await serve.exited;
    }
  });

  it("user and password from MQ9_USER / MQ9_PASSWORD", async () => {
    const serve = await spawnServe(["--data", tempDir()], { MQ9_USER: "agent", MQ9_PASSWORD: "pw" });
    try {
      await expect(
        connect({ servers: `127.0.0.1:${serve.port}`, user: "agent", pass: "nope", reconnect: false }),
      ).rejects.toThrow(/Authorization/i);
      const nc = await connect({ servers: `127.0.0.1:${serve.port}`, user: "agent", pass: "pw" });
      expect(nc.isClosed()).toBe(false);
      await nc.close();
    } finally {
      serve.child.kill("SIGTERM");
      await serve.exited;
    }
  });

  it("--tls-cert/--tls-key: a tls:// client verifies the certificate and is served", async () => {
    const dir = tempDir();
    const key = join(dir, "key.pem");
    const cert = join(dir, "cert.pem");
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=localhost",
        "-addext",
        "subjectAltName=DNS:localhost,IP:127.0.0.1",
        "-keyout",
        key,
        "-out",
        cert,
        "-days",
        "1",
      ],
      { stdio: "ignore" },
    );
    const serve = await spawnServe(["--data", tempDir(), "--tls-cert", cert, "--tls-key", key]);
    try {
      const nc = await connect({
        servers: `tls://127.0.0.1:${serve.port}`,
        tls: { ca: readFileSync(cert, "utf8") },
      });
      const reply = JSON.parse(
        new TextDecoder().decode((await nc.request(Subjects.mailboxCreate, createBox)).data),
      );
      expect(reply).toEqual({ error: "", mail_address: "secure.box" });
      await nc.close();
    } finally {
      serve.child.kill("SIGTERM");
      await serve.exited;
    }
  });
});
