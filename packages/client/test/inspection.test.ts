import { boxName, startBroker, type TestBroker } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Mq9Client, Mq9Error } from "../src/index.js";

let t: TestBroker;
let client: Mq9Client;

beforeAll(async () => {
  t = await startBroker();
  client = await t.client();
});
afterAll(() => t.close());

describe("inspection and repair (mq9 extensions)", () => {
  it("lists and describes mailboxes with their groups", async () => {
    const box = await client.createMailbox({ name: boxName("insp"), desc: "seen" });
    await client.send(box, "a", { priority: "urgent" });
    await client.send(box, "b");
    await client.fetch(box, { group: "workers", deliver: "earliest", batch: 1 });

    const listed = await client.listMailboxes({ search: box });
    expect(listed.map((m) => m.mail_address)).toEqual([box]);
    expect(listed[0]).toMatchObject({
      desc: "seen",
      messages: 2,
      depth: { critical: 0, urgent: 1, normal: 1 },
    });
    expect(await client.listMailboxes({ search: box, limit: 1 })).toHaveLength(1);

    const info = await client.mailboxInfo(box);
    expect(info.mailbox).toMatchObject({ mail_address: box, groups: 1 });
    expect(info.groups).toEqual([
      expect.objectContaining({ name: "workers", leased: 1, pending: 1, lag: 2 }),
    ]);
    expect(await client.listGroups(box)).toEqual(info.groups);
    // GROUP.INFO adds each message in flight to the summary the lists carry.
    const { leases, ...summary } = await client.groupInfo(box, "workers");
    expect(summary).toEqual(info.groups[0]);
    expect(leases).toEqual([expect.objectContaining({ state: "leased", delivery_count: 1 })]);
  });

  it("purges by filter, resets a group, deletes a mailbox", async () => {
    const box = await client.createMailbox({ name: boxName("repair") });
    await client.send(box, "k", { key: "k1" });
    await client.send(box, "t", { tags: ["red"] });
    await client.send(box, "n");
    await client.fetch(box, { group: "g", deliver: "earliest", batch: 10 });

    expect(await client.purgeMailbox(box, { key: "k1" })).toBe(1);
    expect(await client.purgeMailbox(box, { tag: "red", olderThanSeconds: 0 })).toBe(1);
    expect((await client.query(box)).map((m) => m.text())).toEqual(["n"]);

    expect(await client.resetGroup(box, "g", { deliver: "latest" })).toMatchObject({ lag: 0, leased: 0 });
    expect(await client.resetGroup(box, "g", { fromTime: new Date(0) })).toMatchObject({
      lag: 1,
      pending: 1,
    });
    expect(await client.resetGroup(box, "g", { fromId: 0 })).toMatchObject({ lag: 1 });
    expect((await client.fetch(box, { group: "g" })).map((m) => m.text())).toEqual(["n"]);

    expect(await client.purgeMailbox(box)).toBe(1);
    await client.deleteMailbox(box);
    const gone = await client.mailboxInfo(box).catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(Mq9Error);
    expect(gone).toMatchObject({ code: "MAILBOX_NOT_FOUND", message: `mailbox ${box} does not exist` });
  });

  it("errors carry their codes: an unknown group, bad input", async () => {
    const box = await client.createMailbox({ name: boxName("errs") });
    await expect(client.groupInfo(box, "none")).rejects.toMatchObject({ code: "GROUP_NOT_FOUND" });
    await expect(client.purgeMailbox(box, { priority: "loud" as never })).rejects.toMatchObject({
      code: "INVALID_REQUEST",
      message: /'priority' must be one of/,
    });
    await expect(client.listMailboxes({ limit: 5000 })).rejects.toMatchObject({ code: "INVALID_REQUEST" });
  });

  it("tells what the broker is", async () => {
    const info = await client.serverInfo();
    expect(info).toMatchObject({ store: expect.stringMatching(/^SQLite/), cluster: null });
    expect(info.connections).toBeGreaterThanOrEqual(1);
    expect(info.memory.rss).toBeGreaterThan(0);
    expect(info.disk?.free_bytes).toBeGreaterThan(0);
    expect(Object.keys(info)).not.toContain("error");
  });
});
