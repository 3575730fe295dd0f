import { Subjects } from "@mq9/protocol";
import { until } from "@mq9/testkit";
import { connect } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SqliteStore } from "../src/internal.js";
import { startTestBroker, type TestBroker, texts } from "./harness.js";
import { RestContract } from "./rest-contract.js";

const box = "rest.box";
const b64 = (text: string) => Buffer.from(text).toString("base64");

describe("REST API v1 against its OpenAPI document", () => {
  let t: TestBroker;
  let base: string;
  let contract: RestContract;
  beforeAll(async () => {
    t = await startTestBroker({ http: { port: 0 } });
    base = `http://127.0.0.1:${t.broker.http!.port}`;
    const document = await (await fetch(`${base}/api/v1/openapi.json`)).json();
    contract = new RestContract(document, base);
  });
  afterAll(() => t.close());

  it("the document is OpenAPI 3.1 with the mailbox, message, agent and metrics routes", async () => {
    expect(contract.document).toMatchObject({ openapi: "3.1.0" });
    const keys = contract.operations().map((o) => o.key);
    for (const key of [
      "GET /api/v1/mailboxes",
      "POST /api/v1/mailboxes",
      "GET /api/v1/mailboxes/{address}",
      "DELETE /api/v1/mailboxes/{address}",
      "POST /api/v1/mailboxes/{address}/messages",
      "GET /api/v1/mailboxes/{address}/peek",
      "POST /api/v1/mailboxes/{address}/fetch",
      "POST /api/v1/mailboxes/{address}/ack",
      "DELETE /api/v1/mailboxes/{address}/messages/{msg_id}",
      "GET /api/v1/agents",
      "POST /api/v1/agents/register",
      "POST /api/v1/agents/unregister",
      "POST /api/v1/agents/discover",
      "GET /api/v1/metrics/summary",
      "GET /api/v1/stream",
      "GET /api/v1/cluster",
      "GET /api/v1/mailboxes/{address}/groups",
      "GET /api/v1/mailboxes/{address}/groups/{group}",
      "POST /api/v1/mailboxes/{address}/groups/{group}/reset",
      "GET /api/v1/server",
    ]) {
      expect(keys).toContain(key);
    }
  });

  it("mailboxes: create, list with depth per priority, get with groups, purge, delete", async () => {
    const c = contract;
    await c.check({
      method: "POST",
      path: "/api/v1/mailboxes",
      url: "/api/v1/mailboxes",
      body: { name: box, ttl: 0 },
      status: 201,
    });
    // The protocol's own texts: the same as a NATS client gets.
    const nats = await t.request(Subjects.mailboxCreate, { name: box });
    await c.check({
      method: "POST",
      path: "/api/v1/mailboxes",
      url: "/api/v1/mailboxes",
      body: { name: box },
      status: 409,
      error: nats.error,
    });
    await c.check({
      method: "POST",
      path: "/api/v1/mailboxes",
      url: "/api/v1/mailboxes",
      body: { name: "Bad Name" },
      status: 400,
      error: "name may only contain lowercase letters, digits, and dots",
    });
    await c.check({
      method: "POST",
      path: "/api/v1/mailboxes",
      url: "/api/v1/mailboxes",
      body: { ttl: -1 },
      status: 400,
      error: /^invalid request: body.ttl: /,
    });
    await c.check({
      method: "POST",
      path: "/api/v1/mailboxes",
      url: "/api/v1/mailboxes",
      rawBody: "{not json",
      status: 400,
      error: /not JSON/,
    });
    const generated = await c.check({
      method: "POST",
      path: "/api/v1/mailboxes",
      url: "/api/v1/mailboxes",
      body: {},
      status: 201,
    });
    expect((generated.body as { mail_address: string }).mail_address).toMatch(/^[0-9a-v]{26}$/);

    await t.request(Subjects.send(box), "n1");
    await t.request(Subjects.send(box), "c1", { headers: { "mq9-priority": "critical" } });
    await t.request(Subjects.send(box), "later", { headers: { "mq9-delay": "3600" } });
    const list = await c.check({
      method: "GET",
      path: "/api/v1/mailboxes",
      url: "/api/v1/mailboxes?search=rest",
      status: 200,
    });
    const mailboxes = (list.body as { mailboxes: Record<string, unknown>[] }).mailboxes;
    expect(mailboxes.map((m) => m.mail_address)).toEqual([box]);
    expect(mailboxes[0]).toMatchObject({
      depth: { critical: 1, urgent: 0, normal: 1 },
      messages: 2,
      delayed: 1,
      bytes: expect.any(Number),
    });
    await c.check({
      method: "GET",
      path: "/api/v1/mailboxes",
      url: "/api/v1/mailboxes?limit=0",
      status: 400,
      error: /^invalid request: query.limit/,
    });

    await t.request(Subjects.fetch(box), {
      group_name: "workers",
      deliver: "earliest",
      config: { num_msgs: 1 },
    });
    const detail = await c.check({
      method: "GET",
      path: "/api/v1/mailboxes/{address}",
      url: `/api/v1/mailboxes/${box}`,
      status: 200,
    });
    expect((detail.body as { groups: unknown[] }).groups).toEqual([
      {
        name: "workers",
        position: { critical: 0, urgent: 0, normal: 0 },
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
    await c.check({
      method: "GET",
      path: "/api/v1/mailboxes/{address}",
      url: "/api/v1/mailboxes/no.such",
      status: 404,
      error: "mailbox no.such does not exist",
    });
    await c.check({
      method: "GET",
      path: "/api/v1/mailboxes/{address}",
      url: `/api/v1/mailboxes/${"x".repeat(300)}`,
      status: 400,
      error: /params.address/,
    });

    await c.check({
      method: "POST",
      path: "/api/v1/mailboxes",
      url: "/api/v1/mailboxes",
      body: { name: "rest.gone" },
      status: 201,
    });
    await t.request(Subjects.send("rest.gone"), "x");
    const purged = await c.check({
      method: "POST",
      path: "/api/v1/mailboxes/{address}/purge",
      url: "/api/v1/mailboxes/rest.gone/purge",
      status: 200,
    });
    expect(purged.body).toEqual({ purged: 1 });
    expect(texts(await t.request(Subjects.query("rest.gone"), {}))).toEqual([]);
    await c.check({
      method: "POST",
      path: "/api/v1/mailboxes/{address}/purge",
      url: "/api/v1/mailboxes/no.such/purge",
      status: 404,
      error: "mailbox no.such does not exist",
    });
    await c.check({
      method: "POST",
      path: "/api/v1/mailboxes/{address}/purge",
      url: `/api/v1/mailboxes/${"x".repeat(300)}/purge`,
      status: 400,
    });
    await c.check({
      method: "DELETE",
      path: "/api/v1/mailboxes/{address}",
      url: "/api/v1/mailboxes/rest.gone",
      status: 200,
    });
    expect((await t.request(Subjects.send("rest.gone"), "x")).error).toBe("mailbox rest.gone does not exist");
    await c.check({
      method: "DELETE",
      path: "/api/v1/mailboxes/{address}",
      url: "/api/v1/mailboxes/rest.gone",
      status: 404,
      error: "mailbox rest.gone does not exist",
    });
    await c.check({
      method: "DELETE",
      path: "/api/v1/mailboxes/{address}",
      url: `/api/v1/mailboxes/${"x".repeat(300)}`,
      status: 400,
    });
  });

  it("groups: list, info, reset; purge by filter; the server", async () => {
    const c = contract;
    const gbox = "rest.groups";
    await t.request(Subjects.mailboxCreate, { name: gbox });
    for (const text of ["a", "b", "c"])
      await t.request(Subjects.send(gbox), text, { headers: { "mq9-key": text } });
    await t.request(Subjects.fetch(gbox), { group_name: "g1", deliver: "earliest", config: { num_msgs: 2 } });
    const list = await c.check({
      method: "GET",
      path: "/api/v1/mailboxes/{address}/groups",
      url: `/api/v1/mailboxes/${gbox}/groups`,
      status: 200,
    });
    expect(list.body).toMatchObject({ groups: [{ name: "g1", lag: 3, leased: 2, pending: 1 }] });
    await c.check({
      method: "GET",
      path: "/api/v1/mailboxes/{address}/groups",
      url: "/api/v1/mailboxes/no.such/groups",
      status: 404,
      error: "mailbox no.such does not exist",
    });
    await c.check({
      method: "GET",
      path: "/api/v1/mailboxes/{address}/groups",
      url: `/api/v1/mailboxes/${"x".repeat(300)}/groups`,
      status: 400,
    });
    const info = await c.check({
      method: "GET",
      path: "/api/v1/mailboxes/{address}/groups/{group}",
      url: `/api/v1/mailboxes/${gbox}/groups/g1`,
      status: 200,
    });
    expect(info.body).toMatchObject({ group: { name: "g1", leased: 2 } });
    await c.check({
      method: "GET",
      path: "/api/v1/mailboxes/{address}/groups/{group}",
      url: `/api/v1/mailboxes/${gbox}/groups/nope`,
      status: 404,
      error: /^group nope of mailbox rest.groups does not exist/,
    });
    await c.check({
      method: "GET",
      path: "/api/v1/mailboxes/{address}/groups/{group}",
      url: `/api/v1/mailboxes/${"x".repeat(300)}/groups/g1`,
      status: 400,
    });
    const reset = await c.check({
      method: "POST",
      path: "/api/v1/mailboxes/{address}/groups/{group}/reset",
      url: `/api/v1/mailboxes/${gbox}/groups/g1/reset`,
      body: { deliver: "latest" },
      status: 200,
    });
    expect(reset.body).toMatchObject({ group: { name: "g1", lag: 0, leased: 0, pending: 0 } });
    await c.check({
      method: "POST",
      path: "/api/v1/mailboxes/{address}/groups/{group}/reset",
      url: `/api/v1/mailboxes/${gbox}/groups/g1/reset`,
      body: { deliver: "earliest", from_id: 1 },
      status: 400,
      error: /exactly one of/,
    });
    await c.check({
      method: "POST",
      path: "/api/v1/mailboxes/{address}/groups/{group}/reset",
      url: `/api/v1/mailboxes/${gbox}/groups/nope/reset`,
      body: { deliver: "earliest" },
      status: 404,
    });
    const releasePath = "/api/v1/mailboxes/{address}/groups/{group}/release";
    const released = await c.check({
      method: "POST",
      path: releasePath,
      url: `/api/v1/mailboxes/${gbox}/groups/g1/release`,
      body: { member: "nobody" },
      status: 200,
    });
    expect(released.body).toEqual({ released: 0 });
    await c.check({
      method: "POST",
      path: releasePath,
      url: `/api/v1/mailboxes/${gbox}/groups/g1/release`,
      body: { member: 7 },
      status: 400,
      error: /body.member/,
    });
    await c.check({
      method: "POST",
      path: releasePath,
      url: `/api/v1/mailboxes/${gbox}/groups/nope/release`,
      body: {},
      status: 404,
    });
    const purged = await c.check({
      method: "POST",
      path: "/api/v1/mailboxes/{address}/purge",
      url: `/api/v1/mailboxes/${gbox}/purge`,
      body: { key: "b" },
      status: 200,
    });
    expect(purged.body).toEqual({ purged: 1 });
    await c.check({
      method: "POST",
      path: "/api/v1/mailboxes/{address}/purge",
      url: `/api/v1/mailboxes/${gbox}/purge`,
      body: { priority: "loud" },
      status: 400,
    });
    expect(texts(await t.request(Subjects.query(gbox), {}))).toEqual(["a", "c"]);
    const server = await c.check({
      method: "GET",
      path: "/api/v1/server",
      url: "/api/v1/server",
      status: 200,
    });
    expect(server.body).toMatchObject({
      version: expect.any(String),
      store: expect.stringMatching(/^SQLite/),
      connections: expect.any(Number),
      cluster: null,
    });
  });

  it("messages: send with options, peek, query, fetch and ack in a group, delete", async () => {
    const c = contract;
    const address = "rest.msgs";
    await c.check({
      method: "POST",
      path: "/api/v1/mailboxes",
      url: "/api/v1/mailboxes",
      body: { name: address },
      status: 201,
    });
    const url = `/api/v1/mailboxes/${address}/messages`;
    const path = "/api/v1/mailboxes/{address}/messages";
    const sent = await c.check({
      method: "POST",
      path,
      url,
      body: {
        payload: "hello",
        priority: "urgent",
        key: "k1",
        tags: ["red", "blue"],
        ttl: 3600,
        headers: { "x-app": "1" },
      },
      status: 201,
    });
    const msgId = (sent.body as { msg_id: number }).msg_id;
    await c.check({
      method: "POST",
      path,
      url,
      body: { payload: b64("\u0000\u0001bin"), encoding: "base64" },
      status: 201,
    });
    const delayed = await c.check({
      method: "POST",
      path,
      url,
      body: { payload: "soon", delay: 3600 },
      status: 201,
    });
    expect(delayed.body).toEqual({ msg_id: -1 });
    await c.check({
      method: "POST",
      path,
      url,
      body: { payload: "x", priority: "high" },
      status: 400,
      error: /^invalid request: body.priority/,
    });
    await c.check({
      method: "POST",
      path,
      url,
      body: { payload: "x", key: "a\r\nmq9-priority: critical" },
      status: 400,
      error: /line breaks/,
    });
    await c.check({
      method: "POST",
      path,
      url,
      body: { payload: "%%", encoding: "base64" },
      status: 400,
      error: /base64/,
    });
    await c.check({ method: "POST", path, url, body: {}, status: 400, error: /body.payload/ });
    const missing = await t.request(Subjects.send("no.such"), "x");
    await c.check({
      method: "POST",
      path,
      url: "/api/v1/mailboxes/no.such/messages",
      body: { payload: "x" },
      status: 404,
      error: missing.error,
    });

    // What NATS clients see of a message sent over HTTP: the same options, the same header map.
    const nats = await t.request<{ messages: Record<string, unknown>[] }>(Subjects.query(address), {
      key: "k1",
    });
    expect(nats.messages[0]).toMatchObject({
      msg_id: msgId,
      priority: "urgent",
      key: "k1",
      tags: ["red", "blue"],
      headers: { "x-app": "1", "mq9-priority": "urgent" },
    });

    const peekPath = "/api/v1/mailboxes/{address}/peek";
    const peeked = await c.check({
      method: "GET",
      path: peekPath,
      url: `/api/v1/mailboxes/${address}/peek?limit=10`,
      status: 200,
    });
    const peekedItems = (peeked.body as { messages: { payload: string }[] }).messages;
    expect(peekedItems.map((m) => Buffer.from(m.payload, "base64").toString())).toEqual([
      "hello",
      "\u0000\u0001bin",
    ]);
    // Peeking consumed nothing: a group still gets both.
    await c.check({
      method: "GET",
      path: peekPath,
      url: `/api/v1/mailboxes/${address}/peek?limit=abc`,
      status: 400,
      error: /query.limit/,
    });
    await c.check({
      method: "GET",
      path: peekPath,
      url: "/api/v1/mailboxes/no.such/peek",
      status: 404,
      error: "mailbox no.such does not exist",
    });

    const queried = await c.check({ method: "GET", path, url: `${url}?tags=blue`, status: 200 });
    expect((queried.body as { messages: unknown[] }).messages).toHaveLength(1);
    await c.check({ method: "GET", path, url: `${url}?since=-1`, status: 400 });

    const fetchPath = "/api/v1/mailboxes/{address}/fetch";
    const fetched = await c.check({
      method: "POST",
      path: fetchPath,
      url: `/api/v1/mailboxes/${address}/fetch`,
      body: { group_name: "g", deliver: "earliest", config: { num_msgs: 10, max_wait_ms: 0 } },
      status: 200,
    });
    const items = (fetched.body as { messages: { msg_id: number }[] }).messages;
    expect(items).toHaveLength(2);
    // Raw payloads (an mq9 extension) are for NATS clients: over HTTP the JSON keeps base64.
    const stateless = await c.check({
      method: "POST",
      path: fetchPath,
      url: `/api/v1/mailboxes/${address}/fetch`,
      body: { deliver: "earliest", payload_format: "raw", header_format: "raw", config: { max_wait_ms: 0 } },
      status: 200,
    });
    const plain = (
      stateless.body as { messages: { payload: unknown; payload_len?: number; header_len?: number }[] }
    ).messages;
    expect(plain.map((m) => [typeof m.payload, m.payload_len, m.header_len])).toEqual([
      ["string", undefined, undefined],
      ["string", undefined, undefined],
    ]);
    await c.check({
      method: "POST",
      path: fetchPath,
      url: `/api/v1/mailboxes/${address}/fetch`,
      body: { deliver: "sometime" },
      status: 400,
      error: /body.deliver/,
    });
    const ackPath = "/api/v1/mailboxes/{address}/ack";
    await c.check({
      method: "POST",
      path: ackPath,
      url: `/api/v1/mailboxes/${address}/ack`,
      body: { group_name: "g", msg_id: items[1].msg_id },
      status: 200,
    });
    const again = await t.request(Subjects.fetch(address), { group_name: "g", config: { max_wait_ms: 0 } });
    expect(texts(again)).toEqual([]);
    await c.check({
      method: "POST",
      path: ackPath,
      url: `/api/v1/mailboxes/${address}/ack`,
      body: { group_name: "g", msg_id: 999999 },
      status: 404,
      error: "message not found",
    });
    await c.check({
      method: "POST",
      path: ackPath,
      url: `/api/v1/mailboxes/${address}/ack`,
      body: { msg_id: 1 },
      status: 400,
      error: /body.group_name/,
    });

    const delPath = "/api/v1/mailboxes/{address}/messages/{msg_id}";
    await c.check({ method: "DELETE", path: delPath, url: `${url}/${msgId}`, status: 200 });
    await c.check({
      method: "DELETE",
      path: delPath,
      url: `${url}/${msgId}`,
      status: 404,
      error: "message not found",
    });
    await c.check({
      method: "DELETE",
      path: delPath,
      url: `${url}/abc`,
      status: 400,
      error: "invalid msg_id: abc",
    });
    // Not a second subject token: `1.2` must not name message 2 of mailbox `<address>.1`.
    await c.check({
      method: "DELETE",
      path: delPath,
      url: `${url}/1.2`,
      status: 400,
      error: "invalid msg_id: 1.2",
    });
    // A method the path does not have: 405 with the methods it has.
    const put = await fetch(`${base}${url}/1`, { method: "PUT" });
    expect(put.status).toBe(405);
    expect(put.headers.get("allow")).toBe("DELETE");
    expect(await put.json()).toMatchObject({ code: "METHOD_NOT_ALLOWED" });
  });

  it("messages: browse pages past 100 newest first, by key, tag and priority", async () => {
    const c = contract;
    const browse = "/api/v1/mailboxes/{address}/browse";
    await t.request(Subjects.mailboxCreate, { name: "rest.browse" });
    for (let i = 0; i < 130; i++) {
      const headers: Record<string, string> = {};
      if (i % 10 === 0) headers["mq9-priority"] = "critical";
      if (i === 7) headers["mq9-key"] = "seven";
      if (i % 3 === 0) headers["mq9-tags"] = "third";
      expect((await t.request(Subjects.send("rest.browse"), `m${i}`, { headers })).error).toBe("");
    }
    type Page = {
      messages: { msg_id: number; payload: string; priority: string }[];
      next_before_id: number | null;
    };
    const seen: number[] = [];
    let before: number | null | undefined;
    do {
      const query = before === undefined ? "?limit=50" : `?limit=50&before_id=${before}`;
      const page = (
        await c.check({
          method: "GET",
          path: browse,
          url: `/api/v1/mailboxes/rest.browse/browse${query}`,
          status: 200,
        })
      ).body as Page;
      seen.push(...page.messages.map((m) => m.msg_id));
      before = page.next_before_id;
    } while (before !== null);
    // Every message once, newest first, across three pages.
    expect(seen).toHaveLength(130);
    expect(seen).toEqual([...seen].sort((a, b) => b - a));
    const first = (
      await c.check({
        method: "GET",
        path: browse,
        url: "/api/v1/mailboxes/rest.browse/browse?limit=1",
        status: 200,
      })
    ).body as Page;
    expect(Buffer.from(first.messages[0].payload, "base64").toString()).toBe("m129");
    const critical = (
      await c.check({
        method: "GET",
        path: browse,
        url: "/api/v1/mailboxes/rest.browse/browse?priority=critical&limit=200",
        status: 200,
      })
    ).body as Page;
    expect(critical.messages).toHaveLength(13);
    expect(critical.next_before_id).toBeNull();
    const keyed = (
      await c.check({
        method: "GET",
        path: browse,
        url: "/api/v1/mailboxes/rest.browse/browse?key=seven",
        status: 200,
      })
    ).body as Page;
    expect(keyed.messages.map((m) => Buffer.from(m.payload, "base64").toString())).toEqual(["m7"]);
    const tagged = (
      await c.check({
        method: "GET",
        path: browse,
        url: "/api/v1/mailboxes/rest.browse/browse?tag=third&priority=critical&limit=200",
        status: 200,
      })
    ).body as Page;
    expect(tagged.messages).toHaveLength(5); // 0, 30, 60, 90, 120
    await c.check({
      method: "GET",
      path: browse,
      url: "/api/v1/mailboxes/rest.browse/browse?priority=high",
      status: 400,
      error: /query.priority/,
    });
    await c.check({
      method: "GET",
      path: browse,
      url: "/api/v1/mailboxes/rest.browse/browse?limit=201",
      status: 400,
      error: /query.limit/,
    });
    await c.check({
      method: "GET",
      path: browse,
      url: "/api/v1/mailboxes/rest.nowhere/browse",
      status: 404,
      error: "mailbox rest.nowhere does not exist",
    });
  });

  it("a __proto__ key in a JSON body is dropped, not refused, and reaches nothing", async () => {
    const res = await fetch(`${base}/api/v1/mailboxes`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"name":"rest.proto","__proto__":{"ttl":5},"constructor":{"prototype":{"x":1}}}',
    });
    expect(res.status).toBe(201);
    const info = (await (await fetch(`${base}/api/v1/mailboxes/rest.proto`)).json()) as {
      mailbox: { ttl: number };
    };
    expect(info.mailbox.ttl).not.toBe(5);
    expect(({} as Record<string, unknown>).ttl).toBeUndefined();
  });

  it("dead letters: a copy stored before a restart is found by its key: settled, not moved or counted again", async () => {
    const box = "rest.remove.twice";
    await t.request(Subjects.mailboxCreate, { name: box });
    await t.request(Subjects.mailboxCreate, { name: `${box}.dlq` });
    const { msg_id } = await t.request<{ msg_id: number }>(Subjects.send(box), "job");
    await t.request(Subjects.fetch(box), {
      group_name: "g",
      deliver: "earliest",
      config: { max_wait_ms: 0 },
    });
    // What a broker killed between storing the copy and letting go of the message left behind.
    await t.request(Subjects.send(`${box}.dlq`), "copy", {
      headers: { "mq9-idempotency-key": `mq9-dlq:${box}:g:${msg_id}` },
    });
    const counted = async () =>
      Number(/^mq9_dead_letters_total (\d+)$/m.exec(await (await fetch(`${base}/metrics`)).text())?.[1] ?? 0);
    const before = await counted();
    await t.request(Subjects.nak(box), { group_name: "g", msg_id, terminal: true });
    let settled = false;
    for (let i = 0; i < 100 && !settled; i++) {
      const group = await t.request<{ group: { leased: number; lag: number } }>(Subjects.groupInfo(box), {
        group_name: "g",
      });
      settled = group.group.lag === 0;
      if (!settled) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(settled).toBe(true);
    expect(texts(await t.request(Subjects.query(`${box}.dlq`), {}))).toEqual(["copy"]);
    expect(await counted()).toBe(before);
  });

  it("dead letters: a NAK gives a message back, a terminal one sends it to dead letters, retry brings it back", async () => {
    const c = contract;
    const poison = "rest.poison";
    await t.request(Subjects.mailboxCreate, { name: poison });
    await t.request(Subjects.send(poison), "bad job");
    const fetched = await t.request(Subjects.fetch(poison), {
      group_name: "g",
      deliver: "earliest",
      config: { max_wait_ms: 0 },
    });
    const msgId = (fetched.messages as { msg_id: number }[])[0].msg_id;
    const nakPath = "/api/v1/mailboxes/{address}/nak";
    const given = await c.check({
      method: "POST",
      path: nakPath,
      url: `/api/v1/mailboxes/${poison}/nak`,
      body: { group_name: "g", msg_id: msgId, reason: "bad input", terminal: true },
      status: 200,
    });
    expect(given.body).toEqual({ dead_letter: true });
    await c.check({
      method: "POST",
      path: nakPath,
      url: `/api/v1/mailboxes/${poison}/nak`,
      body: { group_name: "g", msg_id: 99999 },
      status: 404,
      error: /message not found/,
    });
    await c.check({
      method: "POST",
      path: nakPath,
      url: `/api/v1/mailboxes/${poison}/nak`,
      body: { msg_id: msgId },
      status: 400,
      error: /body.group_name/,
    });
    // The sweep runs at once after a terminal NAK; the dead letter carries where it came from.
    let letters: { msg_id: number; headers: Record<string, string> }[] = [];
    for (let i = 0; i < 100 && letters.length === 0; i++) {
      const peek = await fetch(`${base}/api/v1/mailboxes/${poison}.dlq/peek`);
      if (peek.status === 200) letters = ((await peek.json()) as { messages: typeof letters }).messages;
      if (letters.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(letters[0].headers).toMatchObject({
      "mq9-dlq-mailbox": poison,
      "mq9-dlq-group": "g",
      "mq9-dlq-reason": "bad input",
      "mq9-dlq-delivery-count": "1",
    });
    const retryPath = "/api/v1/mailboxes/{address}/retry";
    await c.check({
      method: "POST",
      path: retryPath,
      url: `/api/v1/mailboxes/${poison}.dlq/retry`,
      body: { msg_id: -1 },
      status: 400,
      error: /body.msg_id/,
    });
    const retried = await c.check({
      method: "POST",
      path: retryPath,
      url: `/api/v1/mailboxes/${poison}.dlq/retry`,
      body: { msg_id: letters[0].msg_id },
      status: 200,
    });
    expect(retried.body).toEqual({ retried: 1 });
    await c.check({
      method: "POST",
      path: retryPath,
      url: `/api/v1/mailboxes/${poison}.dlq/retry`,
      body: { msg_id: letters[0].msg_id },
      status: 404,
      error: "message not found",
    });
    const back = await t.request(Subjects.fetch(poison), { group_name: "g", config: { max_wait_ms: 0 } });
    expect(texts(back)).toEqual(["bad job"]);
    // Operators see the moves in /metrics.
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/^mq9_dead_letters_total [1-9]\d*$/m);
  });

  it("agents: list with heartbeat status, get one, discover by tag and text with scores", async () => {
    const c = contract;
    await t.request(Subjects.agentRegister, {
      name: "translator",
      mailbox: "agents.translator",
      payload: "translates English to French",
      tags: ["lang"],
      ttl: 60,
    });
    await t.request(Subjects.agentRegister, {
      name: "summarizer",
      mailbox: "agents.summarizer",
      payload: "summarizes long documents",
    });
    const listed = await c.check({
      method: "GET",
      path: "/api/v1/agents",
      url: "/api/v1/agents",
      status: 200,
    });
    const agents = (listed.body as { agents: Record<string, unknown>[] }).agents;
    expect(agents.map((a) => [a.name, a.online])).toEqual([
      ["summarizer", false],
      ["translator", true],
    ]);
    expect(agents[1]._last_seen).toEqual(expect.any(Number));
    await c.check({ method: "GET", path: "/api/v1/agents", url: "/api/v1/agents?online=yes", status: 400 });
    const one = await c.check({
      method: "GET",
      path: "/api/v1/agents/{mailbox}",
      url: "/api/v1/agents/agents.translator",
      status: 200,
    });
    expect(one.body).toMatchObject({
      name: "translator",
      payload: "translates English to French",
      online: true,
    });
    await c.check({
      method: "GET",
      path: "/api/v1/agents/{mailbox}",
      url: "/api/v1/agents/nobody",
      status: 404,
      error: "agent not found",
    });
    await c.check({
      method: "GET",
      path: "/api/v1/agents/{mailbox}",
      url: "/api/v1/agents/%20",
      status: 404,
    });
    await c.check({
      method: "GET",
      path: "/api/v1/agents/{mailbox}",
      url: `/api/v1/agents/${"m".repeat(1025)}`,
      status: 400,
      error: /params.mailbox/,
    });
    await c.check({
      method: "GET",
      path: "/api/v1/agents/{mailbox}",
      url: `/api/v1/agents/${"m".repeat(5000)}`,
      status: 414,
      error: /the URL is too long/,
    });

    // Registration, of an agent or an MCP server, and its removal.
    await c.check({
      method: "POST",
      path: "/api/v1/agents/register",
      url: "/api/v1/agents/register",
      body: { kind: "mcp-server", url: "https://contract.example.com/mcp", name: "contract-tools" },
      status: 200,
    });
    await c.check({
      method: "POST",
      path: "/api/v1/agents/register",
      url: "/api/v1/agents/register",
      body: { kind: "mcp-server", mailbox: "agents.contract" },
      status: 400,
      error: /body/,
    });
    const servers = await c.check({
      method: "GET",
      path: "/api/v1/agents",
      url: "/api/v1/agents?kind=mcp-server",
      status: 200,
    });
    expect((servers.body as { agents: { name: string }[] }).agents.map((a) => a.name)).toEqual([
      "contract-tools",
    ]);
    await c.check({
      method: "POST",
      path: "/api/v1/agents/unregister",
      url: "/api/v1/agents/unregister",
      body: { url: "https://contract.example.com/mcp" },
      status: 200,
    });
    await c.check({
      method: "POST",
      path: "/api/v1/agents/unregister",
      url: "/api/v1/agents/unregister",
      body: {},
      status: 400,
      error: /body/,
    });

    const path = "/api/v1/agents/discover";
    const byText = await c.check({
      method: "POST",
      path,
      url: path,
      body: { mode: "text", query: "french" },
      status: 200,
    });
    const hits = (byText.body as { agents: Record<string, unknown>[] }).agents;
    expect(hits.map((a) => a.name)).toEqual(["translator"]);
    expect(hits[0]._score).toEqual(expect.any(Number));
    const byTag = await c.check({
      method: "POST",
      path,
      url: path,
      body: { mode: "tag", tags: ["lang"] },
      status: 200,
    });
    expect((byTag.body as { agents: { name: string }[] }).agents.map((a) => a.name)).toEqual(["translator"]);
    // Semantic and hybrid rank every agent by meaning (or say why they fell back to full text).
    for (const mode of ["semantic", "hybrid"]) {
      const ranked = await c.check({
        method: "POST",
        path,
        url: path,
        body: { mode, query: "translate into French" },
        status: 200,
      });
      const { agents: found, warning } = ranked.body as { agents: { name: string }[]; warning?: string };
      expect(found[0]?.name, warning).toBe("translator");
    }
    await c.check({
      method: "POST",
      path,
      url: path,
      body: { mode: "semantic" },
      status: 400,
      error: /body.query/,
    });
    await c.check({
      method: "POST",
      path,
      url: path,
      body: { mode: "fuzzy", query: "x" },
      status: 400,
      error: /body.mode/,
    });
  });

  it("connections: each client with its name, address, subscriptions and traffic, like /connz", async () => {
    const c = contract;
    const nc = await connect({ servers: t.url, name: "rest-connz" });
    try {
      nc.subscribe("connz.a");
      nc.subscribe("connz.b");
      for (let i = 0; i < 3; i++) nc.publish("connz.a", "hello");
      await nc.flush();
      type Conn = {
        name: string | null;
        address: string;
        subscriptions: number;
        msgs_in: number;
        msgs_out: number;
        bytes_in: number;
      };
      const mine = await until("the connection's traffic counted", async () => {
        const body = (
          await c.check({
            method: "GET",
            path: "/api/v1/connections",
            url: "/api/v1/connections?sort=msgs_in",
            status: 200,
          })
        ).body as { total: number; connections: Conn[] };
        const found = body.connections.find((one) => one.name === "rest-connz");
        return found && found.msgs_out >= 3 ? found : undefined;
      });
      expect(mine).toMatchObject({ subscriptions: 2, msgs_in: 3, bytes_in: 15 });
      expect(mine.address).toMatch(/^127\.0\.0\.1:\d+$/);
      await c.check({
        method: "GET",
        path: "/api/v1/connections",
        url: "/api/v1/connections?sort=age",
        status: 400,
        error: /query.sort/,
      });
    } finally {
      await nc.close();
    }
  });

  it("metrics: summary, history and the live stream", async () => {
    const c = contract;
    const summary = await c.check({
      method: "GET",
      path: "/api/v1/metrics/summary",
      url: "/api/v1/metrics/summary",
      status: 200,
    });
    expect(summary.body).toMatchObject({
      registry: true,
      now: { mailboxes: expect.any(Number), connections: 1 },
    });
    const history = await c.check({
      method: "GET",
      path: "/api/v1/metrics/history",
      url: "/api/v1/metrics/history?range=3600",
      status: 200,
    });
    expect(history.body).toMatchObject({ interval_s: 5 });
    await c.check({
      method: "GET",
      path: "/api/v1/metrics/history",
      url: "/api/v1/metrics/history?range=86401",
      status: 400,
      error: /query.range/,
    });
    // A mailbox's own history (rest-history.test.ts fills one with traffic).
    await t.request(Subjects.mailboxCreate, { name: "rest.history" });
    const mailbox = "/api/v1/mailboxes/{address}/history";
    const own = await c.check({
      method: "GET",
      path: mailbox,
      url: "/api/v1/mailboxes/rest.history/history",
      status: 200,
    });
    expect(own.body).toMatchObject({ interval_s: 5, groups: [] });
    await c.check({
      method: "GET",
      path: mailbox,
      url: "/api/v1/mailboxes/rest.history/history?range=ten",
      status: 400,
      error: "invalid request: query.range: must be a whole number",
    });
    await c.check({
      method: "GET",
      path: mailbox,
      url: "/api/v1/mailboxes/rest.nowhere/history",
      status: 404,
      error: "mailbox rest.nowhere does not exist",
    });
    await c.check({ method: "GET", path: "/api/v1/auth", url: "/api/v1/auth", status: 200 });
    // A broker of its own has no cluster to list (cluster.test.ts in the CLI covers the nodes).
    const cluster = await c.check({
      method: "GET",
      path: "/api/v1/cluster",
      url: "/api/v1/cluster",
      status: 200,
    });
    expect(cluster.body).toEqual({ clustered: false, nodes: [] });
    const forget = "/api/v1/cluster/nodes/{node}";
    await c.check({
      method: "DELETE",
      path: forget,
      url: "/api/v1/cluster/nodes/n1",
      status: 404,
      error: /runs on its own/,
    });
    await c.check({
      method: "DELETE",
      path: forget,
      url: `/api/v1/cluster/nodes/${"n".repeat(300)}`,
      status: 400,
      error: /params.node/,
    });
    // Forgetting a node that is down: cluster-roster.test.ts in the CLI, with real nodes.
    c.covered.get(`DELETE ${forget}`)?.add(200);
    await c.check({ method: "GET", path: "/api/v1/openapi.json", url: "/api/v1/openapi.json", status: 200 });

    const aborted = new AbortController();
    const res = await fetch(`${base}/api/v1/stream`, { signal: aborted.signal });
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    const reader = res.body!.getReader();
    let text = "";
    while (!text.includes("event: sample")) text += new TextDecoder().decode((await reader.read()).value);
    aborted.abort();
    const data = text.split("\n").find((line) => line.startsWith("data: "))!;
    expect(JSON.parse(data.slice(6))).toMatchObject({
      messages: expect.any(Number),
      sends_per_s: expect.any(Number),
    });
    c.covered.set("GET /api/v1/stream", new Set([200]));
  });

  it("ARD: the manifest and the ARD API answer as their document says, errors in ARD's envelope", async () => {
    const c = contract;
    const registered = await t.request(Subjects.agentRegister, {
      mailbox: "ard.contract",
      name: "contract checker",
      skills: [{ name: "review", description: "Reviews contracts for risky clauses", tags: ["legal"] }],
    });
    expect(registered.error).toBe("");
    for (const path of ["/.well-known/ard.json", "/.well-known/ai-catalog.json"]) {
      await c.check({ method: "GET", path, url: path, status: 200 });
      await c.check({ method: "GET", path, url: `${path}?page=0`, status: 400 });
    }
    const ard = "/api/v1/ard";
    const search = await c.check({
      method: "POST",
      path: `${ard}/search`,
      url: `${ard}/search`,
      body: { query: { text: "review contracts for risky clauses", filter: { tags: "legal" } } },
      status: 200,
    });
    expect((search.body as { results: { displayName: string }[] }).results[0].displayName).toBe(
      "contract checker",
    );
    await c.check({
      method: "POST",
      path: `${ard}/search`,
      url: `${ard}/search`,
      body: { query: {} },
      status: 400,
    });
    await c.check({ method: "GET", path: `${ard}/agents`, url: `${ard}/agents?pageSize=5`, status: 200 });
    await c.check({ method: "GET", path: `${ard}/agents`, url: `${ard}/agents?pageSize=500`, status: 400 });
    const one = `${ard}/agents/{identifier}`;
    await c.check({
      method: "GET",
      path: one,
      url: `${ard}/agents/${encodeURIComponent("urn:air:agent.localhost:agent:ard.contract")}`,
      status: 200,
    });
    await c.check({ method: "GET", path: one, url: `${ard}/agents/not-a-urn`, status: 400 });
    await c.check({
      method: "GET",
      path: one,
      url: `${ard}/agents/${encodeURIComponent("urn:air:agent.localhost:agent:ard.nobody")}`,
      status: 404,
    });
    const facets = { resultType: { facets: [{ field: "tags" }] } };
    await c.check({
      method: "POST",
      path: `${ard}/explore`,
      url: `${ard}/explore`,
      body: facets,
      status: 200,
    });
    await c.check({
      method: "POST",
      path: `${ard}/explore`,
      url: `${ard}/explore`,
      body: { resultType: {} },
      status: 400,
    });
    // Import: a manifest served here, with one inline card.
    const { createServer } = await import("node:http");
    const manifest = {
      specVersion: "1.0",
      entries: [
        {
          identifier: "urn:air:publisher.test:agent:imported",
          displayName: "imported",
          type: "application/a2a-agent-card+json",
          data: { name: "imported", description: "an imported agent" },
        },
      ],
    };
    const site = createServer((_req, res) => res.writeHead(200).end(JSON.stringify(manifest)));
    await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
    const siteUrl = `http://127.0.0.1:${(site.address() as import("node:net").AddressInfo).port}`;
    try {
      const imported = await c.check({
        method: "POST",
        path: `${ard}/import`,
        url: `${ard}/import`,
        body: { source: `${siteUrl}/m.json`, mailbox: "ard.{name}" },
        status: 200,
      });
      expect((imported.body as { imported: { mailbox: string }[] }).imported[0].mailbox).toBe("ard.imported");
      await c.check({
        method: "POST",
        path: `${ard}/import`,
        url: `${ard}/import`,
        body: { source: siteUrl },
        status: 400,
      });
    } finally {
      await new Promise((resolve) => site.close(resolve));
    }
    await t.request(Subjects.agentUnregister, { mailbox: "ard.imported" });
    await t.request(Subjects.agentUnregister, { mailbox: "ard.contract" });
  });

  it("every route of the document was called, and given bad input where it documents 400", () => {
    expect(contract.uncovered()).toEqual([]);
  });
});

describe("REST API v1 with the registry off", () => {
  it("agent routes answer 503 with the reason; the rest works", async () => {
    const t = await startTestBroker({ registry: false, http: { port: 0 } });
    try {
      const base = `http://127.0.0.1:${t.broker.http!.port}`;
      const res = await fetch(`${base}/api/v1/agents`);
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({
        code: "REGISTRY_OFF",
        error: expect.stringMatching(/registry is turned off/),
      });
      const summary = await (await fetch(`${base}/api/v1/metrics/summary`)).json();
      expect(summary).toMatchObject({ registry: false, now: { agents: null } });
    } finally {
      await t.close();
    }
  });
});

describe("REST API v1 with a token", () => {
  it("refuses calls without it (but tells the login page the scheme), accepts them with it", async () => {
    const t = await startTestBroker({ auth: { token: "s3cret" }, http: { port: 0 } });
    try {
      const base = `http://127.0.0.1:${t.broker.http!.port}`;
      const refused = await fetch(`${base}/api/v1/mailboxes`);
      expect(refused.status).toBe(401);
      expect(refused.headers.get("www-authenticate")).toBe('Bearer realm="mq9"');
      const fromPage = await fetch(`${base}/api/v1/mailboxes`, { headers: { "x-mq9-dashboard": "1" } });
      expect(fromPage.status).toBe(401);
      expect(fromPage.headers.get("www-authenticate")).toBeNull();
      expect(await (await fetch(`${base}/api/v1/auth`)).json()).toEqual({
        required: true,
        schemes: ["bearer"],
      });
      const document = await (
        await fetch(`${base}/api/v1/openapi.json`, { headers: { authorization: "Bearer s3cret" } })
      ).json();
      const contract = new RestContract(document, base, { authorization: "Bearer s3cret" });
      await contract.check({
        method: "GET",
        path: "/api/v1/mailboxes",
        url: "/api/v1/mailboxes",
        status: 200,
      });
      const anonymous = new RestContract(document, base);
      await anonymous.check({
        method: "GET",
        path: "/api/v1/mailboxes",
        url: "/api/v1/mailboxes",
        status: 401,
      });
    } finally {
      await t.close();
    }
  });
});

describe("REST API v1 with users", () => {
  it("runs mq9 calls as the admin who made the request, and refuses other users", async () => {
    const t = await startTestBroker({
      auth: {
        users: [
          { user: "admin", password: "a-pass", admin: true },
          { user: "bob", password: "b-pass" },
        ],
      },
      http: { port: 0 },
    });
    try {
      const base = `http://127.0.0.1:${t.broker.http!.port}`;
      const as = (user: string, password: string) => ({
        authorization: `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`,
        "content-type": "application/json",
      });
      expect(await (await fetch(`${base}/api/v1/auth`)).json()).toEqual({
        required: true,
        schemes: ["basic"],
      });
      const created = await fetch(`${base}/api/v1/mailboxes`, {
        method: "POST",
        headers: as("admin", "a-pass"),
        body: JSON.stringify({ name: "admin.box" }),
      });
      expect(created.status).toBe(201);
      const sent = await fetch(`${base}/api/v1/mailboxes/admin.box/messages`, {
        method: "POST",
        headers: as("admin", "a-pass"),
        body: JSON.stringify({ payload: "hi" }),
      });
      expect(sent.status).toBe(201);
      const peeked = (await (
        await fetch(`${base}/api/v1/mailboxes/admin.box/peek`, { headers: as("admin", "a-pass") })
      ).json()) as { messages: unknown[] };
      expect(peeked.messages).toHaveLength(1);
      const refused = await fetch(`${base}/api/v1/mailboxes`, { headers: as("bob", "b-pass") });
      expect(refused.status).toBe(403);
    } finally {
      await t.close();
    }
  });
});

describe("REST API v1 over a store without the inspection operations", () => {
  it("answers 501 for listing, describing, purging and deleting mailboxes; the mq9 operations work", async () => {
    const inner = new SqliteStore({ dataDir: ":memory:" });
    const hidden = new Set([
      "mailboxStats",
      "groupStats",
      "totals",
      "deleteMailbox",
      "purgeMailbox",
      "resetGroup",
    ]);
    const store = new Proxy(inner, {
      get: (target, name) => {
        if (typeof name === "string" && hidden.has(name)) return undefined;
        const value = Reflect.get(target, name);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const t = await startTestBroker({ store, http: { port: 0 } });
    try {
      const base = `http://127.0.0.1:${t.broker.http!.port}`;
      const document = await (await fetch(`${base}/api/v1/openapi.json`)).json();
      const contract = new RestContract(document, base);
      await contract.check({
        method: "GET",
        path: "/api/v1/mailboxes",
        url: "/api/v1/mailboxes",
        status: 501,
        error: /cannot list/,
      });
      await contract.check({
        method: "POST",
        path: "/api/v1/mailboxes",
        url: "/api/v1/mailboxes",
        body: { name: "plain.box" },
        status: 201,
      });
      await contract.check({
        method: "GET",
        path: "/api/v1/mailboxes/{address}",
        url: "/api/v1/mailboxes/plain.box",
        status: 501,
      });
      await contract.check({
        method: "POST",
        path: "/api/v1/mailboxes/{address}/messages",
        url: "/api/v1/mailboxes/plain.box/messages",
        body: { payload: "x" },
        status: 201,
      });
      await contract.check({
        method: "POST",
        path: "/api/v1/mailboxes/{address}/purge",
        url: "/api/v1/mailboxes/plain.box/purge",
        status: 501,
      });
      await contract.check({
        method: "DELETE",
        path: "/api/v1/mailboxes/{address}",
        url: "/api/v1/mailboxes/plain.box",
        status: 501,
      });
      await contract.check({
        method: "GET",
        path: "/api/v1/mailboxes/{address}/history",
        url: "/api/v1/mailboxes/plain.box/history",
        status: 501,
      });
      expect(texts(await t.request(Subjects.query("plain.box"), {}))).toEqual(["x"]);
    } finally {
      await t.close();
    }
  });
});
