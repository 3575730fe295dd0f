import { Subjects } from "@mq9/protocol";
import bcrypt from "bcryptjs";
import { type Msg, type NatsConnection, nkeyAuthenticator, nkeys } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { UserOptions } from "../src/index.js";
import { encodeBody, startTestBroker, type TestBroker, tempDir, texts } from "./harness.js";
import { RawClient, sleep } from "./nats-harness.js";
import { ownershipSuite } from "./ownership-suite.js";

const USERS: UserOptions[] = [
  { user: "alice", password: "alice-pw", permissions: "agent" },
  // Bob may subscribe to anything: the inbox rule must hold even for an unrestricted user.
  { user: "bob", token: "bob-token", permissions: "all" },
  { user: "carol", password: "carol-pw", permissions: "agent" },
  {
    user: "dave",
    password: "dave-pw",
    permissions: { publish: ["$mq9.AI.>"], subscribe: ["svc.>"], allowResponses: true },
  },
  { user: "erin", password: "erin-pw", permissions: "agent", mailboxes: ["shared.*"] },
  { user: "root", token: "root-token", admin: true },
];

const decode = (msg: Msg) => new TextDecoder().decode(msg.data);

/** Every message a connection's `>` and `_INBOX.>` subscriptions receive. */
function spy(nc: NatsConnection): { seen: string[] } {
  const seen: string[] = [];
  for (const subject of [">", "_INBOX.>"]) {
    nc.subscribe(subject, { callback: (_err, msg) => seen.push(`${msg.subject} ${decode(msg)}`) });
  }
  return { seen };
}

/** A raw protocol client that is past CONNECT with the given credentials. */
async function rawAs(port: number, credentials: Record<string, string>): Promise<RawClient> {
  const raw = await RawClient.connect(port);
  await raw.waitFor("INFO");
  raw.send(`CONNECT ${JSON.stringify({ verbose: false, ...credentials })}\r\nPING\r\n`);
  await raw.waitFor("PONG");
  return raw;
}

