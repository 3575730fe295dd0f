import { Subjects } from "@mq9/protocol";
import type { TestBroker as KindBroker } from "@mq9/testkit";
import { onEachBrokerKind } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { UserOptions } from "../src/index.js";
import { startTestBroker, type TestBroker, texts } from "./harness.js";

type Reply = Record<string, unknown> & { error: string; code?: string };

onEachBrokerKind((start, where) => {
  describe("the operators' mq9 extensions (plain nats client)", () => {
    let t: KindBroker;
    beforeAll(async () => {
      t = await start({ registry: false });
    });
    afterAll(() => t.close());

    const send = (box: string, text: string, headers: Record<string, string> = {}) =>
      t.request(Subjects.send(box), text, { headers });

    it("MAILBOX.LIST and MAILBOX.INFO: depth and bytes per priority, oldest and newest, groups", async () => {
      await t.request(Subjects.mailboxCreate, { name: "ins.a", desc: "first", ttl: 0 });
      await t.request(Subjects.mailboxCreate, { name: "ins.b" });
      await send("ins.a", "n1");
      await send("ins.a", "crit", { "mq9-priority": "critical" });
      await send("ins.a", "later", { "mq9-delay": "3600" });
      await t.request(Subjects.fetch("ins.a"), {
        group_name: "w",
        deliver: "earliest",
        config: { num_msgs: 1 },
      });

      const list = await t.request<{ mailboxes: Reply[] }>(Subjects.mailboxList, { search: "ins." });
      expect(list.error).toBe("");
      expect(list.mailboxes.map((m) => m.mail_address)).toEqual(["ins.a", "ins.b"]);
      const [a] = list.mailboxes;
      expect(a).toMatchObject({
        desc: "first",
        ttl: 0,
        expires_at: null,
        depth: { critical: 1, urgent: 0, normal: 1 },
        messages: 2,
        delayed: 1,
        groups: 1,
        oldest_at: expect.any(Number),
        newest_at: expect.any(Number),
      });
      const perPriority = a.bytes_by_priority as Record<string, number>;
      expect(perPriority.critical).toBeGreaterThanOrEqual(4);
      expect(perPriority.normal).toBeGreaterThanOrEqual(2);
      expect(a.bytes).toBe(perPriority.critical + perPriority.urgent + perPriority.normal);
      expect(
        (await t.request<{ mailboxes: Reply[] }>(Subjects.mailboxList, { limit: 1 })).mailboxes,
      ).toHaveLength(1);
      // An empty body lists everything.
      expect((await t.request<{ mailboxes: Reply[] }>(Subjects.mailboxList)).error).toBe("");

      const info = await t.request<{ mailbox: Reply; groups: Reply[] }>(Subjects.mailboxInfo("ins.a"));
      expect(info.error).toBe("");
      expect(info.mailbox).toMatchObject({ mail_address: "ins.a", messages: 2 });
      expect(info.groups).toEqual([
        {
          name: "w",
          // Where each class stands depends on the store's ids; GROUP.INFO's test checks it moves.
          position: { critical: expect.any(Number), urgent: expect.any(Number), normal: expect.any(Number) },
          pending: 1,
          leased: 1,
          lag: 2,
          lag_seconds: expect.any(Number),
          oldest_unacked_at: expect.any(Number),
          redelivered: 0,
          dead_lettered: 0,
          max_deliver: null,
          backoff_ms: [],
          members: [{ member: expect.any(String), leased: 1 }],
        },
      ]);
    });

    it("GROUP.LIST, GROUP.INFO and GROUP.RESET: position, pending, leased, lag; a reset drops leases", async () => {
      await t.request(Subjects.mailboxCreate, { name: "ins.g" });
      for (const text of ["1", "2", "3"]) await send("ins.g", text);
      const fetched = await t.request<{ messages: { msg_id: number }[] }>(Subjects.fetch("ins.g"), {
        group_name: "g",
        deliver: "earliest",
        config: { num_msgs: 2 },
      });
      const [first, second] = fetched.messages.map((m) => m.msg_id);
      expect((await t.request(Subjects.ack("ins.g"), { group_name: "g", msg_id: first })).error).toBe("");

      const info = await t.request<{ group: Reply }>(Subjects.groupInfo("ins.g"), { group_name: "g" });
      expect(info.error).toBe("");
      expect(info.group).toMatchObject({ name: "g", lag: 2, leased: 1, pending: 1 });
      expect((info.group.position as Record<string, number>).normal).toBe(second);
      const listed = await t.request<{ groups: Reply[] }>(Subjects.groupList("ins.g"));
      const { leases, ...counts } = info.group;
      expect(leases).toHaveLength(1);
      expect(listed.groups).toEqual([counts]);

      const reset = await t.request<{ group: Reply }>(Subjects.groupReset("ins.g"), {
        group_name: "g",
        deliver: "earliest",
      });
      expect(reset.error).toBe("");
      expect(reset.group).toMatchObject({ lag: 3, leased: 0, pending: 3 });
      // Everything again, the message that was leased included.
      const again = await t.request(Subjects.fetch("ins.g"), { group_name: "g", config: { num_msgs: 10 } });
      expect(texts(again)).toEqual(["1", "2", "3"]);

      const latest = await t.request<{ group: Reply }>(Subjects.groupReset("ins.g"), {
        group_name: "g",
        deliver: "latest",
      });
      expect(latest.group).toMatchObject({ lag: 0, leased: 0, pending: 0, lag_seconds: 0 });
      const fromId = await t.request<{ group: Reply }>(Subjects.groupReset("ins.g"), {
        group_name: "g",
        from_id: second,
      });
      expect(fromId.group).toMatchObject({ lag: 2 });
      const fromTime = await t.request<{ group: Reply }>(Subjects.groupReset("ins.g"), {
        group_name: "g",
        from_time: Math.floor(Date.now() / 1000) + 60,
      });
      expect(fromTime.group).toMatchObject({ lag: 0 });
    });

    it("GROUP.INFO names who holds each lease, how often it was delivered and why it failed; GROUP.RELEASE ends a member's leases", async () => {
      await t.request(Subjects.mailboxCreate, { name: "ins.leases" });
      for (const text of ["a", "b", "c", "d"]) await send("ins.leases", text);
      const fetch = (member: string, extra: Record<string, unknown> = {}) =>
        t.request<{ messages: { msg_id: number }[] }>(Subjects.fetch("ins.leases"), {
          group_name: "w",
          deliver: "earliest",
          member,
          config: { num_msgs: 2, max_wait_ms: 0, lease_ms: 60_000, ...extra },
        });
      const first = (await fetch("alice", { max_deliver: 4, backoff_ms: [60_000] })).messages;
      const second = (await fetch("bob")).messages;
      expect(
        (
          await t.request(Subjects.nak("ins.leases"), {
            group_name: "w",
            msg_id: first[1].msg_id,
            reason: "flaky",
          })
        ).error,
      ).toBe("");
      const info = await t.request<{ group: Reply }>(Subjects.groupInfo("ins.leases"), { group_name: "w" });
      expect(info.error).toBe("");
      expect(info.group).toMatchObject({
        leased: 3,
        redelivered: 0,
        dead_lettered: 0,
        max_deliver: 4,
        backoff_ms: [60_000],
        members: [
          { member: "bob", leased: 2 },
          { member: "alice", leased: 1 },
        ],
      });
      const leases = info.group.leases as Reply[];
      expect(leases.map((l) => [l.msg_id, l.member, l.delivery_count, l.state, l.reason])).toEqual([
        [first[0].msg_id, "alice", 1, "leased", null],
        [first[1].msg_id, "alice", 1, "waiting", "flaky"],
        [second[0].msg_id, "bob", 1, "leased", null],
        [second[1].msg_id, "bob", 1, "leased", null],
      ]);
      expect(leases[1].retry_at).toBeGreaterThan(Date.now() + 50_000);
      // GROUP.LIST carries the counts, not each lease.
      const list = await t.request<{ groups: Reply[] }>(Subjects.groupList("ins.leases"));
      expect(list.groups[0]).toMatchObject({ name: "w", members: info.group.members });
      expect(list.groups[0]).not.toHaveProperty("leases");

      // bob hangs: his leases end now and carol gets them at once, as a second delivery.
      const released = await t.request<{ released: number }>(Subjects.groupRelease("ins.leases"), {
        group_name: "w",
        member: "bob",
      });
      expect(released, JSON.stringify(released)).toEqual({ error: "", released: 2 });
      const carol = await fetch("carol", { num_msgs: 10 });
      expect(texts(carol)).toEqual(["c", "d"]);
      const after = await t.request<{ group: Reply }>(Subjects.groupInfo("ins.leases"), { group_name: "w" });
      expect(after.group).toMatchObject({ redelivered: 2 });
      expect((after.group.members as Reply[]).map((m) => m.member)).toEqual(["carol", "alice"]);
      expect(await t.request(Subjects.groupRelease("ins.leases"), { group_name: "w" })).toEqual({
        error: "",
        released: 3,
      });

      const bad: [string, unknown, RegExp][] = [
        ["ins.leases", { group_name: "w", who: "x" }, /unknown field 'who'/],
        ["ins.leases", { member: "bob" }, /missing field 'group_name'/],
        ["ins.leases", "{no", /invalid GROUP.RELEASE payload/],
        ["ins.leases", { group_name: "nope" }, /group nope of mailbox ins.leases does not exist/],
        ["ins.none", { group_name: "w" }, /mailbox ins.none does not exist/],
      ];
      for (const [box, body, error] of bad) {
        expect((await t.request(Subjects.groupRelease(box), body as Record<string, unknown>)).error).toMatch(
          error,
        );
      }
    });

    it("MAILBOX.PURGE by key, tag, priority and age (all must hold); none purges all, groups stay", async () => {
      await t.request(Subjects.mailboxCreate, { name: "ins.p" });
      await send("ins.p", "k1", { "mq9-key": "k" });
      await send("ins.p", "t1", { "mq9-tags": "x,y" });
      await send("ins.p", "c1", { "mq9-priority": "critical", "mq9-tags": "x" });
      await send("ins.p", "u1", { "mq9-priority": "urgent" });
      await t.request(Subjects.fetch("ins.p"), {
        group_name: "keep",
        deliver: "earliest",
        config: { num_msgs: 10 },
      });

      const purge = (body: unknown) =>
        t.request<{ purged: number }>(Subjects.mailboxPurge("ins.p"), body as never);
      expect(await purge({ older_than_s: 3600 })).toEqual({ error: "", purged: 0 });
      expect(await purge({ tag: "x", priority: "normal" })).toEqual({ error: "", purged: 1 });
      expect(await purge({ key: "k" })).toEqual({ error: "", purged: 1 });
      expect(await purge({ priority: "critical" })).toEqual({ error: "", purged: 1 });
      const left = await t.request(Subjects.query("ins.p"), {});
      expect(texts(left)).toEqual(["u1"]);
      // The leases of purged messages went with them: the group holds only what is left.
      const group = await t.request<{ group: Reply }>(Subjects.groupInfo("ins.p"), { group_name: "keep" });
      expect(group.group).toMatchObject({ lag: 1 });
      await send("ins.p", "later", { "mq9-delay": "3600" });
      // `purged` counts the stored messages; the delayed ones go too.
      expect(await purge({})).toEqual({ error: "", purged: 1 });
      const info = await t.request<{ mailbox: Reply; groups: Reply[] }>(Subjects.mailboxInfo("ins.p"));
      expect(info.mailbox).toMatchObject({ messages: 0, delayed: 0, groups: 1 });
    });

    it("MAILBOX.REMOVE removes the mailbox with its messages and groups", async () => {
      await t.request(Subjects.mailboxCreate, { name: "ins.d" });
      await send("ins.d", "x");
      expect(await t.request(Subjects.mailboxRemove("ins.d"))).toEqual({ error: "" });
      expect(await t.request(Subjects.mailboxInfo("ins.d"))).toEqual({
        error: "mailbox ins.d does not exist",
        code: "MAILBOX_NOT_FOUND",
      });
      // The name is free again.
      expect((await t.request(Subjects.mailboxCreate, { name: "ins.d" })).error).toBe("");
    });

    it("SERVER.INFO: version, uptime, store, connections, memory, disk, cluster", async () => {
      const info = await t.request<Reply>(Subjects.serverInfo);
      expect(info).toMatchObject({
        error: "",
        version: expect.stringMatching(/^\d+\.\d+\.\d+/),
        uptime_s: expect.any(Number),
        store:
          where.store === "sqlite"
            ? expect.stringMatching(/^SQLite in /)
            : expect.stringMatching(/^PostgreSQL/),
        memory: { rss: expect.any(Number), heap_used: expect.any(Number), heap_total: expect.any(Number) },
      });
      if (where.cluster) {
        expect(info.connections).toBe(0);
        expect(info.subscriptions).toBeNull();
        const cluster = info.cluster as { node: string; peers: { node: string; state: string }[] };
        expect(cluster.peers.length).toBe(2);
        expect(cluster.peers.map((p) => p.node)).toContain(cluster.node);
      } else {
        expect(info.connections).toBeGreaterThanOrEqual(1);
        expect(info.subscriptions).toBeGreaterThanOrEqual(1);
        expect(info.cluster).toBeNull();
      }
      if (where.store === "sqlite") {
        expect(info.disk).toMatchObject({ data_dir: t.dataDir, free_bytes: expect.any(Number) });
        expect((info.disk as { used_bytes: number }).used_bytes).toBeGreaterThan(0);
      } else {
        expect(info.disk).toBeNull();
      }
    });

    it("bad input gets a clear error and changes nothing; unknown mailboxes and groups are not found", async () => {
      await t.request(Subjects.mailboxCreate, { name: "ins.bad" });
      await send("ins.bad", "stays");
      await t.request(Subjects.fetch("ins.bad"), {
        group_name: "g",
        deliver: "earliest",
        config: { num_msgs: 1 },
      });
      const cases: [string, unknown, RegExp][] = [
        [
          Subjects.mailboxPurge("ins.bad"),
          { priority: "loud" },
          /^invalid MAILBOX\.PURGE payload: 'priority'/,
        ],
        [Subjects.mailboxPurge("ins.bad"), { kee: "x" }, /unknown field 'kee'/],
        [
          Subjects.mailboxPurge("ins.bad"),
          { older_than_s: -1 },
          /'older_than_s' must be a non-negative integer/,
        ],
        [Subjects.mailboxPurge("ins.bad"), "{not json", /malformed JSON/],
        [Subjects.mailboxList, { limit: 0 }, /^invalid MAILBOX\.LIST payload: 'limit' must be 1 to 1000/],
        [Subjects.groupInfo("ins.bad"), {}, /^invalid GROUP\.INFO payload: missing field 'group_name'/],
        [
          Subjects.groupReset("ins.bad"),
          { group_name: "g" },
          /exactly one of 'from_id', 'from_time' or 'deliver'/,
        ],
        [
          Subjects.groupReset("ins.bad"),
          { group_name: "g", deliver: "from_id" },
          /'deliver' must be "earliest" or "latest"/,
        ],
        [
          Subjects.groupReset("ins.bad"),
          { group_name: "g", from_id: 1, from_time: 2 },
          /got from_id and from_time/,
        ],
      ];
      for (const [subject, body, error] of cases) {
        const reply = await t.request(subject, body as never);
        expect(reply.error, subject).toMatch(error);
        expect(reply.code).toBe("INVALID_REQUEST");
      }
      const info = await t.request<{ mailbox: Reply; groups: Reply[] }>(Subjects.mailboxInfo("ins.bad"));
      expect(info.mailbox).toMatchObject({ messages: 1 });
      expect(info.groups[0]).toMatchObject({ leased: 1 });

      for (const subject of [
        Subjects.mailboxInfo("no.such"),
        Subjects.mailboxPurge("no.such"),
        Subjects.mailboxRemove("no.such"),
        Subjects.groupList("no.such"),
      ]) {
        expect(await t.request(subject), subject).toEqual({
          error: "mailbox no.such does not exist",
          code: "MAILBOX_NOT_FOUND",
        });
      }
      expect(await t.request(Subjects.groupInfo("ins.bad"), { group_name: "nope" })).toEqual({
        error: "group nope of mailbox ins.bad does not exist; GROUP.LIST.ins.bad lists its groups",
        code: "GROUP_NOT_FOUND",
      });
      expect(
        (await t.request(Subjects.groupReset("ins.bad"), { group_name: "nope", deliver: "latest" })).code,
      ).toBe("GROUP_NOT_FOUND");
    });
  });
});

