import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { createConnection } from "node:net";
import { join } from "node:path";
import { Subjects } from "@mq9/protocol";
import { connect, type Msg, type NatsConnection } from "nats";
import { describe, expect, it } from "vitest";
import { loadServeConfig } from "../src/serve/config.js";
import { runCli, spawnServe, tempDir } from "./cli-harness.js";

const enc = (body: unknown) => new TextEncoder().encode(JSON.stringify(body));
const dec = (msg: Msg) => JSON.parse(new TextDecoder().decode(msg.data));

function writeConfig(config: unknown): string {
  const file = join(tempDir(), "mq9.json");
  writeFileSync(file, JSON.stringify(config));
  return file;
}

const USERS_CONFIG = {
  auth: {
    users: [
      { user: "alice", password: "alice-pw", permissions: "agent" },
      { user: "bob", token: "bob-token", permissions: "all" },
      { user: "ops", token: "ops-token", admin: true },
    ],
  },
  orchestrator: { enabled: false },
  registry: { embedder: "none" },
};

describe("mq9 serve — several users from the config file", () => {
  it("isolates the users' replies and mailboxes, and guards the HTTP routes", async () => {
    const serve = await spawnServe(["--config", writeConfig(USERS_CONFIG), "--data", tempDir()]);
    const conns: NatsConnection[] = [];
    const open = async (creds: { user?: string; pass?: string; token?: string }) => {
      const nc = await connect({ servers: `127.0.0.1:${serve.port}`, reconnect: false, ...creds });
      conns.push(nc);
      return nc;
    };
    try {
      const alice = await open({ user: "alice", pass: "alice-pw" });
      const bob = await open({ token: "bob-token" });
      // Bob's spy has a connection of its own, so that bob's own replies are not among what it sees.
      const spy = await open({ token: "bob-token" });
      const seen: string[] = [];
      for (const subject of [">", "_INBOX.>"]) {
        spy.subscribe(subject, { callback: (_e, msg) => seen.push(msg.subject) });
      }
      await spy.flush();
      const created = dec(await alice.request(Subjects.mailboxCreate, enc({})));
      expect(created.error).toBe("");
      const box = created.mail_address as string;
      expect(box).toMatch(/^[0-9a-v]{26}$/);
      expect(dec(await bob.request(Subjects.send(box), enc("hi"))).error).toBe("");
      expect(dec(await bob.request(Subjects.query(box), enc({}))).error).toMatch(/^permission denied/);
      expect(dec(await alice.request(Subjects.query(box), enc({}))).messages).toHaveLength(1);
      await spy.flush();
      expect(seen).toEqual([]);

      const base = `http://127.0.0.1:${serve.httpPort}`;
      expect((await fetch(`${base}/api/tasks`)).status).toBe(401);
      const basicAlice = `Basic ${Buffer.from("alice:alice-pw").toString("base64")}`;
      const asAlice = await fetch(`${base}/api/tasks`, { headers: { authorization: basicAlice } });
      expect(asAlice.status).toBe(403);
      expect(((await asAlice.json()) as { error: string }).error).toMatch(/not an admin/);
      // The MCP tools act through the process's own internal user: an admin may use them.
      const mcp = await fetch(`${base}/mcp`, {
        method: "POST",
        headers: {
          authorization: "Bearer ops-token",
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: { name: "mq9_create_mailbox", arguments: { name: "via.mcp" } },
        }),
      });
      expect(mcp.status).toBe(200);
      expect(JSON.stringify(await mcp.json())).toContain("via.mcp");
      expect(dec(await bob.request(Subjects.send("via.mcp"), enc("to mcp"))).error).toBe("");
    } finally {
      await Promise.all(conns.map((nc) => nc.close().catch(() => {})));
      serve.child.kill("SIGTERM");
      await serve.exited;
    }
  });

  it("refuses a DNS-rebinding request to /mcp with 403 (the curl of the issue)", async () => {
    const serve = await spawnServe([
      "--data",
      tempDir(),
      "--orchestrator",
      "off",
      "--registry-embedder",
      "none",
    ]);
    try {
      const port = serve.httpPort;
      const out = execFileSync(
        "curl",
        [
          "-s",
          "-w",
          "\\n%{http_code}",
          "-X",
          "POST",
          `127.0.0.1:${port}/mcp`,
          "-H",
          `Host: attacker.example:${port}`,
          "-H",
          `Origin: http://attacker.example:${port}`,
        ],
        { encoding: "utf8" },
      );
      const [body, status] = out.split("\n");
      expect(status).toBe("403");
      expect(JSON.parse(body).error).toMatch(/DNS-rebinding protection/);
    } finally {
      serve.child.kill("SIGTERM");
      await serve.exited;
    }
  });

  it("refuses an empty password at start with a clear error", async () => {
    const file = writeConfig({ auth: { users: [{ user: "alice", password: "" }] } });
    const result = await runCli(["serve", "--config", file, "--data", tempDir()]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/auth\.users\.0\.password: an empty password is refused/);
    const flag = await runCli(["serve", "--user", "alice", "--password", "", "--data", tempDir()]);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toMatch(/auth\.password: an empty password is refused/);
  });

  it("--ping-interval and --ping-max close a client that stopped answering PING", async () => {
    const serve = await spawnServe([
      "--data",
      tempDir(),
      "--ping-interval",
      "0.2",
      "--ping-max",
      "1",
      "--orchestrator",
      "off",
    ]);
    try {
      const received = await new Promise<string>((resolve, reject) => {
        let text = "";
        const socket = createConnection({ host: "127.0.0.1", port: serve.port });
        socket.on("data", (chunk) => {
          text += chunk.toString();
          if (text.startsWith("INFO") && !text.includes("CONNECTED")) {
            text += "CONNECTED";
            socket.write('CONNECT {"verbose":false}\r\n');
          }
        });
        socket.on("close", () => resolve(text));
        socket.on("error", reject);
        setTimeout(() => reject(new Error(`not closed: ${text}`)), 15_000).unref();
      });
      expect(received).toContain("PING\r\n");
      expect(received).toContain("-ERR 'Stale Connection'");
    } finally {
      serve.child.kill("SIGTERM");
      await serve.exited;
    }
  });
});

