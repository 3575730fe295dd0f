import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DESIGN_TEMPLATE } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  Agent,
  createEnvelope,
  type Envelope,
  formatProblem,
  type MessageContext,
  type Orchestrator,
  parseTemplate,
  sendEnvelope,
} from "../src/index.js";
import { FAST_AGENT, gate, http, startWorld, until, type World } from "./harness.js";

const problemsOf = (text: string) => parseTemplate(text, "t.yaml").problems.map(formatProblem);

describe("the design's template form", () => {
  it("loads the design's template unchanged: a fan-out of three and a merge", () => {
    const { template, problems } = parseTemplate(DESIGN_TEMPLATE, "design.yaml");
    expect(problems).toEqual([]);
    expect(template!.name).toBe("content_analysis");
    const step = (id: string) => template!.steps.find((s) => s.id === id)!;
    expect(step("summarize").dependsOn).toEqual([]);
    expect(step("extract_keywords").dependsOn).toEqual([]);
    expect(step("merge_result")).toMatchObject({
      merge: ["summarize", "extract_keywords", "check_quality"],
      mergeStyle: "fields",
      performer: undefined,
    });
  });

  it("a pipeline step without depends_on runs after the step before it", () => {
    const { template } = parseTemplate(
      "task_type: p\nsteps:\n  - id: a\n    capability: x\n    mode: pipeline\n  - id: b\n    capability: y\n    mode: pipeline\n  - id: c\n    capability: z\n    mode: fan_out\n",
      "p.yaml",
    );
    expect(template!.steps.map((s) => s.dependsOn)).toEqual([[], ["a"], []]);
  });

  it("says precisely what is wrong with a real mistake in the design form", () => {
    expect(problemsOf("task_type: t\nsteps:\n  - id: a\n    capability: x\n    mode: parallel\n")).toEqual([
      "t.yaml:5:11: step 'a': 'mode' must be pipeline, fan_out, merge (got 'parallel')",
    ]);
    expect(
      problemsOf("task_type: t\nsteps:\n  - id: a\n    capability: x\n  - id: m\n    mode: merge\n"),
    ).toEqual(["t.yaml:5:5: step 'm': a merge step lists the steps it merges in 'depends_on' (or 'merge')"]);
    expect(
      problemsOf(
        "task_type: t\nsteps:\n  - id: a\n    capability: x\n  - id: m\n    mode: merge\n    capability: y\n    depends_on: [a]\n",
      ),
    ).toEqual(["t.yaml:5:5: step 'm': a merge step has no 'agent' or 'capability'"]);
    expect(problemsOf("name: a\ntask_type: b\nsteps:\n  - id: s\n    capability: x\n")).toEqual([
      "t.yaml:2:12: template: 'name' (a) and 'task_type' (b) differ; give one of them",
    ]);
    expect(problemsOf("steps:\n  - id: s\n    capability: x\n")).toEqual([
      "t.yaml:1:1: template: 'name' (or 'task_type') is required",
    ]);
    expect(problemsOf("task_type: t\nsteps:\n  - id: s\n    mode: fan_out\n")).toEqual([
      "t.yaml:3:5: step 's': needs an 'agent', a 'capability', or mode merge with 'depends_on'",
    ]);
  });

  it("a typo gets the name it most likely meant: a key, a mode, a step in depends_on", () => {
    const typos = [
      "task_type: t",
      "steps:",
      "  - id: summarize",
      "    capabilty: x",
      "    mode: pipline",
      "  - id: m",
      "    mode: merge",
      "    depend_on: [summarize]",
      "    depends_on: [sumarize]",
    ].join("\n");
    // The misspelt capability is one problem, not also "needs an 'agent', a 'capability'…".
    expect(problemsOf(typos)).toEqual([
      "t.yaml:4:5: step 'summarize': unknown key 'capabilty'; did you mean 'capability'?",
      "t.yaml:5:11: step 'summarize': 'mode' must be pipeline, fan_out, merge (got 'pipline'); did you mean 'pipeline'?",
      "t.yaml:6:5: step 'm' depends on unknown step 'sumarize'; did you mean 'summarize'?",
      "t.yaml:8:5: step 'm': unknown key 'depend_on'; did you mean 'depends_on'?",
    ]);
    // Inside retry and compensate too: one problem per typo.
    const nested =
      "task_type: t\nsteps:\n  - id: a\n    capability: x\n    retry: {cont: 2}\n    compensate: {capabilty: undo}\n";
    expect(problemsOf(nested)).toEqual([
      "t.yaml:5:13: step 'a' retry: unknown key 'cont'; did you mean 'count'?",
      "t.yaml:6:18: step 'a' compensate: unknown key 'capabilty'; did you mean 'capability'?",
    ]);
    // A condition names its steps too: the problem points at the condition, not at depends_on.
    const when =
      "task_type: t\nsteps:\n  - id: quality\n    capability: x\n  - id: pub\n    capability: y\n    when: outputs.qualty.score > 0.5\n";
    expect(problemsOf(when)).toEqual([
      "t.yaml:7:11: step 'pub': its 'when' reads unknown step 'qualty'; did you mean 'quality'?",
    ]);
  });
});

