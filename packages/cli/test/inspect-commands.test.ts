import type { Mq9Client } from "@mq9/client";
import { startBroker, type TestBroker } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jsonLines, run } from "./cli-run.js";

let broker: TestBroker;
let env: NodeJS.ProcessEnv;
let sdk: Mq9Client;
let n = 0;
const box = (prefix = "insp") => `${prefix}.${process.pid}.${++n}`;

beforeAll(async () => {
  broker = await startBroker();
  env = { MQ9_SERVER: broker.url };
  sdk = await broker.client();
});
afterAll(() => broker.close());

const mq9 = (args: string[]) => run(args, env);

describe("mq9 mailbox ls|info|peek|purge|rm", () => {
  it("ls prints a table, --json one mailbox per line; info shows the mailbox and its groups", async () => {
    const name = box();
    await sdk.createMailbox({ name, desc: "ops" });
    await sdk.send(name, "one", { priority: "critical" });
    await sdk.send(name, "two");
    await sdk.fetch(name, { group: "workers", deliver: "earliest", batch: 1 });

    const table = await mq9(["mailbox", "ls", name]);
    expect(table.code).toBe(0);
    const [header, row] = table.stdout.trimEnd().split("\n");
    expect(header).toMatch(
      /^MAILBOX\s+MESSAGES\s+CRITICAL\s+URGENT\s+NORMAL\s+BYTES\s+DELAYED\s+GROUPS\s+OLDEST\s+TTL$/,
    );
    expect(row.split(/\s+/).slice(0, 5)).toEqual([name, "2", "1", "0", "1"]);
    const listed = jsonLines((await mq9(["mailbox", "ls", name, "--json"])).stdout);
    expect(listed).toEqual([expect.objectContaining({ mail_address: name, messages: 2, groups: 1 })]);
    expect((await mq9(["mailbox", "ls", "no-such-text-anywhere"])).stdout).toBe("(no mailboxes)\n");

    const info = await mq9(["mailbox", "info", name]);
    expect(info.code).toBe(0);
    expect(info.stdout).toMatch(/^mailbox +\S+$/m);
    expect(info.stdout).toMatch(/^messages +2 \(critical 1, urgent 0, normal 1\)$/m);
    expect(info.stdout).toMatch(/^workers +1 +1 +2 +\d+ +/m);
    const infoJson = JSON.parse((await mq9(["mailbox", "info", name, "--json"])).stdout);
    expect(infoJson.groups).toEqual([expect.objectContaining({ name: "workers", leased: 1, pending: 1 })]);
  });

  it("peek reads in delivery order and consumes nothing", async () => {
    const name = box();
    await sdk.createMailbox({ name });
    await sdk.send(name, "normal");
    await sdk.send(name, "urgent", { priority: "urgent" });
    const peek = await mq9(["mailbox", "peek", name, "--json"]);
    expect(jsonLines(peek.stdout).map((m) => m.payload)).toEqual(["urgent", "normal"]);
    const again = await mq9(["mailbox", "peek", name, "-n", "1"]);
    expect(again.stdout).toMatch(/urgent\n$/);
    expect((await sdk.fetch(name, { group: "g", deliver: "earliest" })).length).toBe(2);
  });

  it("purge by filter; without filters it needs --yes (exit 2 otherwise); rm needs --yes", async () => {
    const name = box();
    await sdk.createMailbox({ name });
    await sdk.send(name, "a", { tags: ["old"] });
    await sdk.send(name, "b", { key: "k" });
    await sdk.send(name, "c");

    expect(await mq9(["mailbox", "purge", name, "--tag", "old"])).toMatchObject({
      code: 0,
      stdout: `purged 1 message from ${name}\n`,
    });
    expect(JSON.parse((await mq9(["mailbox", "purge", name, "-k", "k", "--json"])).stdout)).toEqual({
      purged: 1,
    });
    const refused = await mq9(["mailbox", "purge", name]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/add --yes, or a filter/);
    expect((await sdk.query(name)).length).toBe(1);
    expect((await mq9(["mailbox", "purge", name, "--priority", "loud"])).code).toBe(2);
    expect(await mq9(["mailbox", "purge", name, "--yes"])).toMatchObject({
      code: 0,
      stdout: `purged 1 message from ${name}\n`,
    });

    const rmRefused = await mq9(["mailbox", "rm", name]);
    expect(rmRefused.code).toBe(2);
    expect(rmRefused.stderr).toMatch(/add --yes/);
    expect(await mq9(["mailbox", "rm", name, "-y"])).toMatchObject({ code: 0, stdout: `deleted ${name}\n` });
    const gone = await mq9(["mailbox", "info", name]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toBe(`mq9: mailbox ${name} does not exist (MAILBOX_NOT_FOUND)\n`);
    expect((await mq9(["mailbox", "rm", name, "--yes"])).code).toBe(1);
  });
});

describe("mq9 group ls|info|reset", () => {
  it("shows a group's lag and resets it to a position", async () => {
    const name = box();
    await sdk.createMailbox({ name });
    for (const text of ["1", "2", "3"]) await sdk.send(name, text);
    await sdk.fetch(name, { group: "g", deliver: "earliest", batch: 2 });

    const ls = await mq9(["group", "ls", name]);
    expect(ls.stdout.split("\n")[0]).toMatch(
      /^GROUP\s+PENDING\s+LEASED\s+LAG\s+LAG_S\s+REDELIVERED\s+DEAD\s+MEMBERS\s+POSITION/,
    );
    expect(ls.stdout).toMatch(/^g +1 +2 +3 /m);
    expect(jsonLines((await mq9(["group", "ls", name, "--json"])).stdout)).toEqual([
      expect.objectContaining({ name: "g", leased: 2 }),
    ]);
    expect((await mq9(["group", "info", name, "g"])).stdout).toMatch(/^lag +3 messages, \d+s$/m);

    expect(JSON.parse((await mq9(["group", "reset", name, "g", "--latest", "--json"])).stdout)).toMatchObject(
      {
        lag: 0,
        leased: 0,
      },
    );
    expect((await mq9(["group", "reset", name, "g", "--earliest"])).stdout).toMatch(/^pending +3$/m);
    expect((await sdk.fetch(name, { group: "g", batch: 10 })).map((m) => m.text())).toEqual(["1", "2", "3"]);

    const both = await mq9(["group", "reset", name, "g", "--earliest", "--from-id", "2"]);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/exactly one of --earliest, --latest, --from-id/);
    const none = await mq9(["group", "info", name, "nope"]);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/GROUP_NOT_FOUND/);
  });
});