describe("the operators' mq9 extensions with users configured", () => {
  const USERS: UserOptions[] = [
    { user: "alice", password: "alice-pw", permissions: "agent" },
    { user: "bob", password: "bob-pw", permissions: "agent", mailboxes: ["shared.*"] },
    { user: "root", token: "root-token", admin: true },
  ];
  let t: TestBroker;
  beforeAll(async () => {
    t = await startTestBroker({ auth: { users: USERS }, registry: false });
  });
  afterAll(() => t.close());

  it("a mailbox's operations need the rights of a FETCH of it; LIST shows the caller's; SERVER.INFO is for admins", async () => {
    const alice = await t.nats({ user: "alice", pass: "alice-pw" });
    const bob = await t.nats({ user: "bob", pass: "bob-pw" });
    const root = await t.nats({ token: "root-token" });
    await t.request(Subjects.mailboxCreate, { name: "alice.box" }, { nc: alice });
    await t.request(Subjects.mailboxCreate, { name: "shared.box" }, { nc: alice });
    await t.request(Subjects.send("alice.box"), "mine", { nc: alice });
    await t.request(Subjects.fetch("alice.box"), { group_name: "g", deliver: "earliest" }, { nc: alice });

    const denied = (op: string) => ({
      error: `permission denied: mailbox alice.box belongs to another user; only its owner may ${op} (others may only SEND to it)`,
      code: "PERMISSION_DENIED",
    });
    expect(await t.request(Subjects.mailboxInfo("alice.box"), {}, { nc: bob })).toEqual(denied("INFO it"));
    expect(await t.request(Subjects.mailboxPurge("alice.box"), {}, { nc: bob })).toEqual(denied("PURGE it"));
    expect(await t.request(Subjects.mailboxRemove("alice.box"), {}, { nc: bob })).toEqual(
      denied("REMOVE it"),
    );
    expect(await t.request(Subjects.groupList("alice.box"), {}, { nc: bob })).toEqual(
      denied("list its groups"),
    );
    expect(await t.request(Subjects.groupInfo("alice.box"), { group_name: "g" }, { nc: bob })).toEqual(
      denied("inspect its groups"),
    );
    expect(
      await t.request(Subjects.groupReset("alice.box"), { group_name: "g", deliver: "latest" }, { nc: bob }),
    ).toEqual(denied("RESET its groups"));
    expect(await t.request(Subjects.groupRelease("alice.box"), { group_name: "g" }, { nc: bob })).toEqual(
      denied("release its groups' leases"),
    );
    const held = await t.request<{ group: { leases: { msg_id: number }[] } }>(
      Subjects.groupInfo("alice.box"),
      { group_name: "g" },
      { nc: alice },
    );
    const msgId = held.group.leases[0].msg_id;
    expect(
      await t.request(Subjects.nak("alice.box"), { group_name: "g", msg_id: msgId }, { nc: bob }),
    ).toEqual(denied("NAK its messages"));
    expect(await t.request(Subjects.retry("alice.box"), {}, { nc: bob })).toEqual(
      denied("RETRY its dead letters"),
    );
    // Nothing changed: the message is still alice's group's, leased.
    expect(texts(await t.request(Subjects.query("alice.box"), {}, { nc: alice }))).toEqual(["mine"]);
    expect(
      (
        await t.request<{ group: { leased: number } }>(
          Subjects.groupInfo("alice.box"),
          { group_name: "g" },
          { nc: alice },
        )
      ).group.leased,
    ).toBe(1);
    // Its owner may: a terminal NAK sends it to alice.box.dlq, which alice owns too.
    expect(
      (
        await t.request(
          Subjects.nak("alice.box"),
          { group_name: "g", msg_id: msgId, terminal: true },
          { nc: alice },
        )
      ).error,
    ).toBe("");
    let moved = false;
    for (let i = 0; i < 100 && !moved; i++) {
      moved = texts(await t.request(Subjects.query("alice.box.dlq"), {}, { nc: alice })).length === 1;
      if (!moved) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(moved).toBe(true);
    expect((await t.request(Subjects.query("alice.box.dlq"), {}, { nc: bob })).code).toBe(
      "PERMISSION_DENIED",
    );

    const names = async (nc: typeof alice) =>
      (await t.request<{ mailboxes: Reply[] }>(Subjects.mailboxList, {}, { nc })).mailboxes.map(
        (m) => m.mail_address,
      );
    expect(await names(alice)).toEqual(["alice.box", "alice.box.dlq", "shared.box"]);
    expect(await names(bob)).toEqual(["shared.box"]);
    expect(await names(root)).toEqual(["alice.box", "alice.box.dlq", "shared.box"]);
    expect((await t.request(Subjects.mailboxInfo("shared.box"), {}, { nc: bob })).error).toBe("");
    expect((await t.request(Subjects.mailboxInfo("alice.box"), {}, { nc: root })).error).toBe("");

    expect(await t.request(Subjects.serverInfo, {}, { nc: alice })).toEqual({
      error: "permission denied: only an admin user may ask SERVER.INFO",
      code: "PERMISSION_DENIED",
    });
    expect((await t.request(Subjects.serverInfo, {}, { nc: root })).error).toBe("");
    expect((await t.request(Subjects.mailboxRemove("alice.box"), {}, { nc: alice })).error).toBe("");
  });
});
