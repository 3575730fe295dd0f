import { type Msg, type NatsConnection, headers as natsHeaders, StringCodec } from "nats";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import type { Mq9Request } from "../src/transport/mq9-request.js";
import { type Started, sleep, startListener, waitUntil } from "./nats-harness.js";

const sc = StringCodec();
let s: Started;

beforeEach(async () => {
  s = await startListener();
});

afterEach(async () => {
  await s.stop();
});

/** Collects the string payloads a subscription receives. */
function collect(nc: NatsConnection, subject: string, opts: { queue?: string; max?: number } = {}): string[] {
  const got: string[] = [];
  nc.subscribe(subject, {
    ...opts,
    callback: (_err, msg) => got.push(`${msg.subject}:${sc.decode(msg.data)}`),
  });
  return got;
}

describe("nats pub/sub with the nats client", () => {
  test("a message published by one client reaches another client's subscription", async () => {
    const [a, b] = [await s.nats(), await s.nats()];
    const got = collect(b, "greet");
    await b.flush();
    a.publish("greet", sc.encode("hello"));
    a.publish("other", sc.encode("ignored"));
    await a.flush();
    await waitUntil(() => got.length === 1);
    await b.flush();
    expect(got).toEqual(["greet:hello"]);
  });

  test("`*` matches exactly one token and `>` one or more", async () => {
    const [a, b] = [await s.nats(), await s.nats()];
    const star = collect(b, "orders.*.created");
    const tail = collect(b, "orders.>");
    await b.flush();
    for (const subject of [
      "orders.1.created",
      "orders.1.2.created",
      "orders.9",
      "orders",
      "orders.x.deleted",
    ]) {
      a.publish(subject, sc.encode("m"));
    }
    await a.flush();
    await waitUntil(() => tail.length === 4);
    await b.flush();
    expect(star).toEqual(["orders.1.created:m"]);
    expect(tail).toEqual(["orders.1.created:m", "orders.1.2.created:m", "orders.9:m", "orders.x.deleted:m"]);
  });

  test("queue group — each message goes to exactly one member, and to every plain subscriber", async () => {
    const members = [await s.nats(), await s.nats(), await s.nats()];
    const perMember = members.map((nc) => collect(nc, "jobs", { queue: "workers" }));
    const watcher = await s.nats();
    const watched = collect(watcher, "jobs");
    await Promise.all([...members, watcher].map((nc) => nc.flush()));
    const pub = await s.nats();
    const n = 60;
    for (let i = 0; i < n; i++) pub.publish("jobs", sc.encode(String(i)));
    await pub.flush();
    await waitUntil(() => watched.length === n && perMember.flat().length >= n);
    await Promise.all(members.map((nc) => nc.flush()));
    const all = perMember.flat().sort();
    expect(all).toEqual(Array.from({ length: n }, (_, i) => `jobs:${i}`).sort());
    // Random pick: with 60 messages every member gets some (chance of an empty member ~1e-10).
    for (const got of perMember) expect(got.length).toBeGreaterThan(0);
  });

  test("request/reply between two clients", async () => {
    const [requester, responder] = [await s.nats(), await s.nats()];
    responder.subscribe("math.double", {
      callback: (_err, msg) => msg.respond(sc.encode(String(Number(sc.decode(msg.data)) * 2))),
    });
    await responder.flush();
    const replies = await Promise.all(
      [1, 2, 3].map((n) => requester.request("math.double", sc.encode(String(n)))),
    );
    expect(replies.map((m) => sc.decode(m.data))).toEqual(["2", "4", "6"]);
  });

  test("no responders — a request to a subject nobody listens on fails at once, not by timeout", async () => {
    const nc = await s.nats();
    const started = Date.now();
    await expect(nc.request("nobody.home", sc.encode("?"), { timeout: 10_000 })).rejects.toMatchObject({
      code: "503",
    });
    // Generous bound: only checks it did not wait for the 10 s timeout.
    expect(Date.now() - started).toBeLessThan(5000);
  });

  test("subscribe with max auto-unsubscribes after that many messages", async () => {
    const [a, b] = [await s.nats(), await s.nats()];
    const sub = b.subscribe("limited", { max: 3 });
    await b.flush();
    for (let i = 0; i < 5; i++) a.publish("limited", sc.encode(String(i)));
    await a.flush();
    const got: string[] = [];
    for await (const msg of sub) got.push(sc.decode(msg.data));
    expect(got).toEqual(["0", "1", "2"]);
    await waitUntil(() => s.listener.subscriptionCount === 0, 3000, "server-side unsubscribe");
  });

  test("echo:false — a client's own publishes skip its subscriptions but reach others", async () => {
    const quiet = await s.nats({ noEcho: true });
    const mine = collect(quiet, "chat");
    const other = await s.nats();
    const theirs = collect(other, "chat");
    await Promise.all([quiet.flush(), other.flush()]);
    quiet.publish("chat", sc.encode("from-quiet"));
    other.publish("chat", sc.encode("from-other"));
    await Promise.all([quiet.flush(), other.flush()]);
    await waitUntil(() => theirs.length === 2 && mine.length === 1);
    await quiet.flush();
    expect(mine).toEqual(["chat:from-other"]);
  });

  test("headers round-trip between clients (HPUB → HMSG)", async () => {
    const [a, b] = [await s.nats(), await s.nats()];
    const received = new Promise<Msg>((resolve) =>
      b.subscribe("with.headers", { callback: (_e, m) => resolve(m) }),
    );
    await b.flush();
    const h = natsHeaders();
    h.append("X-Trace", "abc-123");
    h.append("X-Multi", "one");
    h.append("X-Multi", "two");
    a.publish("with.headers", sc.encode("body"), { headers: h });
    const msg = await received;
    expect(sc.decode(msg.data)).toBe("body");
    expect(msg.headers?.get("X-Trace")).toBe("abc-123");
    expect(msg.headers?.values("X-Multi")).toEqual(["one", "two"]);
  });

  test("server publish reaches one member per queue group and every plain subscriber", async () => {
    const [a, b] = [await s.nats(), await s.nats()];
    const qa = collect(a, "srv.>", { queue: "q" });
    const qb = collect(b, "srv.>", { queue: "q" });
    const plain = collect(b, "srv.x");
    await Promise.all([a.flush(), b.flush()]);
    for (let i = 0; i < 10; i++) s.listener.publish("srv.x", sc.encode(String(i)));
    await waitUntil(() => plain.length === 10 && qa.length + qb.length === 10);
    await sleep(20);
    expect(qa.length + qb.length).toBe(10);
  });
});