/** Written as the design shows it: `handle_message`, and the context destructured. */
class Forwarder extends Agent {
  results: unknown[] = [];

  override async handle_message(message: Envelope, { memory, signal, send }: MessageContext) {
    if (message.msg_type === "result") {
      this.results.push(message.payload);
      return undefined;
    }
    expect(signal.aborted).toBe(false);
    await memory.set("forwarded", true);
    await send({ target: "*", capability: "d.echo", payload: message.payload });
    return undefined;
  }
}

describe("the design's task API and agents (against a broker)", () => {
  let world: World;
  let orchestrator: Orchestrator;

  beforeAll(async () => {
    world = await startWorld({ http: true, templates: { "design.yaml": DESIGN_TEMPLATE } });
    orchestrator = await world.startOrchestrator();
    await world.agent({ name: "d-summarizer", capabilities: ["text_summarization"] }, (m) => ({
      summary: String((m.payload as { article_content: string }).article_content).split(".")[0],
    }));
    await world.agent({ name: "d-keywords", capabilities: ["keyword_extraction"] }, () => ({
      keywords: ["agents", "mailboxes"],
    }));
    await world.agent({ name: "d-quality", capabilities: ["quality_check"] }, () => ({ quality_score: 0.9 }));
  });
  afterAll(() => world.close());

  it("POST /api/tasks answers synchronously by default with the merged result; async=true gives 202", async () => {
    const res = await http("POST", `${world.api}/api/tasks`, {
      task_type: "content_analysis",
      payload: { article_content: "Agents talk through mailboxes. They can be offline." },
    });
    expect(res.body.error).toBeUndefined();
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: "completed",
      result: {
        summary: "Agents talk through mailboxes",
        keywords: ["agents", "mailboxes"],
        quality_score: 0.9,
      },
    });
    expect(typeof res.body.task_id).toBe("string");
    const queued = await http("POST", `${world.api}/api/tasks?async=true`, {
      task_type: "content_analysis",
      payload: { article_content: "x" },
    });
    expect(queued.status).toBe(202);
    expect(queued.body.status).toBe("pending");
    const done = await orchestrator.wait(queued.body.task_id as string, 30_000);
    expect(done.status).toBe("completed");
  });

  it("takes the design's priorities: urgent, normal and deferred (sent as mq9's lowest, normal)", async () => {
    for (const priority of ["urgent", "normal", "deferred"]) {
      const res = await http("POST", `${world.api}/api/tasks`, {
        task_type: "content_analysis",
        payload: { article_content: "x." },
        priority,
      });
      expect(res.body).toMatchObject({
        status: "completed",
        priority: priority === "deferred" ? "normal" : priority,
      });
    }
    const bad = await http("POST", `${world.api}/api/tasks`, {
      task_type: "content_analysis",
      priority: "later",
    });
    expect(bad).toMatchObject({
      status: 400,
      body: { code: "INVALID_REQUEST", error: "priority must be critical, urgent, normal or deferred" },
    });
  });

  it("a class with handle_message works, and a destructured send() reaches the router", async () => {
    await world.agent({ name: "d-echo", capabilities: ["d.echo"] }, (m) => ({ echoed: m.payload }));
    const forwarder = new Forwarder({ name: "d-forwarder", capabilities: ["d.forward"] }, FAST_AGENT);
    await forwarder.start(world.url);
    try {
      const client = await world.client();
      const query = createEnvelope({
        msg_type: "query",
        source: "tester",
        target: "d-forwarder",
        payload: "ping",
      });
      await sendEnvelope(client, forwarder.mailbox, query);
      await until("the echo to come back to the forwarder", () => forwarder.results.length > 0);
      expect(forwarder.results[0]).toEqual({ echoed: "ping" });
    } finally {
      await forwarder.stop();
    }
  });

  it("a class without a handler fails at start with a clear message", async () => {
    class Nothing extends Agent {}
    await expect(new Nothing({ name: "d-nothing", capabilities: ["x"] }).start(world.url)).rejects.toThrow(
      "agent d-nothing has no handler: define handleMessage(message, context) (or handle_message) in its class",
    );
  });
});

