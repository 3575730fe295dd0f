import { execFile } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const brokerDist = `${root}packages/broker/dist/index.js`;

// Refuses, in the child process, every module of the registry and of its ML dependencies: a broker
// that reached any of them would fail to start or to answer.
const HOOKS = `
const REFUSED = /^(@mq9\\/registry|@energetic-ai\\/|@tensorflow\\/|@lancedb\\/|apache-arrow|onnxruntime-node|hnswlib-node|stemmer|@orama\\/stemmers)|\\/packages\\/registry\\//;
export async function resolve(specifier, context, next) {
  if (REFUSED.test(specifier)) throw new Error("refused import of " + specifier);
  const resolved = await next(specifier, context);
  if (REFUSED.test(resolved.url.replace("file://", ""))) throw new Error("refused import of " + resolved.url);
  return resolved;
}
`;

const MAIN = `
import { register } from "node:module";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
register("./refuse-registry-hooks.mjs", import.meta.url);
const { Broker } = await import(${JSON.stringify(brokerDist)});
const { connect } = await import("nats");
const broker = await Broker.start({
  port: 0,
  dataDir: mkdtempSync(join(tmpdir(), "mq9-no-registry-")),
  http: { port: 0 },
});
const nc = await connect({ servers: "127.0.0.1:" + broker.port });
const ask = async (subject, body) =>
  JSON.parse(new TextDecoder().decode((await nc.request(subject, JSON.stringify(body), { timeout: 10000 })).data));
const out = {
  create: await ask("$mq9.AI.MAILBOX.CREATE", { name: "plain.inbox" }),
  send: await ask("$mq9.AI.MSG.SEND.plain.inbox", "hello"),
  fetch: await ask("$mq9.AI.MSG.FETCH.plain.inbox", { group_name: "g", deliver: "earliest" }),
  register: await ask("$mq9.AI.AGENT.REGISTER", { name: "a", mailbox: "plain.inbox" }),
  discover: await ask("$mq9.AI.AGENT.DISCOVER", {}),
  agentsHttp: await (await fetch("http://127.0.0.1:" + broker.http.port + "/api/v1/agents")).json(),
  health: (await fetch("http://127.0.0.1:" + broker.http.port + "/healthz")).status,
  registry: broker.registry === undefined ? "none" : "some",
};
await nc.close();
await broker.close();
console.log(JSON.stringify(out));
`;

describe("a broker without a registry", () => {
  it("starts without the registry's modules, serves mailboxes and answers AGENT.* with a clear error", async () => {
    if (!existsSync(brokerDist)) {
      throw new Error(`${brokerDist} is missing: run the build first (npm run build)`);
    }
    // Under node_modules so that the child resolves "nats" as a user's project would.
    const dir = `${root}node_modules/.cache/mq9-no-registry`;
    mkdirSync(dir, { recursive: true });
    writeFileSync(`${dir}/refuse-registry-hooks.mjs`, HOOKS);
    writeFileSync(`${dir}/main.mjs`, MAIN);
    const { stdout } = await promisify(execFile)(process.execPath, [`${dir}/main.mjs`], { timeout: 60_000 });
    const out = JSON.parse(stdout.trim().split("\n").at(-1)!);
    expect(out.create).toEqual({ error: "", mail_address: "plain.inbox" });
    expect(out.send).toMatchObject({ error: "", msg_id: expect.any(Number) });
    expect(out.fetch.error).toBe("");
    expect(
      out.fetch.messages.map((m: { payload: string }) => Buffer.from(m.payload, "base64").toString()),
    ).toEqual(['"hello"']);
    expect(out.register).toMatchObject({ error: "the agent registry is turned off in this broker" });
    expect(out.discover).toMatchObject({ error: "the agent registry is turned off in this broker" });
    expect(out.agentsHttp).toMatchObject({ code: "REGISTRY_OFF" });
    expect(out.health).toBe(200);
    expect(out.registry).toBe("none");
  }, 90_000);

  it("the hooks do refuse the registry: importing it in the same child fails", async () => {
    const dir = `${root}node_modules/.cache/mq9-no-registry`;
    mkdirSync(dir, { recursive: true });
    writeFileSync(`${dir}/refuse-registry-hooks.mjs`, HOOKS);
    writeFileSync(
      `${dir}/probe.mjs`,
      `import { register } from "node:module";\nregister("./refuse-registry-hooks.mjs", import.meta.url);\nawait import("@mq9/registry");\n`,
    );
    const run = promisify(execFile)(process.execPath, [`${dir}/probe.mjs`], { timeout: 60_000 });
    await expect(run).rejects.toThrow(/refused import of @mq9\/registry/);
  }, 90_000);
});