describe("isolation between clients (several users)", () => {
  let t: TestBroker;
  let alice: NatsConnection;
  let bob: NatsConnection;
  let root: NatsConnection;

  beforeAll(async () => {
    t = await startTestBroker({ auth: { users: USERS }, registry: { embedder: "none" } });
    alice = t.nc;
    bob = await t.nats({ token: "bob-token" });
    root = await t.nats({ token: "root-token" });
  });
  afterAll(async () => {
    await t.close();
  });

  const as =
    (nc: NatsConnection) =>
    <T = Record<string, unknown>>(subject: string, body?: Parameters<TestBroker["request"]>[1]) =>
      t.request<T>(subject, body, { nc });

  it("a client subscribed to > and _INBOX.> sees none of another client's replies", async () => {
    const { seen } = spy(bob);
    await bob.flush();
    const created = await as(alice)<{ mail_address: string }>(Subjects.mailboxCreate, {});
    const box = created.mail_address;
    expect((await as(alice)(Subjects.send(box), "secret payload")).error).toBe("");
    const fetched = await as(alice)(Subjects.fetch(box), { group_name: "g", deliver: "earliest" });
    expect(texts(fetched)).toEqual(["secret payload"]);
    expect(texts(await as(alice)(Subjects.query(box), {}))).toEqual(["secret payload"]);
    // A request between clients: its reply goes to the requester's inbox, and only there.
    const responder = await t.nats({ token: "root-token" });
    responder.subscribe("svc.echo", { callback: (_err, msg) => msg.respond(msg.data) });
    await responder.flush();
    const echoed = await root.request("svc.echo", encodeBody("private answer"), { timeout: 5000 });
    expect(decode(echoed)).toBe("private answer");
    // Positive control: the spy's subscriptions do receive what is meant for everyone.
    root.publish("news.today", encodeBody("public"));
    await root.flush();
    await bob.flush();
    await sleep(100);
    await bob.flush();
    expect(seen.filter((line) => line.startsWith("news.today"))).toEqual(["news.today public"]);
    const leaked = seen.filter((line) => !line.startsWith("news.today") && !line.startsWith("svc.echo"));
    expect(leaked).toEqual([]);
    expect(seen.join("\n")).not.toContain(box);
    expect(seen.join("\n")).not.toContain("secret payload");
    expect(seen.join("\n")).not.toContain("_INBOX");
  });

  it("a SUB naming another client's inbox is refused with nats-server's error; the connection stays", async () => {
    const got: string[] = [];
    alice.subscribe("_INBOX.alicebox.*", { callback: (_err, msg) => got.push(decode(msg)) });
    await alice.flush();
    const raw = await rawAs(t.broker.port, { auth_token: "bob-token" });
    raw.send("SUB _INBOX.alicebox.* 1\r\nSUB _INBOX.alicebox 2\r\nSUB _INBOX.alicebox.x.> q 3\r\nPING\r\n");
    await raw.waitFor(/PONG[\s\S]*PONG/);
    expect(raw.text).toContain(`-ERR 'Permissions Violation for Subscription to "_INBOX.alicebox.*"'\r\n`);
    expect(raw.text).toContain(`-ERR 'Permissions Violation for Subscription to "_INBOX.alicebox"'\r\n`);
    expect(raw.text).toContain(
      `-ERR 'Permissions Violation for Subscription to "_INBOX.alicebox.x.>" using queue "q"'\r\n`,
    );
    expect(raw.closed).toBe(false);
    // Answering into the inbox still works: it reaches its owner alone.
    raw.send("PUB _INBOX.alicebox.1 5\r\nhello\r\nPING\r\n");
    await raw.waitFor(/(PONG[\s\S]*){3}/);
    await alice.flush();
    expect(got).toEqual(["hello"]);
    // No message line (the INFO line's random server_id may hold the letters "MSG").
    expect(raw.text).not.toMatch(/^H?MSG /m);
    raw.destroy();
  });

  it("an inbox freed by its owner can be taken by another connection", async () => {
    const first = await t.nats({ token: "bob-token" });
    const sub = first.subscribe("_INBOX.reused.*");
    await first.flush();
    const raw = await rawAs(t.broker.port, { auth_token: "root-token" });
    raw.send("SUB _INBOX.reused.* 1\r\nPING\r\n");
    await raw.waitFor(/PONG[\s\S]*PONG/);
    expect(raw.text).toContain("Permissions Violation");
    sub.unsubscribe();
    await first.flush();
    raw.send("SUB _INBOX.reused.* 2\r\nPING\r\n");
    await raw.waitFor(/(PONG[\s\S]*){3}/);
    expect(raw.text.match(/Permissions Violation/g)).toHaveLength(1);
    raw.destroy();
  });

  ownershipSuite(() => ({ request: t.request, alice, bob, root }));

  it("a mailboxes grant lets a user read mailboxes it did not create", async () => {
    await as(root)(Subjects.mailboxCreate, { name: "shared.inbox" });
    await as(root)(Subjects.send("shared.inbox"), "for the team");
    const erin = await t.nats({ user: "erin", pass: "erin-pw" });
    expect(texts(await as(erin)(Subjects.query("shared.inbox"), {}))).toEqual(["for the team"]);
    expect((await as(erin)(Subjects.query("alice.private"), {})).error).toMatch(/^permission denied/);
  });

  it("REGISTER refuses a mailbox that is not a mail address", async () => {
    for (const mailbox of ["a.*", "../../etc", "box\r\nPUB x 1", "a>b", "Upper.Case"]) {
      const reply = await as(alice)(Subjects.agentRegister, { mailbox, name: "bad.mailbox" });
      expect(reply.error, mailbox).toMatch(
        /^invalid AGENT\.REGISTER payload: 'mailbox' must be a mail address/,
      );
    }
  });

  it("every permission error is nats-server's -ERR text, and the connection stays usable", async () => {
    const raw = await rawAs(t.broker.port, { user: "carol", pass: "carol-pw" });
    raw.send("PUB news.today 2\r\nhi\r\nSUB > 1\r\nSUB secret.* q 2\r\nPING\r\n");
    await raw.waitFor(/PONG[\s\S]*PONG/);
    expect(raw.text).toContain(`-ERR 'Permissions Violation for Publish to "news.today"'\r\n`);
    expect(raw.text).toContain(`-ERR 'Permissions Violation for Subscription to ">"'\r\n`);
    expect(raw.text).toContain(
      `-ERR 'Permissions Violation for Subscription to "secret.*" using queue "q"'\r\n`,
    );
    // Within the agent profile all works on the same connection.
    raw.send(`SUB _INBOX.carol.* 3\r\nPUB ${Subjects.mailboxCreate} _INBOX.carol.1 2\r\n{}\r\n`);
    await raw.waitFor(/MSG _INBOX\.carol\.1 3 \d+\r\n\{"error":"","mail_address":"[0-9a-v]{26}"\}/);
    raw.destroy();
  });

  it("allow responses: a user may answer each request it received, once", async () => {
    const dave = await rawAs(t.broker.port, { user: "dave", pass: "dave-pw" });
    dave.send("SUB svc.time 1\r\nPING\r\n");
    await dave.waitFor(/PONG[\s\S]*PONG/);
    const got: string[] = [];
    const inbox = root.subscribe("_INBOX.rootreplies.*", { callback: (_err, msg) => got.push(decode(msg)) });
    await root.flush();
    root.publish("svc.time", encodeBody("now?"), { reply: "_INBOX.rootreplies.1" });
    await root.flush();
    await dave.waitFor("MSG svc.time 1 _INBOX.rootreplies.1 4\r\nnow?\r\n");
    dave.send("PUB _INBOX.rootreplies.1 5\r\nfirst\r\nPUB _INBOX.rootreplies.1 6\r\nsecond\r\n");
    dave.send("PUB _INBOX.elsewhere.1 5\r\nspoof\r\nPING\r\n");
    await dave.waitFor(/(PONG[\s\S]*){3}/);
    expect(dave.text).toContain(`-ERR 'Permissions Violation for Publish to "_INBOX.rootreplies.1"'\r\n`);
    expect(dave.text).toContain(`-ERR 'Permissions Violation for Publish to "_INBOX.elsewhere.1"'\r\n`);
    await root.flush();
    expect(got).toEqual(["first"]);
    inbox.unsubscribe();
    dave.destroy();
  });

  it("bcrypt password hashes and NKeys authenticate like nats-server's", async () => {
    const seed = nkeys.createUser();
    const hashed = await startTestBroker({
      auth: {
        users: [
          { user: "first", token: "first-token" },
          { user: "hash", password: bcrypt.hashSync("hash-pw", 4) },
          { nkey: seed.getPublicKey(), permissions: "agent" },
        ],
      },
      registry: false,
    });
    try {
      const ok = await hashed.nats({ token: undefined, user: "hash", pass: "hash-pw" });
      expect(ok.isClosed()).toBe(false);
      await expect(
        hashed.nats({ token: undefined, user: "hash", pass: "wrong", reconnect: false }),
      ).rejects.toThrow(/Authorization/i);
      const signer = await hashed.nats({
        token: undefined,
        user: undefined,
        pass: undefined,
        authenticator: nkeyAuthenticator(seed.getSeed()),
      });
      const reply = await hashed.request<{ mail_address: string }>(
        Subjects.mailboxCreate,
        {},
        { nc: signer },
      );
      expect(reply.error).toBe("");
      const other = nkeys.createUser();
      await expect(
        hashed.nats({
          token: undefined,
          user: undefined,
          pass: undefined,
          authenticator: nkeyAuthenticator(other.getSeed()),
          reconnect: false,
        }),
      ).rejects.toThrow(/Authorization/i);
    } finally {
      await hashed.close();
    }
  });
});

