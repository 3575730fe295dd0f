import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createEnvelope,
  sendEnvelope,
  type TaskState,
  type TraceView,
  verifyWebhookSignature,
} from "../src/index.js";
import { http, startWorld, until, type World } from "./harness.js";

const templates = {
  "review.yaml": `name: review
steps:
  - id: draft
    capability: a.draft
  - id: check
    capability: a.check
    depends_on: draft
`,
  "orphan.yaml": `name: orphan
steps:
  - id: lonely
    capability: a.nobody
    timeout: 300ms
`,
  "broken.yaml": `name: broken
steps:
  - id: one
    capability: a.draft
    depends_on: [two]
`,
};

interface Hook {
  event: string;
  body: string;
  signature?: string;
  attempt: string;
}

/** A webhook receiver that refuses the first attempt of every delivery with 500. */
async function startReceiver(): Promise<{ server: Server; url: string; received: Hook[] }> {
  const received: Hook[] = [];
  const refused = new Set<string>();
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => {
      body += c;
    });
    req.on("end", () => {
      const event = String(req.headers["x-mq9-event"]);
      const delivery = (JSON.parse(body) as { delivery_id: string }).delivery_id;
      if (!refused.has(delivery)) {
        refused.add(delivery);
        res.writeHead(500).end();
        return;
      }
      received.push({
        event,
        body,
        signature: req.headers["x-mq9-signature"] as string | undefined,
        attempt: String(req.headers["x-mq9-attempt"]),
      });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, received };
}

