import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { NatsListener } from "@mq9/broker/internal";
import type { Mq9Client } from "@mq9/client";
import { startBroker, type TestBroker } from "@mq9/testkit";
import { connect as natsConnect, nkeys } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "./cli-harness.js";
import { jsonLines, run, start } from "./cli-run.js";

let broker: TestBroker;
let env: NodeJS.ProcessEnv;
let sdk: Mq9Client;
let n = 0;
const box = (prefix = "cli") => `${prefix}.${process.pid}.${++n}`;

beforeAll(async () => {
  broker = await startBroker();
  env = { MQ9_SERVER: broker.url };
  sdk = await broker.client();
});
afterAll(() => broker.close());

const mq9 = (args: string[], input?: string | Uint8Array) => run(args, env, input);

describe("mq9 mailbox create", () => {
  it("prints the address, or a JSON object with --json", async () => {
    const name = box();
    expect(await mq9(["mailbox", "create", name, "--ttl", "60"])).toMatchObject({
      code: 0,
      stdout: `${name}\n`,
    });
    const generated = await mq9(["mailbox", "create", "--json"]);
    expect(generated.code).toBe(0);
    expect(JSON.parse(generated.stdout).mail_address).toMatch(/^[0-9a-v]{26}$/);
  });

  it("exits 1 with the broker's text for a duplicate; JSON on stderr with --json", async () => {
    const name = box();
    await mq9(["mailbox", "create", name]);
    const dup = await mq9(["mailbox", "create", name]);
    expect(dup).toMatchObject({ code: 1, stdout: "" });
    expect(dup.stderr).toBe(`mq9: mailbox ${name} already exists (MAILBOX_EXISTS)\n`);
    const dupJson = await mq9(["mailbox", "create", name, "--json"]);
    expect(JSON.parse(dupJson.stderr)).toEqual({
      error: `mailbox ${name} already exists`,
      code: "MAILBOX_EXISTS",
    });
    expect((await mq9(["mailbox", "create", "Bad.Name"])).code).toBe(1);
  });
});

