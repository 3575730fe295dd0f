import { request as httpRequest } from "node:http";
import type { FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { startTestBroker, type TestBroker } from "./harness.js";

/** A raw HTTP request: fetch() may not set Host, which is the point here. */
function post(
  port: number,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, path, method: "POST", headers }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk) => {
        body += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end("{}");
  });
}

/** Stand-ins for the apps that `mq9 serve` mounts: reaching them is what the guard prevents. */
const routes = (app: FastifyInstance) => {
  for (const path of ["/mcp", "/a2a/some.agent", "/api/tasks"]) app.post(path, async () => ({ ran: path }));
};

describe("HTTP — DNS-rebinding protection", () => {
  let t: TestBroker | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("a loopback server refuses a foreign Host or Origin with 403 and says why", async () => {
    t = await startTestBroker({ http: { port: 0, routes }, registry: false });
    const port = t.broker.http!.port;
    for (const path of ["/mcp", "/a2a/some.agent", "/api/tasks"]) {
      const rebound = await post(port, path, {
        host: `attacker.example:${port}`,
        origin: `http://attacker.example:${port}`,
        "content-type": "application/json",
      });
      expect(rebound.status, path).toBe(403);
      expect(JSON.parse(rebound.body).error).toMatch(
        /^forbidden: Host 'attacker\.example:\d+' is not an allowed host of this mq9 server \(DNS-rebinding protection\)/,
      );
      const foreignOrigin = await post(port, path, {
        host: `127.0.0.1:${port}`,
        origin: "http://attacker.example",
        "content-type": "application/json",
      });
      expect(foreignOrigin.status, path).toBe(403);
      expect(JSON.parse(foreignOrigin.body).error).toMatch(
        /Origin 'http:\/\/attacker\.example' is not an allowed origin/,
      );
    }
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]) {
      const local = await post(port, "/mcp", { host, "content-type": "application/json" });
      expect(local.status, host).toBe(200);
    }
    const fromLocalPage = await post(port, "/mcp", {
      host: `localhost:${port}`,
      origin: `http://localhost:${port}`,
      "content-type": "application/json",
    });
    expect(fromLocalPage.status).toBe(200);
  });

  it("the allow lists are configurable, and * turns the check off", async () => {
    t = await startTestBroker({
      http: { port: 0, routes, allowedHosts: ["mq9.internal"], allowedOrigins: ["ui.internal"] },
      registry: false,
    });
    const port = t.broker.http!.port;
    const json = { "content-type": "application/json" };
    expect((await post(port, "/mcp", { ...json, host: `mq9.internal:${port}` })).status).toBe(200);
    expect((await post(port, "/mcp", { ...json, host: `127.0.0.1:${port}` })).status).toBe(403);
    expect(
      (await post(port, "/mcp", { ...json, host: "mq9.internal", origin: "https://ui.internal" })).status,
    ).toBe(200);
    expect(
      (await post(port, "/mcp", { ...json, host: "mq9.internal", origin: "https://mq9.internal" })).status,
    ).toBe(403);
    await t.close();
    t = await startTestBroker({ http: { port: 0, routes, allowedHosts: ["*"] }, registry: false });
    const open = t.broker.http!.port;
    expect(
      (await post(open, "/mcp", { ...json, host: "anything.example", origin: "http://anything.example" }))
        .status,
    ).toBe(200);
  });
});
