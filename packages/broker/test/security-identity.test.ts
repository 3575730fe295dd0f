import { Subjects } from "@mq9/protocol";
import {
  connected,
  freshSchema,
  postgresMissing,
  startPostgresBroker,
  until,
  usePrivatePostgres,
} from "@mq9/testkit";
import type { Msg } from "nats";
import { describe, expect, it } from "vitest";
import type { UserOptions } from "../src/index.js";
import { startTestBroker, type TestBroker, type TestBrokerOptions, tempDir, texts } from "./harness.js";
import { RawClient } from "./nats-harness.js";

/** Starts a broker on the same data (a data directory, or a PostgreSQL schema) each time. */
type Restartable = (options: TestBrokerOptions) => Promise<TestBroker>;

function identitySuite(restartable: () => Restartable): void {
  it("a token user keeps its mailboxes when the users list is edited around it", async () => {
    const start = restartable();
    const first = { token: "first-token-0123456789" };
    const second = { token: "second-token-0123456789" };
    const third = { token: "third-token-0123456789" };
    const before: UserOptions[] = [first, second, { user: "root", token: "root-token", admin: true }];
    let t = await start({ auth: { users: before } });
    const secondNc = await t.nats({ token: second.token });
    const made = await t.request(Subjects.mailboxCreate, { name: "second.private" }, { nc: secondNc });
    expect(made.error).toBe("");
    expect((await t.request(Subjects.send("second.private"), "for second only")).error).toBe("");
    await t.close();
    // The first user leaves and a new one joins at the end: nobody else moves into second's place.
    const after: UserOptions[] = [second, third, { user: "root", token: "root-token", admin: true }];
    t = await start({ auth: { users: after } });
    try {
      const newcomer = await t.nats({ token: third.token });
      const stolen = await t.request(Subjects.query("second.private"), {}, { nc: newcomer });
      expect(stolen.error).toMatch(/^permission denied: mailbox second\.private belongs to another user/);
      const owner = await t.nats({ token: second.token });
      expect(texts(await t.request(Subjects.query("second.private"), {}, { nc: owner }))).toEqual([
        "for second only",
      ]);
    } finally {
      await t.close();
    }
  });

  it("mailboxes of a positional token-user-N name stop the start until the administrator names it", async () => {
    const start = restartable();
    const legacy = { token: "legacy-token-0123456789" };
    // What an older mq9 named the nameless token user at position 1.
    let t = await start({
      auth: { users: [{ token: "other-token-0123" }, { ...legacy, user: "token-user-1" }] },
    });
    const nc = await t.nats({ token: legacy.token });
    expect((await t.request(Subjects.mailboxCreate, { name: "legacy.box" }, { nc })).error).toBe("");
    expect((await t.request(Subjects.send("legacy.box"), "old")).error).toBe("");
    await t.close();
    await expect(start({ auth: { users: [{ token: "other-token-0123" }, legacy] } })).rejects.toThrow(
      /^auth: token-user-1 owns 1 mailbox \(legacy\.box\)\. .*Add "user": "token-user-1"/,
    );
    t = await start({
      auth: { users: [{ token: "other-token-0123" }, { ...legacy, user: "token-user-1" }] },
    });
    try {
      const owner = await t.nats({ token: legacy.token });
      expect(texts(await t.request(Subjects.query("legacy.box"), {}, { nc: owner }))).toEqual(["old"]);
    } finally {
      await t.close();
    }
  });

  it("agent names that differ only in case are one name across users", async () => {
    const users: UserOptions[] = [
      { user: "alice", password: "alice-pw" },
      { user: "bob", password: "bob-pw" },
    ];
    const t = await restartable()({ auth: { users } });
    try {
      const bob = await t.nats({ user: "bob", pass: "bob-pw" });
      await t.request(Subjects.mailboxCreate, { name: "alice.agent" });
      await t.request(Subjects.mailboxCreate, { name: "bob.agent" }, { nc: bob });
      expect(
        (await t.request(Subjects.agentRegister, { mailbox: "alice.agent", name: "Translator" })).error,
      ).toBe("");
      for (const name of ["translator", "TRANSLATOR", "\uff34ranslator"]) {
        const taken = await t.request(Subjects.agentRegister, { mailbox: "bob.agent", name }, { nc: bob });
        expect(taken.error).toBe(
          `permission denied: the agent name '${name}' is registered by another user; choose another name`,
        );
      }
    } finally {
      await t.close();
    }
  });

  it("a registration made before its mailbox exists does not lock out the mailbox's creator", async () => {
    const users: UserOptions[] = [
      { user: "carol", password: "carol-pw" },
      { user: "mallory", password: "mallory-pw" },
    ];
    const t = await restartable()({ auth: { users } });
    try {
      const mallory = await t.nats({ user: "mallory", pass: "mallory-pw" });
      const early = { mailbox: "carol.desk", name: "carol", description: "not carol" };
      expect((await t.request(Subjects.agentRegister, early, { nc: mallory })).error).toBe("");
      expect((await t.request(Subjects.mailboxCreate, { name: "carol.desk" })).error).toBe("");
      const card = { mailbox: "carol.desk", name: "carol-agent", description: "carol's agent" };
      expect((await t.request(Subjects.agentRegister, card)).error).toBe("");
      const found = await t.request<{ agents: { name: string; description: string }[] }>(
        Subjects.agentDiscover,
        {
          mailbox: "carol.desk",
        },
      );
      expect(found.agents.map((a) => a.description)).toEqual(["carol's agent"]);
      // It is carol's now: the early registrant may neither change nor REPORT it.
      const back = await t.request(Subjects.agentRegister, early, { nc: mallory });
      expect(back.error).toMatch(
        /^permission denied: the registration of carol\.desk belongs to another user/,
      );
      const report = await t.request(
        Subjects.agentReport,
        { mailbox: "carol.desk", status: "x" },
        { nc: mallory },
      );
      expect(report.error).toMatch(/^permission denied/);
    } finally {
      await t.close();
    }
  });

  it("a reply inbox whose connection dropped stays its user's: another user cannot claim it", async () => {
    const t = await restartable()({ auth: { users: INBOX_USERS }, registry: false });
    try {
      const connected = t.broker.connectionCount;
      const alice = await t.nats({ reconnect: false });
      alice.subscribe("_INBOX.dropped.*");
      await alice.flush();
      await alice.close();
      await until("the closed connection is gone", () => t.broker.connectionCount === connected || undefined);
      const mallory = await rawAs(t.broker.port, { user: "mallory", pass: "mallory-pw" });
      expect(await subscribeRaw(mallory, "_INBOX.dropped.*")).toContain(
        `-ERR 'Permissions Violation for Subscription to "_INBOX.dropped.*"'`,
      );
      // Alice, back on a new connection, has it again, and the replies on their way reach her.
      const back = await t.nats();
      const got: string[] = [];
      back.subscribe("_INBOX.dropped.*", { callback: (_err, msg) => got.push(decode(msg)) });
      await back.flush();
      mallory.send("PUB _INBOX.dropped.1 12\r\nwelcome back\r\nPING\r\n");
      await mallory.waitFor(/(PONG[\s\S]*){3}/);
      await back.flush();
      expect(got).toEqual(["welcome back"]);
      mallory.destroy();
    } finally {
      await t.close();
    }
  });
  it("a reply inbox stays bound to its user across a restart, before its owner reconnects", async () => {
    const start = restartable();
    const options = { auth: { users: INBOX_USERS }, registry: false as const };
    let t = await start(options);
    const alice = await t.nats({ reconnect: false });
    alice.subscribe("_INBOX.kept.*");
    await alice.flush();
    await t.close();
    t = await start({ ...options, port: t.broker.port });
    try {
      const mallory = await rawAs(t.broker.port, { user: "mallory", pass: "mallory-pw" });
      expect(await subscribeRaw(mallory, "_INBOX.kept.>")).toContain(
        `-ERR 'Permissions Violation for Subscription to "_INBOX.kept.>"'`,
      );
      const back = await t.nats();
      const got: string[] = [];
      back.subscribe("_INBOX.kept.*", { callback: (_err, msg) => got.push(decode(msg)) });
      await back.flush();
      // A reply on its way to alice reaches her, and not the user who tried to claim her inbox.
      mallory.send("PUB _INBOX.kept.7 5\r\nreply\r\nPING\r\n");
      await mallory.waitFor(/(PONG[\s\S]*){3}/);
      await back.flush();
      expect(got).toEqual(["reply"]);
      expect(mallory.text).not.toMatch(/^H?MSG /m);
      mallory.destroy();
    } finally {
      await t.close();
    }
  });
}

