import { NatsListener } from "@mq9/broker/internal";
import { boxName, eventually, sleep, startBroker, type TestBroker } from "@mq9/testkit";
import { type NatsConnection, connect as natsConnect } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agentInfoOf, connect, type Mq9Client, type Mq9Error } from "../src/index.js";

interface Seen {
  subject: string;
  body: unknown;
}

/**
 * The request shapes, checked on the wire: a bare NATS-protocol listener with a plain
 * NATS client answering `$mq9.AI.AGENT.>` by hand and recording what arrived.
 */
describe("registry calls on the wire", () => {
  let listener: NatsListener;
  let responder: NatsConnection;
  let client: Mq9Client;
  const seen: Seen[] = [];
  let discoverReply = '{"error":"","agents":[]}';

  beforeAll(async () => {
    listener = new NatsListener({ host: "127.0.0.1", port: 0 });
    const { port } = await listener.listen();
    responder = await natsConnect({ servers: `127.0.0.1:${port}` });
    responder.subscribe("$mq9.AI.AGENT.>", {
      callback: (_err, msg) => {
        seen.push({ subject: msg.subject, body: JSON.parse(new TextDecoder().decode(msg.data)) });
        msg.respond(
          new TextEncoder().encode(msg.subject.endsWith("DISCOVER") ? discoverReply : '{"error":""}'),
        );
      },
    });
    await responder.flush();
    client = await connect(`mq9://127.0.0.1:${port}`);
  });
  afterAll(async () => {
    await client.close();
    await responder.close();
    await listener.close({ drainTimeoutMs: 0 });
  });

  const last = () => seen[seen.length - 1];

  it("register sends the caller's object unchanged", async () => {
    const card = {
      name: "demo.ts.translator",
      mailbox: "mq9://broker/demo.ts.translator",
      payload: "Translates EN, ZH, JA",
      agent_card: { name: "translator", skills: [{ id: "t", name: "translate" }] },
      ttl: 120,
    };
    await client.register(card);
    expect(last()).toEqual({ subject: "$mq9.AI.AGENT.REGISTER", body: card });
  });

  it("unregister sends {mailbox} and/or {name}", async () => {
    await client.unregister({ mailbox: "agents.a" });
    expect(last()).toEqual({ subject: "$mq9.AI.AGENT.UNREGISTER", body: { mailbox: "agents.a" } });
    await client.unregister({ name: "a" });
    expect(last().body).toEqual({ name: "a" });
  });

  it("report sends name, mailbox, report_info and extra keys", async () => {
    await client.report({ name: "a", mailbox: "agents.a", report_info: "running", load: 0.5 });
    expect(last()).toEqual({
      subject: "$mq9.AI.AGENT.REPORT",
      body: { name: "a", mailbox: "agents.a", report_info: "running", load: 0.5 },
    });
  });

  it("discover sends the given keys, asks for lean entries, and returns the agents as they came", async () => {
    discoverReply = JSON.stringify({
      error: "",
      agents: [{ name: "a", mailbox: "agents.a", agent_info: "x", skills: ["t"] }],
    });
    const agents = await client.discover({ text: "translate", limit: 5, page: 2 });
    expect(last()).toEqual({
      subject: "$mq9.AI.AGENT.DISCOVER",
      body: { text: "translate", limit: 5, page: 2, include_agent_info: false },
    });
    expect(agents).toEqual([{ name: "a", mailbox: "agents.a", agent_info: "x", skills: ["t"] }]);
    await client.discover();
    expect(last().body).toEqual({ include_agent_info: false });
    await client.discover({ semantic: "who translates?", include_agent_info: true });
    expect(last().body).toEqual({ semantic: "who translates?", include_agent_info: true });
    await expect(client.discover("who" as never)).rejects.toMatchObject({ code: "INVALID_REQUEST" });
  });

  it("agentInfoOf works out a lean entry's agent_info: payload, agent_card, or the body", async () => {
    const card = { name: "c", skills: [{ id: "s" }] };
    discoverReply = JSON.stringify({
      error: "",
      agents: [
        { name: "p", mailbox: "agents.p", payload: "plain text", _score: 0.5 },
        { name: "c", mailbox: "agents.c", agent_card: card },
        { name: "b", mailbox: "agents.b", skills: ["t"], _status: { load: 1 }, _last_seen: 5, _score: 0.1 },
        { name: "o", mailbox: "agents.o", agent_info: "its own" },
      ],
    });
    const [p, c, b, o] = await client.discover({ semantic: "x" });
    expect(p.agent_info).toBeUndefined();
    expect(agentInfoOf(p)).toBe("plain text");
    expect(agentInfoOf(c)).toBe(JSON.stringify(card));
    expect(JSON.parse(agentInfoOf(b))).toEqual({ name: "b", mailbox: "agents.b", skills: ["t"] });
    expect(agentInfoOf(o)).toBe("its own");
  });

  it("heartbeat REPORTs at once and then on every interval until stopped", async () => {
    const before = seen.length;
    let beat = 0;
    const heartbeat = client.heartbeat({
      name: "a",
      mailbox: "agents.a",
      intervalMs: 50,
      reportInfo: () => `running, beat=${++beat}`,
    });
    await eventually(() => heartbeat.sent >= 3);
    await heartbeat.stop();
    const sentAtStop = heartbeat.sent;
    await sleep(150);
    const reports = seen.slice(before).filter((s) => s.subject === "$mq9.AI.AGENT.REPORT");
    expect(reports.length).toBe(sentAtStop);
    expect(reports[0].body).toEqual({ name: "a", mailbox: "agents.a", report_info: "running, beat=1" });
    expect(reports[2].body).toEqual({ name: "a", mailbox: "agents.a", report_info: "running, beat=3" });
  });

  it("register and report refuse what is not an object, before sending", async () => {
    const count = seen.length;
    await expect(client.register([] as never)).rejects.toMatchObject({ code: "INVALID_REQUEST" });
    expect(() => client.heartbeat({})).toThrow(/name or mailbox/);
    expect(seen.length).toBe(count);
  });
});

