import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEnvelope, type Envelope, type Orchestrator, sendEnvelope } from "../src/index.js";
import { gate, startWorld, until, type World } from "./harness.js";

const ask = (fields: Partial<Envelope> & { payload?: unknown }): Envelope => ({
  ...createEnvelope({ msg_type: "query", source: "tester", target: "*", payload: fields.payload ?? null }),
  ...fields,
});

describe("router", () => {
  let world: World;
  let orchestrator: Orchestrator;

  beforeAll(async () => {
    world = await startWorld();
    orchestrator = await world.startOrchestrator({ traceBudget: 5 });
  });
  afterAll(() => world.close());

  async function shares(capability: string, n: number): Promise<Record<string, number>> {
    const counts: Record<string, number> = {};
    for (let i = 0; i < n; i++) {
      const decision = await orchestrator.router.decide(ask({ capability }));
      const name = "agent" in decision ? decision.agent.name : `dead: ${decision.reason}`;
      counts[name] = (counts[name] ?? 0) + 1;
    }
    return counts;
  }

  it("explicit target — delivered to the named agent's mailbox", async () => {
    const got = gate<Envelope>();
    await world.agent({ name: "x-named", capabilities: [] }, (m) => got.open(m));
    const client = await world.client();
    await sendEnvelope(client, orchestrator.names.router, ask({ target: "x-named", payload: "hi" }));
    expect(await got.promise).toMatchObject({ target: "x-named", payload: "hi", source: "tester" });
  });

  it("capability — shares work by weight among live agents", async () => {
    await world.agent(
      { name: "w-heavy", capabilities: ["w.cap"], weight: 3, max_concurrency: 100 },
      () => {},
    );
    await world.agent(
      { name: "w-light", capabilities: ["w.cap"], weight: 1, max_concurrency: 100 },
      () => {},
    );
    // The directory learns of new agents on its next read; shares are measured once it knows both.
    await until("the directory to know both agents", () =>
      ["w-heavy", "w-light"].every((name) => orchestrator.agents().some((a) => a.name === name)),
    );
    const counts = await shares("w.cap", 400);
    expect(Object.keys(counts).sort()).toEqual(["w-heavy", "w-light"]);
    // A smooth weighted round-robin: exactly 3:1 when nothing is in progress.
    expect(counts).toEqual({ "w-heavy": 300, "w-light": 100 });
  });

  it("capability — an agent whose heartbeat reports it full gets nothing while another has room", async () => {
    const hold = gate();
    const busy = await world.agent(
      { name: "l-busy", capabilities: ["l.cap"], max_concurrency: 1 },
      () => hold.promise,
    );
    await world.agent({ name: "l-idle", capabilities: ["l.cap"], max_concurrency: 1 }, () => {});
    const client = await world.client();
    await sendEnvelope(client, busy.mailbox, ask({ target: "l-busy" }));
    await until("the busy agent's heartbeat to report it full", () =>
      orchestrator.agents().find((a) => a.name === "l-busy" && a.reportedLoad === 1),
    );
    expect(await shares("l.cap", 50)).toEqual({ "l-idle": 50 });
    hold.open();
  });

  it("capability — skips an agent that stopped heartbeating; with nobody left the message is a dead letter", async () => {
    const gone = await world.agent(
      { name: "z-gone", capabilities: ["z.cap"], max_concurrency: 10 },
      () => {},
    );
    await world.agent({ name: "z-stays", capabilities: ["z.cap"], max_concurrency: 10 }, () => {});
    await until(
      "both agents to be known",
      () => orchestrator.agents().filter((a) => a.capabilities.includes("z.cap")).length === 2,
    );
    await gone.stop();
    await until("the stopped agent to count as dead", () =>
      orchestrator.agents().find((a) => a.name === "z-gone" && !a.alive),
    );
    expect(await shares("z.cap", 50)).toEqual({ "z-stays": 50 });
    const nobody = await orchestrator.router.deliver(ask({ capability: "nobody.has.this" }));
    expect(nobody).toMatchObject({
      delivered: false,
      deadLetter: { reason: "no live agent has capability 'nobody.has.this'" },
    });
  });

  it("loop A -> B -> A is stopped by cycle detection on the trace path", async () => {
    await world.agent({ name: "la", capabilities: [] }, (m, context) => {
      if (m.msg_type === "query") void context.send({ target: "lb", payload: "ping" });
    });
    await world.agent({ name: "lb", capabilities: [] }, (m, context) => {
      if (m.msg_type === "query") void context.send({ target: "la", payload: "pong" });
    });
    const client = await world.client();
    const start = ask({ target: "la", payload: "go" });
    await sendEnvelope(client, orchestrator.names.router, start);
    const [letter] = await until("the loop to be dead-lettered", () =>
      orchestrator.deadLetterList({ traceId: start.trace_id }).then((l) => (l.length > 0 ? l : undefined)),
    );
    expect(letter.reason).toBe("cycle: tester -> la -> lb -> la");
    expect(letter.envelope).toMatchObject({ source: "lb", target: "la", hops: 2 });
  });

  it("a chain longer than max_hops is stopped when the hops run out", async () => {
    for (let i = 1; i <= 5; i++) {
      await world.agent({ name: `hop${i}`, capabilities: [] }, (m, context) => {
        if (m.msg_type === "query") void context.send({ target: `hop${i + 1}`, payload: i });
      });
    }
    const client = await world.client();
    const start = { ...ask({ target: "hop1", payload: 0 }), max_hops: 3 };
    await sendEnvelope(client, orchestrator.names.router, start);
    const [letter] = await until("the chain to be dead-lettered", () =>
      orchestrator.deadLetterList({ traceId: start.trace_id }).then((l) => (l.length > 0 ? l : undefined)),
    );
    expect(letter.reason).toBe("max_hops exhausted (3 of 3)");
    expect(letter.envelope).toMatchObject({ source: "hop3", target: "hop4" });
  });

  it("a trace that sends more than its budget has the rest dead-lettered", async () => {
    const got: number[] = [];
    await world.agent({ name: "b-fan", capabilities: [] }, async (m, context) => {
      if (m.msg_type !== "query") return;
      for (let i = 0; i < 8; i++) await context.send({ target: "b-sink", payload: i });
    });
    await world.agent({ name: "b-sink", capabilities: [], max_concurrency: 8 }, (m) => {
      if (m.msg_type === "query") got.push(m.payload as number);
    });
    const client = await world.client();
    const start = ask({ target: "b-fan" });
    await sendEnvelope(client, orchestrator.names.router, start);
    const letters = await until("the over-budget messages to be dead-lettered", () =>
      orchestrator.deadLetterList({ traceId: start.trace_id }).then((l) => (l.length === 4 ? l : undefined)),
    );
    // 5 per trace: the first message plus 4 of the 8 children.
    expect(letters.map((l) => l.reason)).toEqual(
      Array(4).fill("trace budget exhausted (5 messages per trace)"),
    );
    await until("the sink to get the four within budget", () => got.length === 4);
  });

  it("a malformed message in the router mailbox is a dead letter; routing goes on", async () => {
    const client = await world.client();
    await client.send(orchestrator.names.router, { msg_id: "m1", hello: "world" });
    const got = gate<Envelope>();
    await world.agent({ name: "x-after", capabilities: [] }, (m) => got.open(m));
    await sendEnvelope(client, orchestrator.names.router, ask({ target: "x-after", payload: "still here" }));
    expect((await got.promise).payload).toBe("still here");
    const letters = await orchestrator.deadLetterList();
    expect(letters.map((l) => l.reason)).toContain(
      "malformed envelope: 'trace_id' must be a non-empty string",
    );
  });
});