describe("serve config — users, liveness, HTTP hosts", () => {
  it("reads users, nats-server's allow_responses spelling, ping settings and host lists from env", () => {
    const file = writeConfig({
      auth: {
        users: [{ user: "a", password: "pw", permissions: { publish: ["x.>"], allow_responses: true } }],
        defaultPermissions: "agent",
      },
    });
    const config = loadServeConfig({
      file,
      env: { MQ9_PING_INTERVAL: "45", MQ9_HTTP_ALLOWED_HOSTS: "mq9.internal, localhost" },
      flags: { pingMax: "3" },
    });
    expect(config.server.pingInterval).toBe(45);
    expect(config.server.pingMax).toBe(3);
    expect(config.http.allowedHosts).toEqual(["mq9.internal", "localhost"]);
    expect(config.auth.users?.[0].permissions).toEqual({ publish: ["x.>"], allowResponses: true });
    expect(loadServeConfig({ env: {} }).server.pingInterval).toBe(30);
  });

  it("accepts the configuration examples of docs/security.md", () => {
    const doc = readFileSync(new URL("../../../docs/security.md", import.meta.url), "utf8");
    const blocks = [...doc.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]));
    expect(blocks.length).toBeGreaterThanOrEqual(2);
    for (const block of blocks) {
      const config = "auth" in block ? block : { auth: { users: [block] } };
      expect(() => loadServeConfig({ file: writeConfig(config), env: {} })).not.toThrow();
    }
  });

  it("names the user entry and the problem in an invalid permission list", () => {
    const file = writeConfig({
      auth: { users: [{ user: "a", password: "pw", permissions: { subscribe: ["bad..subject"] } }] },
    });
    expect(() => loadServeConfig({ file, env: {} })).toThrow(
      /auth\.users: users\[0\] \(a\)\.permissions\.subscribe: "bad\.\.subject" is not a valid subject pattern/,
    );
  });
});