const INBOX_USERS: UserOptions[] = [
  { user: "alice", password: "alice-pw", permissions: "agent" },
  { user: "mallory", password: "mallory-pw", permissions: "all" },
];

const decode = (msg: Msg) => new TextDecoder().decode(msg.data);

/** A raw protocol client that is past CONNECT with the given credentials. */
async function rawAs(port: number, credentials: Record<string, string>): Promise<RawClient> {
  const raw = await RawClient.connect(port);
  await raw.waitFor("INFO");
  raw.send(`CONNECT ${JSON.stringify({ verbose: false, ...credentials })}\r\nPING\r\n`);
  await raw.waitFor("PONG");
  return raw;
}

/** Sends a SUB and a PING; the text received up to the PONG that answers it. */
async function subscribeRaw(raw: RawClient, subject: string): Promise<string> {
  const pongs = (raw.text.match(/PONG/g) ?? []).length;
  raw.send(`SUB ${subject} 1\r\nPING\r\n`);
  await raw.waitFor(new RegExp(`(PONG[\\s\\S]*){${pongs + 1}}`));
  return raw.text;
}

describe("user names", () => {
  it("two users whose names differ only in case or Unicode form are refused at start", async () => {
    for (const lookalike of ["Alice", "\uff21lice"]) {
      const users: UserOptions[] = [
        { user: "alice", password: "a-secret" },
        { user: lookalike, password: "b-secret" },
      ];
      await expect(startTestBroker({ auth: { users }, registry: false })).rejects.toThrow(
        `users[1] (${lookalike}): the user names "alice" and "${lookalike}" differ only in case`,
      );
    }
  });
});

describe("stable identities (embedded store)", () => {
  identitySuite(() => {
    const dataDir = tempDir();
    return (options) => startTestBroker({ ...options, dataDir, registry: { embedder: "none" } });
  });
});

const missing = postgresMissing();
describe.skipIf(missing !== undefined)(
  `stable identities (PostgreSQL${missing ? `, skipped: ${missing}` : ""})`,
  () => {
    const db = usePrivatePostgres();
    identitySuite(() => {
      const schema = freshSchema();
      return (options) =>
        connected(
          startPostgresBroker(
            db.pg.url,
            { ...options, registry: { embedder: "none" } },
            { schema, poolSize: 2 },
          ),
        );
    });
  },
);