describe("ownership survives a restart", () => {
  it("a mailbox and a registration still belong to their users after the broker restarts", async () => {
    const dataDir = tempDir();
    const options = { auth: { users: USERS }, registry: { embedder: "none" as const }, dataDir };
    let t = await startTestBroker(options);
    await t.request(Subjects.mailboxCreate, { name: "kept.box" });
    await t.request(Subjects.send("kept.box"), "kept");
    await t.request(Subjects.agentRegister, { mailbox: "kept.box", name: "kept.agent" });
    await t.close();
    t = await startTestBroker(options);
    try {
      const bob = await t.nats({ token: "bob-token" });
      expect((await t.request(Subjects.query("kept.box"), {}, { nc: bob })).error).toMatch(
        /^permission denied/,
      );
      expect((await t.request(Subjects.agentUnregister, { mailbox: "kept.box" }, { nc: bob })).error).toMatch(
        /^permission denied/,
      );
      expect(texts(await t.request(Subjects.query("kept.box"), {}))).toEqual(["kept"]);
    } finally {
      await t.close();
    }
  });
});

describe("without users (single-tenant), behaviour is as before", () => {
  it("a shared token lets every client read everything and > sees replies", async () => {
    const t = await startTestBroker({ auth: { token: "shared" }, registry: false });
    try {
      const other = await t.nats();
      const { seen } = spy(other);
      await other.flush();
      await t.request(Subjects.mailboxCreate, { name: "open.box" });
      await t.request(Subjects.send("open.box"), "visible");
      expect(texts(await t.request(Subjects.query("open.box"), {}, { nc: other }))).toEqual(["visible"]);
      await other.flush();
      expect(seen.some((line) => line.includes("mail_address"))).toBe(true);
    } finally {
      await t.close();
    }
  });

  it("an empty password or token is refused at start with a clear error", async () => {
    await expect(startTestBroker({ auth: { users: [{ user: "x", password: "" }] } })).rejects.toThrow(
      /empty password is refused/,
    );
    await expect(startTestBroker({ auth: { user: "x", password: "" } })).rejects.toThrow(
      /empty password is refused/,
    );
    await expect(startTestBroker({ auth: { token: "" } })).rejects.toThrow(/empty token is refused/);
  });
});