describe("HTTP API and webhooks", () => {
  let world: World;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  const secret = "s3cret";

  beforeAll(async () => {
    world = await startWorld({ http: true, templates });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await world.close();
    receiver.server.close();
  });

  it("answers 503 until the orchestrator is ready", async () => {
    const res = await http("GET", `${world.api}/api/tasks`);
    expect(res).toEqual({
      status: 503,
      body: { error: "the orchestrator is starting; try again shortly", code: "NOT_READY" },
    });
    await world.startOrchestrator({ webhooks: [{ url: receiver.url, secret, backoffMs: 50 }] });
    expect((await http("GET", `${world.api}/api/tasks`)).status).toBe(200);
  });

  it("POST /api/tasks with wait=true returns the result; without, the task id; GET shows every step", async () => {
    await world.agent({ name: "a-drafter", capabilities: ["a.draft"] }, (m) => `draft of ${m.payload}`);
    await world.agent({ name: "a-checker", capabilities: ["a.check"] }, (m) => ({
      ok: true,
      text: m.payload,
    }));
    const waited = await http("POST", `${world.api}/api/tasks?wait=true`, {
      task_type: "review",
      payload: "essay",
    });
    expect(waited.status).toBe(200);
    expect(waited.body).toMatchObject({ status: "completed", result: { ok: true, text: "draft of essay" } });

    const queued = await http("POST", `${world.api}/api/tasks?async=true`, {
      task_type: "review",
      payload: "poem",
    });
    expect(queued.status).toBe(202);
    expect(Object.keys(queued.body).sort()).toEqual(["status", "task_id", "trace_id"]);
    const id = queued.body.task_id as string;
    const shown = await until("the task to complete", async () => {
      const res = await http("GET", `${world.api}/api/tasks/${id}`);
      return res.body.status === "completed" ? (res.body as unknown as TaskState) : undefined;
    });
    expect(shown.steps.draft).toMatchObject({
      status: "completed",
      agent: "a-drafter",
      output: "draft of poem",
    });
    expect(shown.steps.check.status).toBe("completed");

    const listed = await http("GET", `${world.api}/api/tasks?status=completed`);
    const ids = (listed.body.tasks as { task_id: string }[]).map((t) => t.task_id);
    expect(ids).toContain(id);
    expect(ids).toContain(waited.body.task_id);
  });

  it("GET /api/traces/{trace_id} returns every message of the trace in order, with timings", async () => {
    const done = await http("POST", `${world.api}/api/tasks?wait=true`, {
      task_type: "review",
      payload: "memo",
    });
    const res = await http("GET", `${world.api}/api/traces/${done.body.trace_id}`);
    expect(res.status).toBe(200);
    const trace = res.body as unknown as TraceView;
    expect(trace.messages.map((m) => [m.msg_type, m.source, m.target, m.step_id])).toEqual([
      ["query", "orchestrator", "a-drafter", "draft"],
      ["result", "a-drafter", "orchestrator", "draft"],
      ["query", "orchestrator", "a-checker", "check"],
      ["result", "a-checker", "orchestrator", "check"],
    ]);
    const offsets = trace.messages.map((m) => m.offset_ms);
    expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
    expect(offsets[0]).toBe(0);
    expect(trace.messages[1].in_reply_to).toBe(trace.messages[0].msg_id);
    expect((await http("GET", `${world.api}/api/traces/nosuchtrace`)).body.code).toBe("TRACE_NOT_FOUND");
  });

  it("GET /api/agents shows each agent with its load and liveness", async () => {
    const res = await http("GET", `${world.api}/api/agents`);
    const agents = res.body.agents as Record<string, unknown>[];
    expect(agents.find((a) => a.name === "a-drafter")).toMatchObject({
      mailbox: "agent.a.drafter",
      alive: true,
      orchestrated: true,
      capabilities: ["a.draft"],
      max_concurrency: 1,
      weight: 1,
      load: expect.any(Number),
    });
  });

  it("a step nobody can take waits, pending, until its timeout; a message nobody can take is a dead letter", async () => {
    const queued = await http("POST", `${world.api}/api/tasks?async=true`, {
      task_type: "orphan",
      payload: 1,
    });
    const waiting = await http("GET", `${world.api}/api/tasks/${queued.body.task_id}`);
    expect(waiting.body).toMatchObject({ status: "pending" });
    const res = await http("POST", `${world.api}/api/tasks?wait=true`, { task_type: "orphan", payload: 1 });
    expect(res.body).toMatchObject({
      status: "timeout",
      error:
        "step 'lonely' timed out: no agent took it within 300 ms (no live agent has capability 'a.nobody')",
    });
    const client = await world.client();
    const lost = createEnvelope({ msg_type: "query", source: "tester", target: "*", payload: 1 });
    await sendEnvelope(client, world.orchestrator!.names.router, lost);
    await until("the dead letter", async () => {
      const letters = await http("GET", `${world.api}/api/dead-letters`);
      return (letters.body.dead_letters as { envelope?: { msg_id: string } }[]).find(
        (l) => l.envelope?.msg_id === lost.msg_id,
      );
    });
    const letters = await http("GET", `${world.api}/api/dead-letters`);
    expect(letters.body.dead_letters).toContainEqual(
      expect.objectContaining({
        reason: "target '*' needs a capability or an intent (text) to route by",
        envelope: expect.objectContaining({ msg_id: lost.msg_id }),
      }),
    );
  });

  it("webhooks — delivered after a failed attempt, signed with HMAC-SHA256 of the body", async () => {
    const completed = await until("task_completed to be delivered", () =>
      receiver.received.find((h) => h.event === "task_completed"),
    );
    expect(completed.attempt).toBe("2");
    expect(verifyWebhookSignature(completed.body, secret, completed.signature)).toBe(true);
    expect(verifyWebhookSignature(completed.body, "wrong", completed.signature)).toBe(false);
    expect(JSON.parse(completed.body)).toMatchObject({
      event: "task_completed",
      data: { task_type: "review" },
    });
    const failed = await until("task_timeout", () =>
      receiver.received.find((h) => h.event === "task_timeout"),
    );
    expect(JSON.parse(failed.body).data).toMatchObject({ task_type: "orphan", status: "timeout" });
    const leaving = await world.agent({ name: "a-leaving", capabilities: ["a.leave"] }, () => {});
    await until("the agent to be seen", () =>
      world.orchestrator!.agents().find((a) => a.name === "a-leaving"),
    );
    await leaving.stop();
    const dead = await until("agent_dead", () => receiver.received.find((h) => h.event === "agent_dead"));
    expect(JSON.parse(dead.body).data).toMatchObject({ name: "a-leaving", mailbox: "agent.a.leaving" });
  });

  it("POST /api/tasks waits at most timeout_ms, given in the query or the body; a bad one stores nothing", async () => {
    // orphan's step waits 300 ms for an agent that never comes: still pending after 50 ms.
    for (const [url, body] of [
      [`${world.api}/api/tasks?timeout_ms=50`, { task_type: "orphan", payload: {} }],
      [`${world.api}/api/tasks`, { task_type: "orphan", payload: {}, timeout_ms: 50 }],
    ] as const) {
      const res = await http("POST", url, body);
      expect(res.status, url).toBe(202);
      expect(res.body.status).toBe("pending");
    }
    const before = (await http("GET", `${world.api}/api/tasks`)).body.tasks.length;
    const bad = await http("POST", `${world.api}/api/tasks`, {
      task_type: "orphan",
      payload: {},
      timeout_ms: "soon",
    });
    expect(bad).toEqual({
      status: 400,
      body: { code: "INVALID_REQUEST", error: "timeout_ms must be >= 0 ms" },
    });
    expect((await http("GET", `${world.api}/api/tasks`)).body.tasks.length).toBe(before);
  });

  it("bad input — unknown task type, missing fields, bad JSON, bad status, unknown or finished task", async () => {
    const unknown = await http("POST", `${world.api}/api/tasks`, { task_type: "nope", payload: {} });
    // 404: the request is well formed, what it names is not there (no template of that name).
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({
      code: "UNKNOWN_TASK_TYPE",
      error: "unknown task type 'nope'; known types: orphan, review",
    });
    expect(await http("POST", `${world.api}/api/tasks`, { payload: {} })).toEqual({
      status: 400,
      body: { code: "INVALID_REQUEST", error: "give the task_type (a template name) and a payload" },
    });
    const badJson = await fetch(`${world.api}/api/tasks`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{not json",
    });
    expect(badJson.status).toBe(400);
    expect((await http("GET", `${world.api}/api/tasks?status=sleeping`)).body.code).toBe("INVALID_REQUEST");
    expect(await http("GET", `${world.api}/api/tasks/nope`)).toEqual({
      status: 404,
      body: { code: "TASK_NOT_FOUND", error: "no task nope; list tasks with GET /api/tasks" },
    });
    expect((await http("POST", `${world.api}/api/tasks/nope/cancel`)).status).toBe(404);
    const done = await http("POST", `${world.api}/api/tasks?wait=true`, {
      task_type: "review",
      payload: "x",
    });
    const cancel = await http("POST", `${world.api}/api/tasks/${done.body.task_id}/cancel`);
    expect(cancel).toEqual({
      status: 409,
      body: {
        code: "TASK_FINISHED",
        error: `task ${done.body.task_id} is already completed; only a pending or running task can be canceled`,
      },
    });
  });
});