describe("router — intent", () => {
  let world: World;
  let orchestrator: Orchestrator;

  beforeAll(async () => {
    // The default embedder (Universal Sentence Encoder lite) for real semantic discovery.
    world = await startWorld({ broker: { registry: { preloadEmbedder: true } } });
    orchestrator = await world.startOrchestrator();
  }, 120_000);
  afterAll(() => world.close());

  it("picks the agent whose description means what the request asks, with no shared keyword", async () => {
    const got: Record<string, string[]> = { translator: [], payroll: [], weather: [] };
    const describe = {
      translator: "Translates documents between English, Chinese, Japanese and Korean.",
      payroll: "Computes salaries, withholding and payslips for employees.",
      weather: "Gives rain and temperature forecasts for cities.",
    };
    for (const [name, description] of Object.entries(describe)) {
      await world.agent({ name, capabilities: [name], description }, (m) => {
        if (m.msg_type === "query") got[name].push(m.intent ?? "");
      });
    }
    await until("the agents to be known", () => orchestrator.agents().length >= 3);
    const client = await world.client();
    const intents = [
      "put this letter into another language",
      "how much will staff be paid this month",
      "is it going to be sunny tomorrow",
    ];
    for (const intent of intents) await sendEnvelope(client, orchestrator.names.router, ask({ intent }));
    await until("every request to arrive", () => Object.values(got).flat().length === 3, 60_000);
    expect(got).toEqual({ translator: [intents[0]], payroll: [intents[1]], weather: [intents[2]] });

    // Nobody's description is close enough: a dead letter naming the closest agent, not a wild guess.
    const unrelated = "recompile the kernel with a realtime scheduler";
    await sendEnvelope(client, orchestrator.names.router, ask({ intent: unrelated }));
    await until("the request to be dead-lettered", async () =>
      (await orchestrator.deadLetterList()).some((l) =>
        l.reason.includes("no live agent matches the intent"),
      ),
    );
    const letter = (await orchestrator.deadLetterList()).find((l) => l.reason.includes("recompile"))!;
    expect(letter.reason).toMatch(/the closest was \w+ at 0\.\d+, below the threshold 0\.2$/);
    expect(Object.values(got).flat()).toHaveLength(3);

    // The fallback: no live agent has the capability asked for, so the intent decides.
    const fallback = ask({ capability: "nobody.has.it", intent: "translate this note into Japanese" });
    await sendEnvelope(client, orchestrator.names.router, fallback);
    await until("the fallback to reach the translator", () => got.translator.length === 2, 60_000);
    expect(got.translator[1]).toBe("translate this note into Japanese");
  }, 90_000);
});
