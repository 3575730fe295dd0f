// The orchestrator as a new user meets it: `mq9 serve` with templates, agents in processes
// of their own (written as the design shows them), and the HTTP API, metrics and logs.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createEnvelope, type Envelope, readEnvelope, sendEnvelope } from "@mq9/agent";
import { connect } from "@mq9/client";
import { DESIGN_TEMPLATE } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, runCli, tempDir } from "./cli-harness.js";

const AGENTS = fileURLToPath(new URL("./fixtures/orchestrator-agents.mjs", import.meta.url));

const one = (name: string, capability: string, extra = "") =>
  `task_type: ${name}\ntimeout: 2m\nsteps:\n  - id: work\n    capability: ${capability}\n    timeout: 60s\n${extra}`;

interface Served {
  child: ChildProcess;
  port: number;
  api: string;
  logs: () => Record<string, unknown>[];
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** `mq9 serve` with JSON logs; resolves once the orchestrator's API answers. */
async function serve(args: string[], port = 0): Promise<Served> {
  const child = spawn(
    process.execPath,
    [CLI, "serve", "--port", String(port), "--http-port", "0", "--log-format", "json", ...args],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  child.stdout!.on("data", (chunk) => {
    out += chunk;
  });
  let err = "";
  child.stderr!.on("data", (chunk) => {
    err += chunk;
  });
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  const ready = await new Promise<{ port: number; httpPort: number }>((resolve, reject) => {
    const timer = setInterval(() => {
      const line = out.split("\n").find((l) => l.includes('"httpPort"'));
      if (line) {
        clearInterval(timer);
        resolve(JSON.parse(line));
      }
    }, 20);
    child.on("exit", (code) => {
      clearInterval(timer);
      reject(new Error(`mq9 serve exited with ${code}: ${err}`));
    });
  });
  const api = `http://127.0.0.1:${ready.httpPort}`;
  for (;;) {
    const res = await fetch(`${api}/api/templates`).catch(() => undefined);
    if (res?.ok) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const logs = () =>
    out
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return {
    child,
    port: ready.port,
    api,
    logs,
    stop: async (signal = "SIGTERM") => {
      child.kill(signal);
      await exited;
    },
  };
}

interface AgentSpec {
  name: string;
  capabilities: string[];
  weight?: number;
  max_concurrency?: number;
  delay_ms?: number;
  output?: Record<string, unknown>;
  forward?: string;
  ttl_seconds?: number;
  heartbeat_ms?: number;
  description?: string;
  /** Print "handled <msg_id>" for each message handled. */
  report?: boolean;
}

/** Agents in a process of their own (fixtures/orchestrator-agents.mjs); resolves once registered. */
async function agents(
  server: string,
  list: AgentSpec[],
): Promise<{ stop(): Promise<void>; output(): string }> {
  const child = spawn(process.execPath, [AGENTS, JSON.stringify({ server, agents: list })], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  let out = "";
  child.stderr!.on("data", (c) => {
    err += c;
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on("data", (c) => {
      out += c;
      if (out.includes("ready")) resolve();
    });
    child.on("exit", (code) => reject(new Error(`agents exited with ${code}: ${err}`)));
  });
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  return {
    stop: async () => {
      child.kill("SIGTERM");
      await exited;
    },
    output: () => out,
  };
}

// biome-ignore lint/suspicious/noExplicitAny: JSON answers of the API, checked field by field with expect
type Json = Record<string, any>;

async function http(method: "GET" | "POST", url: string, body?: unknown) {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Json };
}

async function until<T>(what: string, check: () => T | Promise<T>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Who did the one step of each of `n` tasks of `type`: all at once (a burst), or from `clients` clients one by one. */
async function shares(
  api: string,
  type: string,
  n: number,
  parallel: boolean,
  clients = 1,
): Promise<Record<string, number>> {
  const runOne = async () => {
    const res = await http("POST", `${api}/api/tasks`, { task_type: type, payload: {} });
    expect(res.body.status).toBe("completed");
    return res.body.steps.work.agent as string;
  };
  const names = parallel
    ? await Promise.all(Array.from({ length: n }, runOne))
    : await (async () => {
        const got: string[] = [];
        await Promise.all(
          Array.from({ length: clients }, async () => {
            for (let i = 0; i < n / clients; i++) got.push(await runOne());
          }),
        );
        return got;
      })();
  const counts: Record<string, number> = {};
  for (const name of names) counts[name] = (counts[name] ?? 0) + 1;
  return counts;
}

describe("the orchestrator of mq9 serve, as the design describes it", () => {
  let served: Served;
  let server: string;
  let templates: string;
  let hooks: Server;
  const received: Json[] = [];
  const running: { stop(): Promise<void> }[] = [];

  beforeAll(async () => {
    hooks = createServer((req, res) => {
      let body = "";
      req.on("data", (c) => {
        body += c;
      });
      req.on("end", () => {
        received.push(JSON.parse(body));
        res.end("ok");
      });
    });
    await new Promise<void>((resolve) => hooks.listen(0, "127.0.0.1", resolve));
    const dir = tempDir();
    templates = join(dir, "templates");
    const config = join(dir, "mq9.json");
    writeFileSync(
      config,
      JSON.stringify({
        orchestrator: {
          webhooks: [
            { url: `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/`, events: ["loop_detected"] },
          ],
        },
      }),
    );
    // The folder is made after the start: it is picked up when it appears.
    served = await serve(["--data", join(dir, "data"), "--templates", templates, "--config", config]);
    server = `mq9://127.0.0.1:${served.port}`;
    mkdirSync(templates);
    writeFileSync(join(templates, "design.yaml"), DESIGN_TEMPLATE);
    writeFileSync(join(templates, "weighted.yaml"), one("weighted", "w.work"));
    writeFileSync(join(templates, "replicas.yaml"), one("replicas", "s.work"));
    writeFileSync(join(templates, "later.yaml"), one("later", "late.work"));
    writeFileSync(join(templates, "loop.yaml"), one("loop", "loop.a"));
    writeFileSync(join(templates, "manual.yaml"), one("manual", "manual.work"));
    await until("the templates of a folder made after the start", async () => {
      const { body } = await http("GET", `${served.api}/api/templates`);
      return body.templates.length === 6;
    });
    running.push(
      await agents(server, [
        { name: "summarizer", capabilities: ["text_summarization"], output: { summary: "Agents talk." } },
        { name: "keywords", capabilities: ["keyword_extraction"], output: { keywords: ["agents", "mail"] } },
        { name: "quality", capabilities: ["quality_check"], output: { quality_score: 0.92 } },
        { name: "w-heavy", capabilities: ["w.work"], weight: 3, max_concurrency: 4, delay_ms: 5 },
        { name: "w-light", capabilities: ["w.work"], weight: 1, max_concurrency: 4, delay_ms: 5 },
        { name: "s-fast", capabilities: ["s.work"], max_concurrency: 2, delay_ms: 5 },
        { name: "s-slow", capabilities: ["s.work"], max_concurrency: 2, delay_ms: 400 },
        {
          name: "translator",
          capabilities: ["translate"],
          description: "Translates documents between English, Chinese, Japanese and Korean.",
        },
        { name: "b-one", capabilities: ["b.all"] },
        { name: "b-two", capabilities: ["b.all"] },
        { name: "loop-a", capabilities: ["loop.a"], forward: "loop.b" },
        { name: "loop-b", capabilities: ["loop.b"], forward: "loop.a" },
      ]),
    );
  }, 60_000);
  afterAll(async () => {
    for (const r of running) await r.stop();
    await served?.stop();
    hooks?.close();
  });

  it("runs the design's template unchanged; POST /api/tasks answers with the merged result", async () => {
    const res = await http("POST", `${served.api}/api/tasks`, {
      task_type: "content_analysis",
      payload: { article_content: "Agents talk through mailboxes." },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: "completed",
      result: { summary: "Agents talk.", keywords: ["agents", "mail"], quality_score: 0.92 },
    });
    expect(typeof res.body.task_id).toBe("string");
  });

  it("shares work 3:1 by weight, at a trickle and at a burst", async () => {
    for (const parallel of [false, true]) {
      const counts = await shares(served.api, "weighted", 400, parallel);
      expect(counts["w-heavy"]).toBeGreaterThanOrEqual(255);
      expect(counts["w-heavy"]).toBeLessThanOrEqual(345);
      expect(counts["w-heavy"] + counts["w-light"]).toBe(400);
    }
  }, 180_000);

  it("under a steady load, gives a slow replica less work than a fast one", async () => {
    const counts = await shares(served.api, "replicas", 60, false, 4);
    expect(counts["s-fast"]).toBeGreaterThan(counts["s-slow"] ?? 0);
  }, 120_000);

  it("a step whose agent is offline waits, pending, and runs when the agent comes", async () => {
    const queued = await http("POST", `${served.api}/api/tasks?async=true`, {
      task_type: "later",
      payload: {},
    });
    expect(queued.status).toBe(202);
    await new Promise((r) => setTimeout(r, 1_500));
    const waiting = await http("GET", `${served.api}/api/tasks/${queued.body.task_id}`);
    expect(waiting.body.status).toBe("pending");
    expect(waiting.body.steps.work).toMatchObject({
      status: "pending",
      waiting: "no live agent has capability 'late.work'",
    });
    running.push(await agents(server, [{ name: "late", capabilities: ["late.work"] }]));
    await until("the waiting task to complete", async () => {
      const { body } = await http("GET", `${served.api}/api/tasks/${queued.body.task_id}`);
      return body.status === "completed";
    });
  });

  it("a loop between forwarding agents is stopped loudly: log with trace and path, metric, webhook", async () => {
    const res = await http("POST", `${served.api}/api/tasks?async=true`, { task_type: "loop", payload: {} });
    const task = await until("the task to start", async () => {
      const { body } = await http("GET", `${served.api}/api/tasks/${res.body.task_id}`);
      return body.trace_id ? body : undefined;
    });
    const hook = await until("the loop_detected webhook", () =>
      received.find((h) => h.event === "loop_detected" && h.data.trace_id === task.trace_id),
    );
    expect(hook.data).toMatchObject({ kind: "cycle", path: ["orchestrator", "loop-a", "loop-b"] });
    const line = served
      .logs()
      .find((l) => String(l.msg).includes("loop guard stopped") && l.trace_id === task.trace_id);
    expect(line).toMatchObject({ level: 40, kind: "cycle", path: ["orchestrator", "loop-a", "loop-b"] });
    const metrics = await (await fetch(`${served.api}/metrics`)).text();
    expect(metrics).toMatch(/^mq9_orchestrator_loop_stops_total\{guard="cycle"\} [1-9]/m);
    expect(metrics).toMatch(/^mq9_orchestrator_dispatches_total\{layer="capability"\} [1-9]/m);
    expect(metrics).toMatch(/^mq9_orchestrator_tasks\{state="completed"\} [1-9]/m);
    expect(metrics).toMatch(/^mq9_orchestrator_dead_letters_total\{reason="cycle"\} [1-9]/m);
    expect(metrics).toMatch(/^mq9_orchestrator_queue_depth 0$/m);
    expect(metrics).toMatch(/^mq9_orchestrator_step_duration_ms\{quantile="0.5"\} /m);
    // Task and step lines carry metadata, never payloads.
    const step = served.logs().find((l) => l.msg === "orchestrator: step summarize completed");
    expect(step).toMatchObject({ step_id: "summarize", agent: "summarizer", status: "completed" });
    expect(JSON.stringify(step)).not.toContain("Agents talk");
  });

  it("routes by intent as the fallback, broadcasts, and dead-letters the unmatched loudly", async () => {
    const client = await connect(server, { name: "audit-tester" });
    try {
      const inbox = "audit.tester";
      await client.ensureMailbox({ name: inbox });
      // Hand-built, as another SDK would: the design's `deferred` priority as it is spelled.
      const ask = (fields: Omit<Partial<Envelope>, "priority"> & { priority?: string }) =>
        sendEnvelope(client, "orch.router", {
          ...createEnvelope({ msg_type: "query", source: "audit-tester", target: "*", payload: "hi" }),
          reply_to: inbox,
          ...fields,
        } as Envelope);
      // Nobody has the capability: the intent decides, by the agents' descriptions.
      const fallback = await ask({
        capability: "nobody.has.it",
        intent: "translate this note into Japanese",
      });
      // A copy to every live agent with the capability, and the deferred priority accepted.
      const news = await ask({ capability: "b.all", broadcast: true, priority: "deferred" });
      // Neither a capability nor an intent anyone matches: a dead letter with its reason.
      const lost = await ask({ capability: "nobody.has.it", payload: null });
      const answers = await until(
        "the answers of the intent and the broadcast",
        async () => {
          const got = await client.fetch(inbox, { deliver: "earliest", batch: 100, maxWaitMs: 0 });
          const envelopes = got.map((m) => readEnvelope(m));
          return envelopes.length >= 3 ? envelopes : undefined;
        },
        60_000,
      );
      const byAsk = (e: Envelope) => e.payload as { agent: string };
      expect(answers.filter((a) => a.in_reply_to === fallback.msg_id).map((a) => byAsk(a).agent)).toEqual([
        "translator",
      ]);
      const copies = answers.filter((a) => a.in_reply_to?.startsWith(`${news.msg_id}.`));
      expect(copies.map((a) => byAsk(a).agent).sort()).toEqual(["b-one", "b-two"]);
      const letter = await until("the dead letter", async () => {
        const { body } = await http("GET", `${served.api}/api/dead-letters?trace_id=${lost.trace_id}`);
        return body.dead_letters?.[0];
      });
      expect(letter.reason).toBe("no live agent has capability 'nobody.has.it'");
      const line = served.logs().find((l) => l.trace_id === lost.trace_id && l.level === 40);
      expect(line).toMatchObject({
        kind: "unavailable",
        reason: "no live agent has capability 'nobody.has.it'",
      });
      const metrics = await (await fetch(`${served.api}/metrics`)).text();
      expect(metrics).toMatch(/^mq9_orchestrator_dead_letters_total\{reason="unavailable"\} [1-9]/m);
      expect(metrics).toMatch(/^mq9_orchestrator_dispatches_total\{layer="intent"\} [1-9]/m);
    } finally {
      await client.close();
    }
  }, 90_000);

  it("an agent process restarted does not handle a msg_id again; agent list shows it offline meanwhile", async () => {
    const spec = {
      name: "once",
      capabilities: ["once.work"],
      report: true,
      heartbeat_ms: 200,
      ttl_seconds: 1,
    };
    const client = await connect(server, { name: "audit-dedup" });
    try {
      const first = await agents(server, [spec]);
      // Sent straight to its inbox (the router would refuse a msg_id it routed before), one
      // with an answer to find in the asker's mailbox and one without (noted in `.seen`).
      await client.ensureMailbox({ name: "audit.dedup" });
      const answered = {
        ...createEnvelope({ msg_type: "query", source: "audit-dedup", target: "once", payload: 1 }),
        reply_to: "audit.dedup",
      };
      const silent = createEnvelope({ msg_type: "query", source: "audit-dedup", target: "once", payload: 2 });
      for (const message of [answered, silent]) await sendEnvelope(client, "agent.once", message);
      await until("both to be handled", () => first.output().split("handled ").length - 1 === 2);
      await first.stop();
      await until("agent list to show it offline", async () => {
        const list = await runCli(["agent", "list", "--api", served.api]);
        return /^once\s+offline\s/m.test(list.stdout);
      });
      const second = await agents(server, [spec]);
      running.push(second);
      for (const message of [answered, silent]) await sendEnvelope(client, "agent.once", message);
      const probe = createEnvelope({ msg_type: "query", source: "audit-dedup", target: "once", payload: 3 });
      await sendEnvelope(client, "agent.once", probe);
      // The inbox is FIFO: once the probe is handled, the two re-sent ones were seen before it.
      await until("the probe to be handled", () => second.output().includes(`handled ${probe.msg_id}`));
      expect(second.output()).not.toContain(answered.msg_id);
      expect(second.output()).not.toContain(silent.msg_id);
      const list = await runCli(["agent", "list", "--api", served.api]);
      expect(list.stdout).toMatch(/^once\s+online\s/m);
    } finally {
      await client.close();
    }
  }, 90_000);

  it("mq9 agent register --manifest gives an agent the router uses, steadily online", async () => {
    const dir = tempDir();
    const file = join(dir, "intent_agent.json");
    writeFileSync(
      file,
      JSON.stringify({
        name: "manual-agent",
        capabilities: ["manual.work"],
        endpoint: "agent.manual",
        max_concurrency: 2,
        weight: 2,
        tags: { team: "nlp", tier: 1 },
      }),
    );
    const reg = await runCli(["agent", "register", "--manifest", file, "--server", server]);
    expect(reg.stderr).toBe("");
    expect(reg.stdout).toBe("registered manual-agent (mailbox agent.manual)\n");
    for (let i = 0; i < 3; i++) {
      const list = await runCli(["agent", "list", "--api", served.api]);
      expect(list.stdout).toMatch(/^manual-agent\s+online\s+\d+\/2\s+2\s+.+ ago\s+manual\.work$/m);
      expect(list.stdout).toMatch(/^w-heavy\s+online\s/m);
      await new Promise((r) => setTimeout(r, 700));
    }
    const res = await http("POST", `${served.api}/api/tasks?async=true`, {
      task_type: "manual",
      payload: {},
    });
    await until("the step to be dispatched to it", async () => {
      const { body } = await http("GET", `${served.api}/api/tasks/${res.body.task_id}`);
      return body.steps.work.status === "running" && body.steps.work.agent === "manual-agent";
    });
  }, 60_000);
});

describe("mq9 serve's orchestrator limits and restarts", () => {
  it("beyond max tasks in flight tasks queue as pending; beyond the queue, 429 with Retry-After", async () => {
    const dir = tempDir();
    const templates = join(dir, "templates");
    mkdirSync(templates);
    writeFileSync(join(templates, "held.yaml"), one("held", "nobody.yet"));
    const served = await serve([
      "--data",
      join(dir, "data"),
      "--templates",
      templates,
      "--max-tasks-in-flight",
      "2",
      "--queue-capacity",
      "3",
    ]);
    try {
      const answers = [];
      for (let i = 0; i < 6; i++) {
        answers.push(
          await http("POST", `${served.api}/api/tasks?async=true`, { task_type: "held", payload: i }),
        );
      }
      expect(answers.map((a) => a.status)).toEqual([202, 202, 202, 202, 202, 429]);
      expect(answers[5].headers.get("retry-after")).toBe("1");
      expect(answers[5].body.code).toBe("QUEUE_FULL");
      const { body } = await http("GET", `${served.api}/api/tasks?status=pending`);
      expect(body.tasks).toHaveLength(5);
      const metrics = await (await fetch(`${served.api}/metrics`)).text();
      expect(metrics).toMatch(/^mq9_orchestrator_queue_depth 3$/m);
      expect(metrics).toMatch(/^mq9_orchestrator_tasks\{state="queued"\} 3$/m);
    } finally {
      await served.stop();
    }
  }, 60_000);

  it("the per-agent limit holds steps for a real agent process; beyond the queue, 429 with Retry-After", async () => {
    const dir = tempDir();
    const templates = join(dir, "templates");
    mkdirSync(templates);
    writeFileSync(join(templates, "limited.yaml"), one("limited", "l.work"));
    const served = await serve([
      "--data",
      join(dir, "data"),
      "--templates",
      templates,
      "--agent-concurrency",
      "1",
      "--max-tasks-in-flight",
      "3",
      "--queue-capacity",
      "1",
    ]);
    // The agent itself would take four at once: only the orchestrator's limit holds it to one.
    const worker = await agents(`mq9://127.0.0.1:${served.port}`, [
      { name: "l-worker", capabilities: ["l.work"], max_concurrency: 4, delay_ms: 1_000 },
    ]);
    try {
      await until("the agent to be online", async () => {
        const { body } = await http("GET", `${served.api}/api/agents`);
        return body.agents.some((a: Json) => a.name === "l-worker" && a.alive);
      });
      const answers = [];
      for (let i = 0; i < 5; i++) {
        answers.push(
          await http("POST", `${served.api}/api/tasks?async=true`, { task_type: "limited", payload: i }),
        );
      }
      // Three run (one step at the agent, two held for it), one is queued, the fifth is refused.
      expect(answers.map((a) => a.status)).toEqual([202, 202, 202, 202, 429]);
      expect(answers[4].headers.get("retry-after")).toBe("1");
      expect(answers[4].body.code).toBe("QUEUE_FULL");
      const accepted = answers.slice(0, 4).map((a) => a.body.task_id as string);
      const task = async (id: string) => (await http("GET", `${served.api}/api/tasks/${id}`)).body;
      const held = await until("two steps to wait for the agent's room", async () => {
        const tasks = await Promise.all(accepted.map(task));
        const waiting = tasks.filter((t) => t.steps.work.waiting);
        return waiting.length === 2 ? waiting : undefined;
      });
      expect(held[0].steps.work.waiting).toBe(
        "every live agent with capability 'l.work' has 1 messages in progress (the per-agent limit)",
      );
      let mostRunning = 0;
      await until(
        "every accepted task to complete",
        async () => {
          const { body } = await http("GET", `${served.api}/api/tasks`);
          const mine = body.tasks.filter((t: Json) => accepted.includes(t.task_id));
          const running = mine.filter((t: Json) => t.steps.work === "running").length;
          mostRunning = Math.max(mostRunning, running);
          return mine.every((t: Json) => t.status === "completed");
        },
        60_000,
      );
      const states = await Promise.all(accepted.map(task));
      expect(mostRunning).toBe(1);
      for (const task of states) {
        expect(task.steps.work.history.map((h: Json) => h.outcome)).toEqual(["completed"]);
        expect(task.result).toMatchObject({ agent: "l-worker" });
      }
      // Room again: a new task is accepted.
      const again = await http("POST", `${served.api}/api/tasks?async=true`, {
        task_type: "limited",
        payload: 5,
      });
      expect(again.status).toBe(202);
    } finally {
      await worker.stop();
      await served.stop();
    }
  }, 120_000);

  it("a task resumed after kill -9 and an outage longer than the agents' ttl completes", async () => {
    const dir = tempDir();
    const templates = join(dir, "templates");
    mkdirSync(templates);
    writeFileSync(
      join(templates, "two.yaml"),
      "task_type: two\nsteps:\n  - id: a\n    capability: r.work\n    mode: pipeline\n    timeout: 60s\n  - id: b\n    capability: r.work\n    mode: pipeline\n    timeout: 60s\n",
    );
    const data = join(dir, "data");
    let served = await serve(["--data", data, "--templates", templates]);
    const port = served.port;
    const worker = await agents(`mq9://127.0.0.1:${port}`, [
      { name: "r-worker", capabilities: ["r.work"], delay_ms: 1_500, ttl_seconds: 2 },
    ]);
    try {
      const res = await http("POST", `${served.api}/api/tasks?async=true`, { task_type: "two", payload: {} });
      await until("step a to run", async () => {
        const { body } = await http("GET", `${served.api}/api/tasks/${res.body.task_id}`);
        return body.steps.a.status === "running";
      });
      await served.stop("SIGKILL");
      // Longer than the agent's 2 s registration ttl.
      await new Promise((r) => setTimeout(r, 4_000));
      served = await serve(["--data", data, "--templates", templates], port);
      const done = await until(
        "the resumed task to end",
        async () => {
          const { body } = await http("GET", `${served.api}/api/tasks/${res.body.task_id}`);
          return ["completed", "failed", "timeout"].includes(body.status) ? body : undefined;
        },
        60_000,
      );
      expect(done.error).toBeUndefined();
      expect(done.status).toBe("completed");
    } finally {
      await worker.stop();
      await served.stop();
    }
  }, 120_000);
});