describe("nats listener — service interception", () => {
  test("setService takes $mq9.AI publishes away from subscribers and its reply reaches nc.request()", async () => {
    const seen: Mq9Request[] = [];
    s.listener.setService({
      answer(req, respond) {
        // Keep copies: the handler contract only promises the bytes are not changed later.
        seen.push({
          ...req,
          payload: Uint8Array.from(req.payload),
          header: req.header && Uint8Array.from(req.header),
        });
        respond(`echo:${sc.decode(req.payload)}`, false);
      },
    });
    const [client, snoop] = [await s.nats(), await s.nats()];
    const snooped = collect(snoop, ">");
    await snoop.flush();
    const reply = await client.request("$mq9.AI.MAILBOX.CREATE", sc.encode("{}"));
    expect(sc.decode(reply.data)).toBe("echo:{}");
    const h = natsHeaders();
    h.set("mq9-priority", "critical");
    await client.request("$mq9.AI.MSG.SEND.box", sc.encode("hi"), { headers: h, timeout: 2000 });
    client.publish("plain.subject", sc.encode("routed"));
    await client.flush();
    await waitUntil(() => snooped.includes("plain.subject:routed"));
    await snoop.flush();
    // The snoop sees the replies on _INBOX (routed) but never the $mq9.AI requests themselves.
    expect(snooped.filter((m) => m.startsWith("$mq9"))).toEqual([]);
    expect(seen.map((r) => r.subject)).toEqual(["$mq9.AI.MAILBOX.CREATE", "$mq9.AI.MSG.SEND.box"]);
    expect(seen[0].header).toBeUndefined();
    expect(seen[0].principal).toBeUndefined();
    const rawHeader = Buffer.from(seen[1].header ?? []).toString();
    expect(rawHeader.startsWith("NATS/1.0\r\n")).toBe(true);
    expect(rawHeader).toContain("mq9-priority: critical\r\n");
    expect(rawHeader.endsWith("\r\n\r\n")).toBe(true);
    expect(sc.decode(seen[1].payload)).toBe("hi");
    // One signal per connection, aborted when it closes (a long-poll on its behalf then stops).
    expect(seen[0].signal).toBe(seen[1].signal);
    expect(seen[0].signal?.aborted).toBe(false);
    await client.close();
    await waitUntil(() => seen[0].signal?.aborted === true);
  });

  test("a throwing service handler does not break the publishing connection", async () => {
    s.listener.setService({
      answer() {
        throw new Error("handler bug");
      },
    });
    const nc = await s.nats();
    nc.publish("$mq9.AI.BOOM", sc.encode("x"));
    await nc.flush();
    const got = collect(nc, "still.works");
    await nc.flush();
    nc.publish("still.works", sc.encode("yes"));
    await waitUntil(() => got.length === 1);
  });
});
