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
