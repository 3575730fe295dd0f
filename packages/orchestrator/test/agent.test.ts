import { connect } from "@mq9/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AgentManifest,
  createEnvelope,
  type Envelope,
  ManifestError,
  type Orchestrator,
  resolveManifest,
  sendEnvelope,
} from "../src/index.js";
import { FunctionAgent, gate, startWorld, until, type World } from "./harness.js";

describe("agent SDK", () => {
  let world: World;
  let orchestrator: Orchestrator;

  beforeAll(async () => {
    world = await startWorld({
      templates: {
        "crash.yaml": "name: crash\nsteps:\n  - id: work\n    agent: k-worker\n",
      },
    });
    orchestrator = await world.startOrchestrator();
  });
  afterAll(() => world.close());

  /** A query to an agent from a test client, answered into `replyTo`. */
  const query = (target: string, payload: unknown, replyTo?: string): Envelope =>
    createEnvelope({ msg_type: "query", source: "tester", target, payload, reply_to: replyTo });

  it("registers its manifest and heartbeats its load, which the orchestrator sees", async () => {
    const hold = gate();
    const agent = await world.agent(
      {
        name: "g-busy",
        capabilities: ["g.work"],
        description: "holds work",
        max_concurrency: 3,
        weight: 2,
        tags: ["test"],
      },
      () => hold.promise,
    );
    const client = await world.client();
    const [entry] = await client.discover({ text: "holds work" });
    expect(entry).toMatchObject({
      name: "g-busy",
      mailbox: "agent.g.busy",
      agent_manifest: { capabilities: ["g.work"], weight: 2, max_concurrency: 3 },
    });
    for (let i = 0; i < 2; i++) await sendEnvelope(client, agent.mailbox, query("g-busy", i));
    await until("the agent to hold two messages", () => agent.load === 2);
    const seen = await until("the orchestrator to see load 2 from a heartbeat", () =>
      orchestrator.agents().find((a) => a.name === "g-busy" && a.reportedLoad === 2),
    );
    expect(seen).toMatchObject({ alive: true, weight: 2, maxConcurrency: 3, capabilities: ["g.work"] });
    hold.open();
    await until("the load to drop back to 0", () =>
      orchestrator.agents().find((a) => a.name === "g-busy" && a.reportedLoad === 0),
    );
  });

  it("max_concurrency — a slow agent's backlog waits in its own mailbox and does not starve others", async () => {
    let running = 0;
    let most = 0;
    const release = gate();
    const slow = await world.agent({ name: "g-slow", capabilities: [], max_concurrency: 2 }, async () => {
      running++;
      most = Math.max(most, running);
      await release.promise;
      running--;
    });
    const handledFast: number[] = [];
    const fast = await world.agent({ name: "g-fast", capabilities: [] }, (m) => {
      handledFast.push(m.payload as number);
    });
    const client = await world.client();
    for (let i = 0; i < 6; i++) await sendEnvelope(client, slow.mailbox, query("g-slow", i));
    for (let i = 0; i < 3; i++) await sendEnvelope(client, fast.mailbox, query("g-fast", i));
    await until("the fast agent to handle all of its messages", () => handledFast.length === 3);
    expect(slow.load).toBe(2);
    release.open();
    await until("the slow agent to work through its backlog", () => slow.stats.handled === 6);
    expect(most).toBe(2);
  });

  it("de-duplication — at-least-once delivery of one msg_id runs the handler once", async () => {
    let calls = 0;
    const agent = await world.agent({ name: "g-once", capabilities: [] }, () => {
      calls++;
      return "done";
    });
    const client = await world.client();
    await client.createMailbox({ name: "g.once.replies" });
    const message = query("g-once", null, "g.once.replies");
    await sendEnvelope(client, agent.mailbox, message);
    await sendEnvelope(client, agent.mailbox, message);
    await until("both deliveries to be taken", () => agent.stats.handled + agent.stats.duplicates === 2);
    expect(calls).toBe(1);
    expect(agent.stats.duplicates).toBe(1);
    const replies = await client.query("g.once.replies");
    expect(replies.map((r) => r.json<Envelope>().in_reply_to)).toEqual([message.msg_id]);
  });

  it("agent crash mid-step — the lease brings the message back to another instance; the step completes once", async () => {
    const stuck = gate();
    let firstStarted = 0;
    let secondRuns = 0;
    // Instance 1 takes the step and never answers: its connection dies under it.
    const client1 = await connect(world.url);
    const first = new FunctionAgent(
      { name: "k-worker", capabilities: [] },
      async () => {
        firstStarted++;
        await stuck.promise;
        return "from the crashed instance";
      },
      { heartbeatMs: 100, leaseMs: 1_000, onError: () => {} },
    );
    await first.start(client1);
    const task = await orchestrator.submit("crash", "job");
    await until("instance 1 to take the step", () => firstStarted === 1);
    await client1.nats.close();
    // Instance 2 of the same agent shares its inbox and consumer group.
    await world.agent(
      { name: "k-worker", capabilities: [] },
      () => {
        secondRuns++;
        return "from instance 2";
      },
      { leaseMs: 1_000 },
    );
    const done = await orchestrator.wait(task.task_id, 20_000);
    expect(done.status).toBe("completed");
    expect(done.result).toBe("from instance 2");
    expect(done.steps.work.attempts).toBe(1);
    expect([firstStarted, secondRuns]).toEqual([1, 1]);
    stuck.open();
    await first.stop();
  });

  it("stop({ timeoutMs }) — a handler deaf to its abort signal holds stop no longer; its message comes back, un-ACKed", async () => {
    const never = gate();
    let signal: AbortSignal | undefined;
    const warned: unknown[] = [];
    const first = new FunctionAgent(
      { name: "g-deaf", capabilities: [] },
      async (_message, context) => {
        signal = context.signal;
        await never.promise;
        return "from the stopped instance";
      },
      {
        heartbeatMs: 100,
        leaseMs: 1_000,
        onError: () => {},
        logger: { debug() {}, info() {}, warn: (fields) => warned.push(fields), error() {} },
      },
    );
    await first.start(world.url);
    const client = await world.client();
    await client.createMailbox({ name: "g.deaf.replies" });
    const message = query("g-deaf", "job", "g.deaf.replies");
    await sendEnvelope(client, first.mailbox, message);
    await until("the handler to run", () => signal !== undefined);
    // Before the timeout existed this never resolved: stop waited for the handler for good.
    await first.stop({ timeoutMs: 100 });
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toMatchObject({ name: "AgentStopped" });
    expect(warned).toEqual([{ running: 1, timeout_ms: 100 }]);
    // Not ACKed: the next instance gets the message after its lease and answers it.
    await world.agent({ name: "g-deaf", capabilities: [] }, () => "from the next instance", {
      leaseMs: 1_000,
    });
    const replies = await until("the next instance's answer", async () => {
      const found = await client.query("g.deaf.replies");
      return found.length > 0 ? found : undefined;
    });
    expect(replies.map((r) => r.json<Envelope>().payload)).toEqual(["from the next instance"]);
    never.open();
  });

  it("a malformed message in an inbox goes to the dead letters with the reason; the agent keeps working", async () => {
    const handled: unknown[] = [];
    const agent = await world.agent({ name: "g-robust", capabilities: [] }, (m) => {
      handled.push(m.payload);
    });
    const client = await world.client();
    await client.send(agent.mailbox, "this is not an envelope");
    await client.send(agent.mailbox, {
      msg_id: "x",
      trace_id: "t",
      source: "s",
      target: "g-robust",
      msg_type: "shout",
    });
    await sendEnvelope(client, agent.mailbox, query("g-robust", "fine"));
    await until("the good message to be handled", () => handled.length === 1);
    const letters = await orchestrator.deadLetterList();
    const reasons = letters.filter((l) => l.raw?.includes("g-robust") || l.raw === "this is not an envelope");
    expect(reasons.map((l) => l.reason)).toEqual([
      expect.stringMatching(
        /^malformed envelope: msg_id \d+ is not JSON, so it cannot be an orchestrated message$/,
      ),
      "malformed envelope: 'msg_type' must be one of query, result, error, heartbeat, cancel, compensate",
    ]);
  });

  it("a handler failure goes to the agent's logger, with the msg_id, when no onError is given", async () => {
    const logged: { fields: unknown; text: string | undefined }[] = [];
    const logger = {
      debug() {},
      info() {},
      warn() {},
      error: (fields: object | string, text?: string) => logged.push({ fields, text }),
    };
    const agent = await world.agent(
      { name: "g-logged", capabilities: [] },
      () => {
        throw new Error("the handler broke");
      },
      { onError: undefined, logger },
    );
    const client = await world.client();
    const message = query("g-logged", "anything");
    await sendEnvelope(client, agent.mailbox, message);
    const [entry] = await until("the failure to be logged", () => (logged.length > 0 ? logged : undefined));
    expect(entry).toEqual({ fields: { msg_id: message.msg_id }, text: "the handler broke" });
  });

  it("a manifest with mistakes is refused, saying what to fix", () => {
    expect(() => resolveManifest({ name: "Bad Name", capabilities: [] })).toThrow(ManifestError);
    expect(() => resolveManifest({ name: "ok", capabilities: ["x"], max_concurrency: 0 })).toThrow(
      "agent 'ok': max_concurrency must be a whole number >= 1",
    );
    expect(() => resolveManifest({ name: "ok", capabilities: ["has space"] })).toThrow(
      `agent 'ok': capability "has space" is not valid: use letters, digits, '_', '.', ':' or '-' (at most 100)`,
    );
    const typo = { name: "ok", capabilites: ["x"] } as unknown as AgentManifest;
    expect(() => resolveManifest(typo)).toThrow(
      "agent 'ok': unknown key 'capabilites'; did you mean 'capabilities'?",
    );
    expect(() => resolveManifest({ capabilities: ["x"] } as unknown as AgentManifest)).toThrow(
      "'name' is required: the agent's name, lowercase letters, digits, '.', '_' or '-' (at most 100)",
    );
    expect(() => resolveManifest({ name: "ok" } as AgentManifest)).toThrow(
      `agent 'ok': 'capabilities' is required: a list of what it does, e.g. ["summarize"]`,
    );
    // An endpoint that names no mailbox and is no URL is a mistake, not a reason to use the default.
    expect(() => resolveManifest({ name: "ok", capabilities: [], endpoint: "agent/ok" })).toThrow(
      "agent 'ok': endpoint 'agent/ok' is neither a mail address, mq9://host:port/<mail address>, nor a URL",
    );
    expect(() => resolveManifest({ name: "ok", capabilities: [], endpoint: "mq9://h:1/bad name" })).toThrow(
      "agent 'ok': endpoint 'mq9://h:1/bad name' does not end in a valid mail address",
    );
    expect(
      resolveManifest({ name: "ok", capabilities: [], endpoint: "https://ok.example/a2a" }).mailbox,
    ).toBe("agent.ok");
    expect(resolveManifest({ name: "ok", capabilities: ["a", "a"] })).toMatchObject({
      capabilities: ["a"],
      max_concurrency: 1,
      weight: 1,
      mailbox: "agent.ok",
    });
  });
});