describe("the REST API with several users", () => {
  it("takes admin users only and creates mailboxes in the admin's name", async () => {
    const t = await startTestBroker({ auth: { users: USERS }, registry: false, http: { port: 0 } });
    try {
      const base = `http://127.0.0.1:${t.broker.http!.port}/api/v1/mailboxes`;
      const json = { "content-type": "application/json" };
      const basic = (user: string, pass: string) =>
        `Basic ${Buffer.from(`${user}:${pass}`).toString("base64")}`;
      const asAlice = await fetch(base, {
        method: "POST",
        headers: { ...json, authorization: basic("alice", "alice-pw") },
        body: JSON.stringify({ name: "rest.box" }),
      });
      expect(asAlice.status).toBe(403);
      expect(((await asAlice.json()) as { error: string }).error).toMatch(/user 'alice' is not an admin/);
      const asRoot = await fetch(base, {
        method: "POST",
        headers: { ...json, authorization: "Bearer root-token" },
        body: JSON.stringify({ name: "rest.box" }),
      });
      expect(asRoot.status).toBe(201);
      // The mailbox is root's: alice may send to it over NATS but not read it; root may.
      expect((await t.request(Subjects.send("rest.box"), "via nats")).error).toBe("");
      expect((await t.request(Subjects.query("rest.box"), {})).error).toMatch(/^permission denied/);
      const root = await t.nats({ token: "root-token" });
      expect(texts(await t.request(Subjects.query("rest.box"), {}, { nc: root }))).toEqual(["via nats"]);
    } finally {
      await t.close();
    }
  });
});