describe("mq9 group info|release: who holds what", () => {
  it("info lists each lease with its member and deliveries; release ends a member's leases", async () => {
    const name = box();
    await sdk.createMailbox({ name });
    for (const text of ["1", "2"]) await sdk.send(name, text);
    await sdk.fetch(name, { group: "g", deliver: "earliest", member: "worker-1", leaseMs: 60_000 });
    const info = await mq9(["group", "info", name, "g"]);
    expect(info.stdout).toMatch(/^members +worker-1 2$/m);
    expect(info.stdout).toMatch(/^MSG_ID +STATE +MEMBER +DELIVERIES/m);
    expect(info.stdout).toMatch(/^\d+ +leased +worker-1 +1 /m);
    const released = await mq9(["group", "release", name, "g", "--member", "worker-1"]);
    expect(released.stdout).toBe("released 2 leases\n");
    const again = await sdk.fetch(name, { group: "g", member: "worker-2" });
    expect(again.map((m) => [m.text(), m.deliveryCount])).toEqual([
      ["1", 2],
      ["2", 2],
    ]);
    expect(JSON.parse((await mq9(["group", "release", name, "g", "--json"])).stdout)).toEqual({
      released: 2,
    });
    const missing = await mq9(["group", "release", name, "nope"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/GROUP_NOT_FOUND/);
  });
});

describe("mq9 dlq ls|retry|purge and mailbox create --max-deliver", () => {
  it("a message that keeps failing is listed with where, how often and why; retry and purge", async () => {
    const name = box("dlq");
    const created = await mq9(["mailbox", "create", name, "--max-deliver", "1"]);
    expect(created.code).toBe(0);
    expect((await mq9(["mailbox", "info", name])).stdout).toMatch(
      new RegExp(`^dead letters +${name}\\.dlq$`, "m"),
    );
    expect((await mq9(["dlq", "ls", name])).stdout).toBe("(no dead letters)\n");
    await sdk.send(name, "poison 1");
    await sdk.send(name, "poison 2");
    const held = await sdk.fetch(name, { group: "g", deliver: "earliest" });
    await sdk.nak(name, "g", held[0].msgId, { terminal: true, reason: "cannot parse" });
    await sdk.nak(name, "g", held[1].msgId, { terminal: true, reason: "cannot parse" });
    let letters: Record<string, unknown>[] = [];
    for (let i = 0; i < 100 && letters.length < 2; i++) {
      letters = jsonLines((await mq9(["dlq", "ls", name, "--json"])).stdout);
      if (letters.length < 2) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(letters.map((l) => [l.payload, l.from_mailbox, l.from_group, l.delivery_count, l.reason])).toEqual(
      [
        ["poison 1", name, "g", 1, "cannot parse"],
        ["poison 2", name, "g", 1, "cannot parse"],
      ],
    );
    const table = await mq9(["dlq", "ls", name]);
    expect(table.stdout.split("\n")[0]).toMatch(
      /^MSG_ID\s+FROM\s+GROUP\s+DELIVERIES\s+DEAD AT\s+REASON\s+PAYLOAD$/,
    );
    expect(table.stdout).toMatch(/cannot parse +poison 1/);

    const neither = await mq9(["dlq", "retry", name]);
    expect(neither.code).toBe(2);
    expect(neither.stderr).toMatch(/exactly one of --id <msg_id> and --all/);
    const one = await mq9(["dlq", "retry", name, "--id", String(letters[0].msg_id)]);
    expect(one.stdout).toBe(`sent 1 dead letter back to ${name}\n`);
    expect((await sdk.fetch(name, { group: "g" })).map((m) => m.text())).toEqual(["poison 1"]);
    const gone = await mq9(["dlq", "retry", name, "--id", String(letters[0].msg_id)]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/message not found/);

    expect((await mq9(["dlq", "purge", name])).code).toBe(2);
    expect((await mq9(["dlq", "purge", name, "--yes"])).stdout).toBe(`deleted 1 dead letter of ${name}\n`);
    expect((await mq9(["dlq", "ls", name])).stdout).toBe("(no dead letters)\n");
    expect(JSON.parse((await mq9(["dlq", "purge", name, "--yes", "--json"])).stdout)).toEqual({ purged: 0 });
    const unknown = await mq9(["dlq", "ls", `${name}x`]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/does not exist/);
  });
});

describe("mq9 server info|ping", () => {
  it("info names the store and version; ping times N round trips", async () => {
    const info = await mq9(["server", "info"]);
    expect(info.code).toBe(0);
    expect(info.stdout).toMatch(/^store +SQLite in /m);
    expect(info.stdout).toMatch(/^version +\d+\.\d+\.\d+/m);
    const json = JSON.parse((await mq9(["server", "info", "--json"])).stdout);
    expect(json).toMatchObject({ cluster: null, connections: expect.any(Number) });

    const ping = await mq9(["server", "ping", "-c", "3", "--json"]);
    expect(ping.code).toBe(0);
    const rtt = JSON.parse(ping.stdout);
    expect(rtt.rtt_ms).toHaveLength(3);
    expect(rtt.min_ms).toBeLessThanOrEqual(rtt.max_ms);
    expect((await mq9(["server", "ping", "-c", "2"])).stdout).toMatch(/^2 rounds: min [\d.]+ ms/m);
    expect((await mq9(["server", "ping", "-c", "0"])).code).toBe(2);
  });

  it("exits 3 when no broker answers", async () => {
    const down = await run(["server", "info", "--timeout", "500"], { MQ9_SERVER: "mq9://127.0.0.1:1" });
    expect(down.code).toBe(3);
  });
});