/** The same calls against our broker's registry, once it answers (it is being built alongside). */
describe("registry on the real broker", () => {
  let t: TestBroker;
  let client: Mq9Client;
  let available = false;

  beforeAll(async () => {
    t = await startBroker();
    client = await t.client();
    available = await client.discover().then(
      () => true,
      (err: Mq9Error) => !/registry is (not enabled|turned off)/.test(err.message),
    );
  });
  afterAll(() => t.close());

  it("register, discover, report and unregister an agent", async (ctx) => {
    if (!available) ctx.skip();
    const mailbox = await client.createMailbox({ name: boxName("agents") });
    const name = `translator-${process.pid}`;
    await client.register({ name, mailbox, payload: "Translates English to Japanese and back" });
    const all = await client.discover({ limit: 100 });
    const entry = all.find((a) => a.mailbox === mailbox);
    expect(entry).toMatchObject({ name, mailbox, payload: "Translates English to Japanese and back" });
    const found = await client.discover({ text: "japanese" });
    expect(found.map((a) => a.mailbox)).toContain(mailbox);
    // The lean entry's agent_info, worked out by the client, is the broker's.
    const [full] = await client.discover({ text: "japanese", include_agent_info: true });
    expect(full.agent_info).toBe("Translates English to Japanese and back");
    const lean = found.find((a) => a.mailbox === mailbox)!;
    expect(lean.agent_info).toBeUndefined();
    expect(agentInfoOf(lean)).toBe(full.agent_info);
    await client.report({ mailbox, report_info: "running" });
    await client.unregister({ mailbox });
    expect((await client.discover({ limit: 100 })).some((a) => a.mailbox === mailbox)).toBe(false);
  });

  it("AGENT_NOT_FOUND for a REPORT about an unknown agent", async (ctx) => {
    if (!available) ctx.skip();
    const err = await client.report({ mailbox: boxName("nobody") }).catch((e: Mq9Error) => e);
    expect(err).toMatchObject({ code: "AGENT_NOT_FOUND" });
  });

  it("background failures without an onError go to the client's logger", async (ctx) => {
    if (!available) ctx.skip();
    const lines: string[] = [];
    const logged = await t.client({ logger: { warn: (line) => lines.push(line) } });
    const nobody = boxName("nobody");
    const heartbeat = logged.heartbeat({ mailbox: nobody, intervalMs: 50 });
    const box = await logged.createMailbox({ name: boxName("logged") });
    await logged.send(box, "x");
    const consumer = logged.consume(
      box,
      () => {
        throw new Error("the handler failed");
      },
      { group: "g", deliver: "earliest" },
    );
    await eventually(
      () =>
        lines.includes(`mq9 heartbeat of ${nobody}: agent not found`) &&
        lines.includes(`mq9 consumer of ${box}: the handler failed`),
    );
    // An onError of its own wins over the logger.
    const own: Error[] = [];
    const other = boxName("nobody");
    const quiet = logged.heartbeat({ mailbox: other, intervalMs: 50, onError: (e) => own.push(e) });
    await eventually(() => own.length >= 2);
    await Promise.all([heartbeat.stop(), quiet.stop(), consumer.stop()]);
    expect(lines.filter((l) => l.includes(other))).toEqual([]);
    expect(own[0].message).toBe("agent not found");
  });

  it("a heartbeat keeps an agent with a ttl discoverable", async (ctx) => {
    if (!available) ctx.skip();
    const mailbox = await client.createMailbox({ name: boxName("agents") });
    await client.register({ name: "beating", mailbox, payload: "heartbeat test", ttl: 1 });
    const heartbeat = client.heartbeat({ mailbox, intervalMs: 200, reportInfo: "alive" });
    await sleep(1_500);
    expect((await client.discover({ limit: 100 })).some((a) => a.mailbox === mailbox)).toBe(true);
    await heartbeat.stop();
    expect(heartbeat.sent).toBeGreaterThanOrEqual(5);
  });
});
