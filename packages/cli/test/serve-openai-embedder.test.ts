// `mq9 serve --registry-embedder openai` as a user runs it, with the key in MQ9_EMBEDDER_API_KEY,
// against a local server that refuses the key: the broker serves on with full-text discovery, says
// why, and the key shows nowhere (its log, its errors, /healthz, the DISCOVER reply).
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Subjects } from "@mq9/protocol";
import { mq9Request } from "@mq9/testkit";
import { connect } from "nats";
import { expect, it } from "vitest";
import { runCli, spawnServe, tempDir } from "./cli-harness.js";

const KEY = "sk-serve-test-9876543210SECRET";

it("mq9 serve with a refused embedder key: full-text discovery, the reason said, the key shown nowhere", async () => {
  const seen: (string | undefined)[] = [];
  const stub = createServer((req, res) => {
    seen.push(req.headers.authorization);
    req.resume();
    res.writeHead(401, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message: `Incorrect API key provided: ${KEY}` } }));
  });
  await new Promise<void>((resolve) => stub.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(stub.address() as AddressInfo).port}/v1`;
  const serve = await spawnServe(
    ["--data", tempDir(), "--registry-embedder", "openai", "--registry-embedder-url", url],
    { MQ9_EMBEDDER_API_KEY: KEY, MQ9_REGISTRY_EMBEDDER_MODEL: "text-embedding-3-small" },
  );
  const nc = await connect({ servers: `127.0.0.1:${serve.port}` });
  try {
    const registered = await mq9Request(nc, Subjects.agentRegister, {
      name: "translator",
      version: "1.0.0",
      mailbox: "agent.translator",
      description: "Translates documents",
      skills: [{ id: "t", name: "translate", description: "Translate text between languages" }],
    });
    expect(registered.error).toBe("");
    const reply = await mq9Request<{ warning?: string; agents: { name: string }[] }>(
      nc,
      Subjects.agentDiscover,
      {
        semantic: "translate this into Spanish",
      },
    );
    expect(reply.error).toBe("");
    expect(reply.agents.map((a) => a.name)).toEqual(["translator"]);
    expect(reply.warning).toMatch(
      /semantic search is unavailable \(the API key was refused by the embedding server/,
    );
    const health = await (await fetch(`http://127.0.0.1:${serve.httpPort}/healthz`)).text();
    serve.child.kill("SIGTERM");
    expect(await serve.exited).toBe(0);
    const everything = [serve.stdout(), serve.stderr(), health, JSON.stringify(reply)].join("\n");
    expect(everything).toMatch(
      /embedder openai:http:\/\/127\.0\.0\.1:\d+\/v1:text-embedding-3-small:native \(a configured API key\)/,
    );
    expect(everything).toMatch(/the API key was refused/);
    expect(everything).not.toContain(KEY);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((header) => header === `Bearer ${KEY}`)).toBe(true);
  } finally {
    await nc.close();
    serve.child.kill("SIGKILL");
    stub.close();
  }
}, 120_000);

it("mq9 serve refuses an openai embedder without its URL, without echoing the key", async () => {
  const run = await runCli(["serve", "--registry-embedder", "openai", "--registry-embedder-api-key", KEY]);
  expect(run.code).not.toBe(0);
  expect(run.stderr).toMatch(/registry\.embedderUrl: the openai embedder needs registry\.embedderUrl/);
  expect(`${run.stdout}${run.stderr}`).not.toContain(KEY);
});
