import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEnvelope, type Envelope, type Orchestrator, replyTo, sendEnvelope } from "../src/index.js";
import { type FunctionAgent, gate, startWorld, until, type World } from "./harness.js";

const ask = (fields: Partial<Envelope> & { payload?: unknown }): Envelope => ({
  ...createEnvelope({ msg_type: "query", source: "tester", target: "*", payload: fields.payload ?? null }),
  ...fields,
});

describe("loop guards that alert", () => {
  let world: World;
  let orchestrator: Orchestrator;
  const logs: { level: string; message: string; fields: Record<string, unknown> }[] = [];

  beforeAll(async () => {
    world = await startWorld();
    orchestrator = await world.startOrchestrator({
      log: (level, message, fields) => logs.push({ level, message, fields }),
    });
  });
  afterAll(() => world.close());

  const lettersOf = (traceId: string, n = 1) =>
    until(`${n} dead letter(s) of trace ${traceId}`, () =>
      orchestrator.deadLetterList({ traceId }).then((l) => (l.length >= n ? l : undefined)),
    );

  it("each stop is logged with its trace and path, and counted", async () => {
    const client = await world.client();
    const looping = {
      ...ask({ target: "nobody-known", payload: 1 }),
      hops: 5,
      max_hops: 5,
      path: ["tester", "x", "y"],
    };
    await sendEnvelope(client, orchestrator.names.router, looping);
    const [letter] = await lettersOf(looping.trace_id);
    expect(letter.reason).toBe("max_hops exhausted (5 of 5)");
    const line = await until("the warning", () =>
      logs.find((l) => l.fields.trace_id === looping.trace_id && l.message.startsWith("loop guard stopped")),
    );
    expect(line).toMatchObject({ level: "warn", fields: { kind: "max_hops", path: ["tester", "x", "y"] } });
    expect(orchestrator.metrics().loopStops.max_hops).toBeGreaterThanOrEqual(1);
  });

  it("a result that bounces is stopped at once: routed by capability, or answering twice", async () => {
    const client = await world.client();
    const question = ask({ target: "someone" });
    const answer = { ...replyTo(question, "someone", "result", "42"), target: "*", capability: "x" };
    await sendEnvelope(client, orchestrator.names.router, answer);
    const [first] = await lettersOf(question.trace_id);
    expect(first.reason).toMatch(
      /^bounce: a result goes back to whoever asked, it is not routed by capability/,
    );
    await world.agent({ name: "asker", capabilities: [] }, () => undefined);
    const again = replyTo({ ...question, source: "asker" }, "someone", "result", "42");
    await sendEnvelope(client, orchestrator.names.router, again);
    await sendEnvelope(client, orchestrator.names.router, { ...again, msg_id: `${again.msg_id}x` });
    const letters = await lettersOf(question.trace_id, 2);
    expect(letters[1].reason).toBe(
      `bounce: message ${question.msg_id} was answered to asker already (tester -> someone -> asker)`,
    );
    expect(orchestrator.metrics().loopStops.bounce).toBeGreaterThanOrEqual(2);
  });

  it("the same msg_id handed to the router twice is routed once", async () => {
    const got: string[] = [];
    await world.agent({ name: "d-sink", capabilities: [] }, (m) => {
      got.push(m.msg_id);
    });
    const client = await world.client();
    const message = ask({ target: "d-sink" });
    await sendEnvelope(client, orchestrator.names.router, message);
    await sendEnvelope(client, orchestrator.names.router, message);
    const [letter] = await lettersOf(message.trace_id);
    expect(letter.reason).toBe(`duplicate: msg_id ${message.msg_id} was routed before`);
    await until("the first to arrive", () => got.length > 0);
    expect(got).toEqual([message.msg_id]);
  });

  it("hops carry across the messages of one trace, also a new message an agent sends", async () => {
    const seen = gate<Envelope>();
    await world.agent({ name: "h-end", capabilities: ["h.end"] }, (m) => seen.open(m));
    // Forwards with Agent.send(), not the context: inside a handler it continues the trace.
    const forwarder: FunctionAgent = await world.agent({ name: "h-forward", capabilities: [] }, async (m) => {
      if (m.msg_type === "query")
        await forwarder.send({ target: "*", capability: "h.end", payload: m.payload });
    });
    const client = await world.client();
    const start = { ...ask({ target: "h-forward", payload: "go" }), hops: 3 };
    await sendEnvelope(client, orchestrator.names.router, start);
    const arrived = await seen.promise;
    expect(arrived).toMatchObject({ trace_id: start.trace_id, hops: 4, source: "h-forward" });
    // Another SDK's agent that builds a fresh message (hops 0) in that trace: the router counts on.
    const fresh = createEnvelope({
      msg_type: "query",
      source: "h-end",
      target: "h-forward",
      payload: "again",
      trace_id: start.trace_id,
      max_hops: 5,
    });
    await sendEnvelope(client, orchestrator.names.router, fresh);
    const [letter] = await lettersOf(start.trace_id);
    expect(letter.reason).toBe("max_hops exhausted (5 of 5)");
  });

  it("with trackSends off, this.send() in a handler starts a trace; the context's send continues it", async () => {
    const seen: Envelope[] = [];
    await world.agent({ name: "t-end", capabilities: ["t.end"] }, (m) => {
      if (m.msg_type === "query") seen.push(m);
    });
    const forwarder: FunctionAgent = await world.agent(
      { name: "t-forward", capabilities: [] },
      async (m, { send }) => {
        if (m.msg_type !== "query") return;
        await forwarder.send({ target: "*", capability: "t.end", payload: "own" });
        await send({ target: "*", capability: "t.end", payload: "continued" });
      },
      { trackSends: false },
    );
    const client = await world.client();
    const start = ask({ target: "t-forward", payload: "go" });
    await sendEnvelope(client, orchestrator.names.router, start);
    await until("both to arrive", () => seen.length >= 2);
    const own = seen.find((m) => m.payload === "own")!;
    const continued = seen.find((m) => m.payload === "continued")!;
    expect(own.trace_id).not.toBe(start.trace_id);
    expect(own.hops).toBe(0);
    expect(continued).toMatchObject({ trace_id: start.trace_id, hops: 1, source: "t-forward" });
  });

  it("broadcast: true delivers a copy to every live agent with the capability but the sender", async () => {
    const got: Record<string, string[]> = { "b-one": [], "b-two": [], "b-three": [] };
    for (const name of Object.keys(got)) {
      await world.agent({ name, capabilities: ["b.all"] }, (m) => {
        if (m.msg_type === "query") got[name].push(m.msg_id);
      });
    }
    await until("the directory to know them", () =>
      Object.keys(got).every((n) => orchestrator.agents().some((a) => a.name === n && a.alive)),
    );
    const client = await world.client();
    const message = { ...ask({ capability: "b.all", payload: "news" }), source: "b-one", broadcast: true };
    await sendEnvelope(client, orchestrator.names.router, message);
    await until("both copies", () => got["b-two"].length === 1 && got["b-three"].length === 1);
    expect(got["b-one"]).toEqual([]);
    expect(new Set([got["b-two"][0], got["b-three"][0]]).size).toBe(2);
  });

  it("a msg_id handled before an agent restart is not handled again after it", async () => {
    let handled = 0;
    const manifest = { name: "r-once", capabilities: [] };
    const handler = () => {
      handled++;
      return "done";
    };
    const first = await world.agent(manifest, handler);
    const client = await world.client();
    await client.createMailbox({ name: "r.asker" }).catch(() => undefined);
    const message = ask({ target: "r-once", reply_to: "r.asker" });
    await sendEnvelope(client, first.mailbox, message);
    await until("the answer", async () => (await client.query("r.asker")).length === 1);
    await first.stop();
    const second = await world.agent(manifest, handler);
    await sendEnvelope(client, second.mailbox, message);
    await until("the re-sent message to be seen as a duplicate", () => second.stats.duplicates === 1);
    expect(handled).toBe(1);
  });

  it("a msg_id without reply_to handled before an agent restart is not handled again after it", async () => {
    const handled: string[] = [];
    const manifest = { name: "r-noreply", capabilities: [] };
    const handler = (m: Envelope) => {
      handled.push(m.msg_id);
      return undefined;
    };
    const first = await world.agent(manifest, handler);
    const client = await world.client();
    const messages = [0, 1, 2].map(() => ask({ target: "r-noreply" }));
    for (const m of messages) await sendEnvelope(client, first.mailbox, m);
    await until("all three handled", () => first.stats.handled === 3);
    await first.stop();
    const second = await world.agent(manifest, handler);
    const fresh = ask({ target: "r-noreply" });
    for (const m of [...messages, fresh]) await sendEnvelope(client, second.mailbox, m);
    await until("the new message to be handled", () => second.stats.handled === 1);
    await until("the re-sent ones to be seen as duplicates", () => second.stats.duplicates === 3);
    expect(handled).toEqual([...messages, fresh].map((m) => m.msg_id));
  });
});