describe("mq9 send", () => {
  it("takes the payload from an argument, a file or stdin, and prints the msg_id", async () => {
    const name = await sdk.createMailbox({ name: box() });
    const file = join(tempDir(), "task.json");
    writeFileSync(file, '{"from":"file"}');
    expect(await mq9(["send", name, "from argument"])).toMatchObject({
      code: 0,
      stdout: `sent msg_id 0 to ${name}\n`,
    });
    expect((await mq9(["send", name, "--file", file, "--json"])).stdout).toBe(
      `${JSON.stringify({ mail_address: name, msg_id: 1 })}\n`,
    );
    expect((await mq9(["send", name], "from stdin")).code).toBe(0);
    expect((await mq9(["send", `mq9://anyhost/${name}`, "-"], "via uri")).code).toBe(0);
    const texts = (await sdk.query(name)).map((m) => m.text());
    expect(texts).toEqual(["from argument", '{"from":"file"}', "from stdin", "via uri"]);
  });

  it("passes priority, key, ttl, tags, headers and delay", async () => {
    const name = await sdk.createMailbox({ name: box() });
    const args = ["send", name, "hi", "-p", "urgent", "-k", "k1", "--ttl", "600", "-t", "a, b"];
    expect((await mq9([...args, "-H", "mq9-reply-to=me.inbox", "-H", "x-trace=7"])).code).toBe(0);
    const [m] = await sdk.query(name);
    expect(m.priority).toBe("urgent");
    expect(m.key).toBe("k1");
    expect(m.tags).toEqual(["a", "b"]);
    expect(m.headers).toMatchObject({ "mq9-reply-to": "me.inbox", "x-trace": "7", "mq9-ttl": "600" });
    const delayed = await mq9(["send", name, "later", "--delay", "60"]);
    expect(delayed.stdout).toBe(`delayed: stored for ${name}, msg_id assigned when due\n`);
  });

  it("exits 1 for an unknown mailbox and 2 for bad options", async () => {
    const missing = await mq9(["send", box("missing"), "x"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("does not exist (MAILBOX_NOT_FOUND)");
    const badPriority = await mq9(["send", "x", "y", "--priority", "high"]);
    expect(badPriority.code).toBe(2);
    expect(badPriority.stderr).toContain("Allowed choices are critical, urgent, normal");
    for (const args of [
      ["send", "x", "y", "--delay", "soon"],
      ["send", "x", "--file", "/no/such/file"],
      ["send", "x", "y", "--file", "/etc/hostname"],
      ["send"],
    ]) {
      const result = await mq9(args);
      expect(result.code, `${args.join(" ")}: ${result.stderr}`).toBe(2);
    }
  });
});

describe("mq9 fetch, ack, query, delete", () => {
  it("fetch prints a table in priority order, or JSON lines; --ack acknowledges the batch", async () => {
    const name = await sdk.createMailbox({ name: box() });
    const normal = await sdk.send(name, "normal one");
    const critical = await sdk.send(name, new Uint8Array([0xff, 0xfe, 0x00]), {
      priority: "critical",
      key: "bin",
    });
    const table = await mq9(["fetch", name, "--deliver", "earliest"]);
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^MSG_ID\s+PRIORITY\s+CREATED\s+KEY\s+TAGS\s+PAYLOAD$/);
    expect(lines[1]).toMatch(
      new RegExp(
        `^${critical}\\s+critical\\s+\\d{4}-\\d\\d-\\d\\dT[\\d:]+Z\\s+bin\\s+-\\s+<3 bytes, binary>$`,
      ),
    );
    expect(lines[2]).toMatch(new RegExp(`^${normal}\\s+normal\\s+\\S+\\s+-\\s+-\\s+normal one$`));
    const json = await mq9(["fetch", name, "--deliver", "earliest", "--json", "--group", "g", "--ack"]);
    const records = jsonLines(json.stdout);
    expect(records.map((r) => r.msg_id)).toEqual([critical, normal]);
    expect(records[0]).toMatchObject({ priority: "critical", key: "bin", payload_base64: "//4A" });
    expect(records[1]).toMatchObject({ priority: "normal", payload: "normal one" });
    expect(typeof records[1].create_time).toBe("number");
    const after = await mq9(["fetch", name, "--group", "g", "--wait-ms", "0"]);
    expect(after.stdout).toBe("(no messages)\n");
    expect((await mq9(["fetch", name, "--ack"])).code).toBe(2);
  });

  it("ack acknowledges for a group; an ACK of a message never delivered exits 1", async () => {
    const name = await sdk.createMailbox({ name: box() });
    const id = await sdk.send(name, "x");
    await sdk.fetch(name, { group: "g", deliver: "earliest" });
    expect(await mq9(["ack", name, String(id), "--group", "g"])).toMatchObject({
      code: 0,
      stdout: `acked msg_id ${id} for group g\n`,
    });
    const other = await mq9(["ack", name, String(id), "--group", "other", "--json"]);
    expect(other.code).toBe(1);
    expect(JSON.parse(other.stderr)).toEqual({ error: "message not found", code: "MESSAGE_NOT_FOUND" });
    expect((await mq9(["ack", name, String(id)])).code).toBe(2);
  });

  it("query filters by key and tags without consuming", async () => {
    const name = await sdk.createMailbox({ name: box() });
    await sdk.send(name, "v1", { key: "status" });
    await sdk.send(name, "v2", { key: "status" });
    await sdk.send(name, "tagged", { tags: ["eu"] });
    const byKey = await mq9(["query", name, "--key", "status", "--json"]);
    expect(jsonLines(byKey.stdout).map((r) => r.payload)).toEqual(["v2"]);
    const byTag = await mq9(["query", name, "--tags", "eu,us"]);
    expect(byTag.stdout).toContain("tagged");
    expect(byTag.stdout).not.toContain("v2");
    expect((await mq9(["query", name, "--limit", "1", "--json"])).stdout).toContain('"payload":"tagged"');
  });

  it("delete removes a message; a second delete exits 1", async () => {
    const name = await sdk.createMailbox({ name: box() });
    const id = await sdk.send(name, "x");
    expect((await mq9(["delete", name, String(id), "--json"])).stdout).toBe(
      `${JSON.stringify({ deleted: true, msg_id: id })}\n`,
    );
    const again = await mq9(["delete", name, String(id)]);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe("mq9: message not found (MESSAGE_NOT_FOUND)\n");
  });
});

describe("mq9 consume", () => {
  it("streams messages as they arrive as JSON lines and exits after --count, ACKing them", async () => {
    const name = await sdk.createMailbox({ name: box() });
    const args = ["consume", name, "--group", "g", "--deliver", "earliest", "--count", "2", "--json"];
    const consumer = start([...args, "--wait-ms", "500"], env);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await sdk.send(name, "first");
    await sdk.send(name, "second");
    expect(await consumer.exited).toBe(0);
    expect(jsonLines(consumer.stdout()).map((r) => r.payload)).toEqual(["first", "second"]);
    expect(await sdk.fetch(name, { group: "g", maxWaitMs: 0, leaseMs: 60_000 })).toEqual([]);
  });

  it("prints one readable line per message and stops cleanly on SIGINT", async () => {
    const name = await sdk.createMailbox({ name: box() });
    const id = await sdk.send(name, "waiting", { key: "k", tags: ["t"] });
    const consumer = start(
      ["consume", name, "--group", "g", "--deliver", "earliest", "--wait-ms", "300"],
      env,
    );
    for (let i = 0; i < 100 && !consumer.stdout().includes("waiting"); i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(consumer.stdout()).toMatch(
      new RegExp(`^\\d{4}-\\d\\d-\\d\\dT[\\d:]+Z {2}#${id} {2}normal key=k tags=t {2}waiting\\n$`),
    );
    consumer.child.kill("SIGINT");
    expect(await consumer.exited).toBe(0);
  });

  it("exits 1 when the mailbox does not exist", async () => {
    const result = await mq9(["consume", box("missing"), "--group", "g"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("does not exist");
  });
});

describe("mq9 agent", () => {
  it("register, discover (table and JSON), report and unregister against the broker's registry", async (ctx) => {
    const probe = await mq9(["agent", "discover", "--json"]);
    if (probe.code !== 0 && /registry is (not enabled|turned off)/.test(probe.stderr)) ctx.skip();
    const mailbox = await sdk.createMailbox({ name: box("agents") });
    const name = `cli-translator-${process.pid}`;
    const registered = await mq9([
      "agent",
      "register",
      "--name",
      name,
      "--mailbox",
      mailbox,
      "--payload",
      "Translates Japanese documents",
    ]);
    expect(registered).toMatchObject({ code: 0, stdout: `registered ${name}\n` });
    const table = await mq9(["agent", "discover", "japanese"]);
    expect(table.stdout).toMatch(/^NAME\s+MAILBOX\s+DESCRIPTION\n/);
    expect(table.stdout).toContain(`${name}  ${mailbox}  Translates Japanese documents`);
    const json = jsonLines((await mq9(["agent", "discover", "--json", "--limit", "100"])).stdout);
    expect(json.find((a) => a.mailbox === mailbox)).toMatchObject({ name, mailbox });
    expect((await mq9(["agent", "report", "--mailbox", mailbox, "--info", "busy"])).code).toBe(0);
    const got = jsonLines((await mq9(["agent", "get", "--mailbox", mailbox])).stdout);
    expect(got).toEqual([
      expect.objectContaining({ name, mailbox, _status: expect.objectContaining({ report_info: "busy" }) }),
    ]);
    const byName = jsonLines((await mq9(["agent", "get", "--name", name])).stdout);
    expect(byName.map((a) => a.mailbox)).toEqual([mailbox]);
    expect((await mq9(["agent", "unregister", "--mailbox", mailbox])).stdout).toBe(
      `unregistered ${mailbox}\n`,
    );
    const missing = await mq9(["agent", "get", "--mailbox", mailbox]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(`mq9: no agent is registered with mailbox ${mailbox}\n`);
    expect((await mq9(["agent", "get"])).code).toBe(2);
    const gone = jsonLines((await mq9(["agent", "discover", "--json", "--limit", "100"])).stdout);
    expect(gone.some((a) => a.mailbox === mailbox)).toBe(false);
  }, 120_000);

  it("register reads a card file and lets flags override it; bad input is a usage error", async (ctx) => {
    const probe = await mq9(["agent", "discover", "--json"]);
    if (probe.code !== 0 && /registry is (not enabled|turned off)/.test(probe.stderr)) ctx.skip();
    const dir = tempDir();
    const card = join(dir, "card.json");
    const mailbox = await sdk.createMailbox({ name: box("agents") });
    writeFileSync(
      card,
      JSON.stringify({ name: "from-file", mailbox: "x", payload: "Summarises long reports" }),
    );
    const result = await mq9(["agent", "register", card, "--mailbox", mailbox, "--json"]);
    expect(JSON.parse(result.stdout)).toEqual({ registered: true, name: "from-file", mailbox });
    expect((await sdk.discover({ limit: 100 })).find((a) => a.mailbox === mailbox)).toMatchObject({
      name: "from-file",
      payload: "Summarises long reports",
    });
    writeFileSync(join(dir, "bad.json"), "not json");
    expect((await mq9(["agent", "register", join(dir, "bad.json")])).code).toBe(2);
    expect((await mq9(["agent", "register"])).code).toBe(2);
    expect((await mq9(["agent", "unregister"])).code).toBe(2);
    expect((await mq9(["agent"])).code).toBe(2);
  });
});

describe("mq9 agent on the wire", () => {
  it("sends the bodies the protocol expects (checked by a hand-written responder)", async () => {
    const listener = new NatsListener({ host: "127.0.0.1", port: 0 });
    const { port } = await listener.listen();
    const responder = await natsConnect({ servers: `127.0.0.1:${port}` });
    const seen: { subject: string; body: unknown }[] = [];
    responder.subscribe("$mq9.AI.AGENT.>", {
      callback: (_err, msg) => {
        seen.push({ subject: msg.subject.slice("$mq9.AI.AGENT.".length), body: JSON.parse(msg.string()) });
        const agents = [{ name: "a", mailbox: "agents.a", agent_card: { description: "Does A" } }];
        msg.respond(JSON.stringify(msg.subject.endsWith("DISCOVER") ? { error: "", agents } : { error: "" }));
      },
    });
    await responder.flush();
    const hand = { MQ9_SERVER: `nats://127.0.0.1:${port}` };
    try {
      await run(
        ["agent", "register", "--name", "a", "--mailbox", "agents.a", "--payload", "Does A", "--ttl", "60"],
        hand,
      );
      await run(["agent", "report", "--name", "a", "--info", "ok"], hand);
      await run(["agent", "unregister", "--mailbox", "agents.a"], hand);
      const table = await run(["agent", "discover", "does", "--limit", "5", "--page", "2"], hand);
      await run(["agent", "discover", "--semantic", "who does A?"], hand);
      expect(seen).toEqual([
        { subject: "REGISTER", body: { name: "a", mailbox: "agents.a", payload: "Does A", ttl: 60 } },
        { subject: "REPORT", body: { name: "a", report_info: "ok" } },
        { subject: "UNREGISTER", body: { mailbox: "agents.a" } },
        { subject: "DISCOVER", body: { text: "does", limit: 5, page: 2, include_agent_info: false } },
        { subject: "DISCOVER", body: { semantic: "who does A?", include_agent_info: false } },
      ]);
      expect(table.stdout).toBe("NAME  MAILBOX   DESCRIPTION\na     agents.a  Does A\n");
    } finally {
      await responder.close();
      await listener.close({ drainTimeoutMs: 0 });
    }
  });
});

describe("connection, exit codes and help", () => {
  it("exits 3 when no broker answers, naming where it tried", async () => {
    const result = await run(["send", "a.box", "x", "--server", "mq9://127.0.0.1:1"]);
    expect(result.code).toBe(3);
    expect(result.stderr).toContain("cannot connect to mq9://127.0.0.1:1");
    expect((await run(["fetch", "a.box", "--json"], { MQ9_SERVER: "127.0.0.1:1" })).code).toBe(3);
  });

  it("--server wins over MQ9_SERVER", async () => {
    const name = await sdk.createMailbox({ name: box() });
    const result = await run(["send", name, "x", "--server", env.MQ9_SERVER!], { MQ9_SERVER: "127.0.0.1:1" });
    expect(result.code).toBe(0);
  });

  it("every command has help with examples", async () => {
    for (const command of [
      ["mailbox", "create"],
      ["send"],
      ["fetch"],
      ["ack"],
      ["query"],
      ["delete"],
      ["consume"],
      ["agent", "register"],
      ["agent", "unregister"],
      ["agent", "report"],
      ["agent", "discover"],
    ]) {
      const help = await run([...command, "--help"]);
      expect(help.code, command.join(" ")).toBe(0);
      expect(help.stdout, command.join(" ")).toContain("Examples:");
      expect(help.stdout, command.join(" ")).toContain("MQ9_SERVER");
    }
    const top = await run(["--help"]);
    for (const name of ["serve", "mailbox", "send", "fetch", "ack", "query", "delete", "consume", "agent"]) {
      expect(top.stdout).toContain(name);
    }
  });
});

describe("NKey sign-in", () => {
  it("--nkey-seed <file> or MQ9_NKEY_SEED signs in as the NKey user; a wrong seed exits 3", async () => {
    const pair = nkeys.createUser();
    const secured = await startBroker({
      registry: false,
      auth: { users: [{ nkey: pair.getPublicKey(), permissions: "agent" }] },
    });
    try {
      const server = { MQ9_SERVER: secured.url };
      const dir = tempDir();
      const seedFile = join(dir, "agent.nk");
      writeFileSync(seedFile, `${new TextDecoder().decode(pair.getSeed())}\n`);
      const name = box("nkey");
      expect(await run(["mailbox", "create", name, "--nkey-seed", seedFile], server)).toMatchObject({
        code: 0,
        stdout: `${name}\n`,
      });
      expect(await run(["send", name, "signed"], { ...server, MQ9_NKEY_SEED: seedFile })).toMatchObject({
        code: 0,
      });
      // Without credentials, or with another user's seed, the broker refuses the connection.
      expect((await run(["send", name, "anonymous"], server)).code).toBe(3);
      const strangerFile = join(dir, "stranger.nk");
      writeFileSync(strangerFile, new TextDecoder().decode(nkeys.createUser().getSeed()));
      expect((await run(["send", name, "x", "--nkey-seed", strangerFile], server)).code).toBe(3);
      const publicKeyFile = join(dir, "public.txt");
      writeFileSync(publicKeyFile, pair.getPublicKey());
      const refused = await run(["send", name, "x", "--nkey-seed", publicKeyFile], server);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain("holds no NKey user seed");
    } finally {
      await secured.close();
    }
    // Six CLI processes, each a fresh Node start: generous on a loaded machine.
  }, 120_000);
});
