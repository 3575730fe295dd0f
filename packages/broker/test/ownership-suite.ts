// What several users may and may not do to each other's mailboxes, replies and registrations:
// one suite, run against one broker with users (security-isolation.test.ts) and through two
// cluster nodes behind nats-servers with one account per user (security-cluster.test.ts).
import { Subjects } from "@mq9/protocol";
import type { Msg, NatsConnection } from "nats";
import { expect, it } from "vitest";
import { type Body, sleep, type TestBroker, texts } from "./harness.js";

/** Three users' connections: alice and bob are agents, root an admin. */
export interface OwnershipParties {
  request: TestBroker["request"];
  alice: NatsConnection;
  bob: NatsConnection;
  root: NatsConnection;
}

const decode = (msg: Msg) => new TextDecoder().decode(msg.data);

/** Declares the ownership tests; `parties` is called once they run (after the file's beforeAll). */
export function ownershipSuite(parties: () => OwnershipParties): void {
  const as =
    (who: "alice" | "bob" | "root") =>
    <T = Record<string, unknown>>(subject: string, body?: Body) => {
      const p = parties();
      return p.request<T>(subject, body, { nc: p[who] });
    };

  it("ownership — a user subscribed to > and _INBOX.> sees none of another user's replies", async () => {
    const { bob } = parties();
    const seen: string[] = [];
    for (const subject of [">", "_INBOX.>"]) {
      bob.subscribe(subject, { callback: (_err, msg) => seen.push(`${msg.subject} ${decode(msg)}`) });
    }
    await bob.flush();
    const { mail_address: box } = await as("alice")<{ mail_address: string }>(Subjects.mailboxCreate, {});
    expect((await as("alice")(Subjects.send(box), "secret payload")).error).toBe("");
    const fetched = await as("alice")(Subjects.fetch(box), { group_name: "g", deliver: "earliest" });
    expect(texts(fetched)).toEqual(["secret payload"]);
    // Positive control: the spy's subscriptions receive what is published where bob may listen.
    bob.publish("news.today", "public");
    await bob.flush();
    await sleep(100);
    await bob.flush();
    expect(seen.filter((line) => line.startsWith("news.today"))).toEqual(["news.today public"]);
    const all = seen.join("\n");
    expect(all).not.toContain(box);
    expect(all).not.toContain("secret payload");
  });

  it("ownership — another user may SEND to a mailbox but not FETCH, ACK, QUERY or DELETE it", async () => {
    const { mail_address: box } = await as("alice")<{ mail_address: string }>(Subjects.mailboxCreate, {
      name: "alice.private",
    });
    expect(box).toBe("alice.private");
    const sent = await as("bob")<{ msg_id: number }>(Subjects.send(box), "from bob");
    expect(sent.error).toBe("");
    const denied = /^permission denied: mailbox alice\.private belongs to another user/;
    const fetch = await as("bob")(Subjects.fetch(box), { group_name: "g", deliver: "earliest" });
    expect(fetch.error).toMatch(denied);
    expect(fetch.messages).toBeUndefined();
    expect((await as("bob")(Subjects.fetch(box), { deliver: "earliest" })).error).toMatch(denied);
    expect((await as("bob")(Subjects.query(box), {})).error).toMatch(denied);
    expect((await as("bob")(Subjects.ack(box), { group_name: "g", msg_id: sent.msg_id })).error).toMatch(
      denied,
    );
    expect((await as("bob")(Subjects.delete(box, sent.msg_id), undefined)).error).toMatch(denied);
    // Nothing changed: the message is there, and group g has not been handed it.
    expect(texts(await as("alice")(Subjects.query(box), {}))).toEqual(["from bob"]);
    const own = await as("alice")(Subjects.fetch(box), { group_name: "g", deliver: "earliest" });
    expect(texts(own)).toEqual(["from bob"]);
    // The admin may do everything.
    expect((await as("root")(Subjects.query(box), {})).error).toBe("");
    expect((await as("root")(Subjects.delete(box, sent.msg_id), undefined)).error).toBe("");
  });

  it("ownership — registrations belong to their user: no overwrite, namesake, UNREGISTER or REPORT by others", async () => {
    await as("alice")(Subjects.mailboxCreate, { name: "alice.inbox" });
    await as("bob")(Subjects.mailboxCreate, { name: "bob.inbox" });
    const card = { mailbox: "alice.inbox", name: "alice.agent", description: "alice's agent" };
    expect((await as("alice")(Subjects.agentRegister, card)).error).toBe("");
    const overwrite = await as("bob")(Subjects.agentRegister, { ...card, description: "bob was here" });
    expect(overwrite.error).toMatch(
      /^permission denied: the registration of alice\.inbox belongs to another user/,
    );
    const namesake = await as("bob")(Subjects.agentRegister, { mailbox: "bob.inbox", name: "alice.agent" });
    expect(namesake.error).toMatch(
      /^permission denied: the agent name 'alice\.agent' is registered by another user/,
    );
    const foreign = await as("bob")(Subjects.agentRegister, { mailbox: "alice.private", name: "bob.fake" });
    expect(foreign.error).toMatch(/^permission denied: mailbox alice\.private belongs to another user/);
    expect((await as("bob")(Subjects.agentUnregister, { mailbox: "alice.inbox" })).error).toMatch(
      /^permission denied/,
    );
    expect((await as("bob")(Subjects.agentUnregister, { name: "alice.agent" })).error).toBe("");
    expect(
      (await as("bob")(Subjects.agentReport, { mailbox: "alice.inbox", status: "hacked" })).error,
    ).toMatch(/^permission denied/);
    expect((await as("bob")(Subjects.agentReport, { name: "alice.agent", status: "hacked" })).error).toBe(
      "agent not found",
    );
    const listed = await as("bob")<{ agents: { mailbox: string; description: string; _status?: unknown }[] }>(
      Subjects.agentDiscover,
      { include_status: true },
    );
    const alices = listed.agents.filter((a) => a.mailbox === "alice.inbox");
    expect(alices).toHaveLength(1);
    expect(alices[0].description).toBe("alice's agent");
    expect(alices[0]._status).toBeNull();
    expect(listed.agents.some((a) => a.mailbox === "alice.private")).toBe(false);
    // The owner and the admin may.
    expect((await as("alice")(Subjects.agentReport, { name: "alice.agent", status: "ok" })).error).toBe("");
    expect((await as("root")(Subjects.agentUnregister, { mailbox: "alice.inbox" })).error).toBe("");
  });
}