describe("templates change while tasks run", () => {
  let world: World;
  const v1 =
    "task_type: chain\nsteps:\n  - id: first\n    capability: c.first\n  - id: second\n    capability: c.second\n    depends_on: [first]\n";
  const v2 =
    "task_type: chain\nsteps:\n  - id: first\n    capability: c.first\n  - id: second\n    capability: c.second\n    depends_on: []\n";

  beforeAll(async () => {
    world = await startWorld({ templates: { "chain.yaml": v1 } });
  });
  afterAll(() => world.close());

  it("a task runs to its end on the version it started with, across a reload and a restart", async () => {
    let orchestrator = await world.startOrchestrator();
    const hold = gate();
    await world.agent({ name: "c-first", capabilities: ["c.first"] }, async () => {
      await hold.promise;
      return { from: "first" };
    });
    const inputs: unknown[] = [];
    await world.agent({ name: "c-second", capabilities: ["c.second"] }, (m) => {
      inputs.push(m.payload);
      return "ok";
    });
    const task = await orchestrator.submit("chain", { from: "payload" });
    await until(
      "the first step to run",
      async () => (await orchestrator.task(task.task_id))?.steps.first.status === "running",
    );
    world.template("chain.yaml", v2);
    await until("the reload", () => orchestrator.templates.get("chain")?.steps[1].dependsOn.length === 0);
    // A restart in between: the stored task keeps its version too.
    await orchestrator.close();
    orchestrator = await world.startOrchestrator();
    hold.open();
    const done = await orchestrator.wait(task.task_id, 30_000);
    expect(done.error).toBeUndefined();
    expect(done.status).toBe("completed");
    expect(inputs).toEqual([{ from: "first" }]);
    // A new task takes the new version: the second step gets the payload at once.
    const fresh = await orchestrator.submit("chain", { from: "payload" });
    expect((await orchestrator.wait(fresh.task_id, 30_000)).status).toBe("completed");
    expect(inputs).toContainEqual({ from: "payload" });
  });

  it("a templates folder created after the start is picked up", async () => {
    const folder = join(world.dataDir, "later");
    const orchestrator = await world.startOrchestrator({ templates: folder });
    expect(orchestrator.templates.names()).toEqual([]);
    mkdirSync(folder);
    writeFileSync(
      join(folder, "late.yaml"),
      "task_type: late\nsteps:\n  - id: s\n    capability: c.second\n",
    );
    await until("the new folder's template", () => orchestrator.templates.names().includes("late"));
  });
});
