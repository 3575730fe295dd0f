// The orchestrator as a new user meets it: `mq9 serve` with templates, agents in processes
// of their own (written as the design shows them), and the HTTP API, metrics and logs.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { createEnvelope, type Envelope, readEnvelope, sendEnvelope } from "@mq9/agent";
import { connect } from "@mq9/client";
import { DESIGN_TEMPLATE } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, tempDir } from "./cli-harness.js";
import {
  agents,
  ended,
  http,
  type Json,
  metricLine,
  one,
  type Served,
  serve,
  until,
} from "./orchestrator-harness.js";

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

/** An HTTP server that keeps the webhooks posted to it in `received`. */
async function webhookReceiver(received: Json[]): Promise<Server> {
  const hooks = createServer((req, res) => {
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
  return hooks;
}

/** A config file (in `dir`) that posts `loop_detected` webhooks to `hooks`; returns its path. */
function loopWebhookConfig(dir: string, hooks: Server): string {
  const config = join(dir, "mq9.json");
  const url = `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/`;
  writeFileSync(config, JSON.stringify({ orchestrator: { webhooks: [{ url, events: ["loop_detected"] }] } }));
  return config;
}

describe("the orchestrator of mq9 serve, as the design describes it", () => {
  let served: Served;
  let server: string;
  let templates: string;
  let hooks: Server;
  const received: Json[] = [];
  const running: { stop(): Promise<void> }[] = [];

  beforeAll(async () => {
    hooks = await webhookReceiver(received);
    const dir = tempDir();
    templates = join(dir, "templates");
    const config = loopWebhookConfig(dir, hooks);
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
        {
          name: "summarizer",
          capabilities: ["text_summarization"],
          output: { summary: "Agents talk." },
          tags: { team: "nlp", lang: "en" },
        },
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
    // Each test agent also answers its own name as `agent`: three inputs gave that field, the
    // last one's value is kept, and the clash is said in the task and in a warning.
    expect(res.body.result.agent).toBe("quality");
    const clashes = { agent: ["summarize", "extract_keywords", "check_quality"] };
    expect(res.body.steps.merge_result.merge_clashes).toEqual(clashes);
    const warned = await until("the merge step's warning", () =>
      served.logs().find((l) => l.task_id === res.body.task_id && l.step_id === "merge_result"),
    );
    expect(warned).toMatchObject({
      level: 40,
      msg: "orchestrator: step merge_result completed; inputs clashed on agent (the last kept)",
      merge_clashes: clashes,
    });
    // mq9 task run says it too, on the merge step's line.
    const run = await runCli(["task", "run", "content_analysis", "--payload", "{}", "--api", served.api]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(
      /^ {2}merge_result {5}completed in [^;]+; inputs clashed on agent \(the last kept\)$/m,
    );
    // The SDK took the design's tags object, registered as "key:value" tags.
    const { body } = await http("GET", `${served.api}/api/agents`);
    const summarizer = body.agents.find((a: Json) => a.name === "summarizer");
    expect(summarizer.tags).toEqual(expect.arrayContaining(["team:nlp", "lang:en"]));
    // The folder made after the start said what it brought.
    const reloaded = served
      .logs()
      .filter((l) => String(l.msg).startsWith("orchestrator: templates reloaded: "))
      .at(-1);
    expect(reloaded).toMatchObject({ level: 30, msg: "orchestrator: templates reloaded: 6 task types" });
    expect(reloaded?.task_types).toContain("content_analysis");
  });

  it("POST /api/tasks takes the design's curl as printed: -d without a content type", () => {
    const call = (body: string) =>
      JSON.parse(
        execFileSync("curl", ["-s", "-X", "POST", `${served.api}/api/tasks`, "-d", body], {
          encoding: "utf8",
        }),
      );
    const done = call('{"task_type":"content_analysis","payload":{"article_content":"Agents talk."}}');
    expect(done).toMatchObject({
      status: "completed",
      result: { summary: "Agents talk.", quality_score: 0.92 },
    });
    // A body that is not JSON gets the API's own error, whatever its content type says.
    expect(call("task_type=content_analysis")).toEqual({
      error: "the request body is not JSON",
      code: "INVALID_REQUEST",
    });
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
    const line = await until("the warning line", () =>
      served.logs().find((l) => String(l.msg).includes("loop guard stopped") && l.trace_id === task.trace_id),
    );
    expect(line).toMatchObject({ level: 40, kind: "cycle", path: ["orchestrator", "loop-a", "loop-b"] });
    await metricLine(served.api, /^mq9_orchestrator_loop_stops_total\{guard="cycle"\} [1-9]/m);
    await metricLine(served.api, /^mq9_orchestrator_dispatches_total\{layer="capability"\} [1-9]/m);
    await metricLine(served.api, /^mq9_orchestrator_tasks\{state="completed"\} [1-9]/m);
    await metricLine(served.api, /^mq9_orchestrator_dead_letters_total\{reason="cycle"\} [1-9]/m);
    await metricLine(served.api, /^mq9_orchestrator_queue_depth 0$/m);
    await metricLine(served.api, /^mq9_orchestrator_step_duration_ms\{quantile="0.5"\} /m);
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
      // The unmatched ask may answer this inbox too, so wait for the answers themselves, not a count.
      const isCopy = (e: Envelope) => e.in_reply_to?.startsWith(`${news.msg_id}.`) ?? false;
      const answers = await until(
        "the answers of the intent and the broadcast",
        async () => {
          const got = await client.fetch(inbox, { deliver: "earliest", batch: 100, maxWaitMs: 0 });
          const envelopes = got.map((m) => readEnvelope(m));
          const intentAnswered = envelopes.some((e) => e.in_reply_to === fallback.msg_id);
          return intentAnswered && envelopes.filter(isCopy).length >= 2 ? envelopes : undefined;
        },
        60_000,
      );
      const byAsk = (e: Envelope) => e.payload as { agent: string };
      expect(answers.filter((a) => a.in_reply_to === fallback.msg_id).map((a) => byAsk(a).agent)).toEqual([
        "translator",
      ]);
      const copies = answers.filter(isCopy);
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
      await metricLine(served.api, /^mq9_orchestrator_dead_letters_total\{reason="unavailable"\} [1-9]/m);
      await metricLine(served.api, /^mq9_orchestrator_dispatches_total\{layer="intent"\} [1-9]/m);
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
      await until("agent list to show it online again", async () => {
        const list = await runCli(["agent", "list", "--api", served.api]);
        return /^once\s+online\s/m.test(list.stdout);
      });
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
    // The list comes from the orchestrator's directory, refreshed on its own clock: first wait
    // for the agent to appear there, then check that it stays online.
    await until("agent list to show the registered agent", async () => {
      const list = await runCli(["agent", "list", "--api", served.api]);
      return /^manual-agent\s/m.test(list.stdout);
    });
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

  it("mq9 agent list shows a plain registration too: online, then offline after its ttl", async () => {
    const reg = await runCli([
      "agent",
      "register",
      "--name",
      "plain-card",
      "--mailbox",
      "plain.card",
      "--payload",
      "an agent that registered without a manifest and never heartbeats",
      "--ttl",
      "2",
      "--server",
      server,
    ]);
    expect(reg.code, reg.stderr).toBe(0);
    const listed = async (state: string) =>
      new RegExp(`^plain-card\\s+${state}\\s`, "m").test(
        (await runCli(["agent", "list", "--api", served.api])).stdout,
      );
    await until("agent list to show it online", () => listed("online"));
    await until("agent list to show it offline once its ttl has passed", () => listed("offline"));
  });

  it("mq9 agent register --manifest with a bad file says what to fix, exits 2, registers nothing", async () => {
    const dir = tempDir();
    const bad: [string, string, string][] = [
      [
        "typo.json",
        '{"name":"bad-typo","capabilites":["x"]}',
        "agent 'bad-typo': unknown key 'capabilites'; did you mean 'capabilities'?",
      ],
      [
        "noname.json",
        '{"capabilities":["x"]}',
        "'name' is required: the agent's name, lowercase letters, digits, '.', '_' or '-' (at most 100)",
      ],
      [
        "nocaps.json",
        '{"name":"bad-nocaps"}',
        `agent 'bad-nocaps': 'capabilities' is required: a list of what it does, e.g. ["summarize"]`,
      ],
      [
        "endpoint.json",
        '{"name":"bad-endpoint","capabilities":["x"],"endpoint":"agent/x"}',
        "agent 'bad-endpoint': endpoint 'agent/x' is neither a mail address, mq9://host:port/<mail address>, nor a URL",
      ],
      [
        "weight.json",
        '{"name":"bad-weight","capabilities":["x"],"weight":0}',
        "agent 'bad-weight': weight must be a number > 0",
      ],
      ["syntax.json", '{\n  "name": "bad-syntax",\n  capabilities: []\n}', ":3:3 is not JSON: "],
    ];
    for (const [file, text, message] of bad) {
      writeFileSync(join(dir, file), text);
      const reg = await runCli(["agent", "register", "--manifest", join(dir, file), "--server", server]);
      expect(reg.code, file).toBe(2);
      expect(reg.stdout, file).toBe("");
      expect(reg.stderr, file).toContain(message);
    }
    const missing = await runCli([
      "agent",
      "register",
      "--manifest",
      join(dir, "none.json"),
      "--server",
      server,
    ]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe(`mq9: cannot read ${join(dir, "none.json")}: no such file\n`);
    for (const name of ["bad-typo", "bad-nocaps", "bad-endpoint", "bad-weight", "bad-syntax"]) {
      const got = await runCli(["agent", "get", "--name", name, "--server", server]);
      expect(got.stderr, name).toBe(`mq9: no agent is registered with name ${name}\n`);
    }
  });
});

describe("mq9 serve's orchestrator settings", () => {
  it("namespace, trace budget and log sampling given by flag and environment reach the orchestrator", async () => {
    const dir = tempDir();
    const served = await serve(
      [
        "--data",
        join(dir, "data"),
        "--registry-embedder",
        "none",
        "--orchestrator-namespace",
        "aud",
        "--trace-budget",
        "2",
        "--log-level",
        "debug",
      ],
      0,
      { MQ9_LOG_SAMPLE_RATE: "1" },
    );
    const server = `mq9://127.0.0.1:${served.port}`;
    const running = await agents(server, [
      { name: "aud-echo", capabilities: ["aud.echo"], namespace: "aud" },
    ]);
    const client = await connect(server, { name: "audit-settings" });
    try {
      await client.ensureMailbox({ name: "audit.settings" });
      const trace = createEnvelope({ msg_type: "query", source: "audit-settings", target: "*", payload: 0 });
      const sent: Envelope[] = [];
      for (let i = 0; i < 3; i++) {
        const message = createEnvelope({
          msg_type: "query",
          source: "audit-settings",
          target: "*",
          capability: "aud.echo",
          payload: `body-${i}`,
          reply_to: "audit.settings",
          trace_id: trace.trace_id,
        });
        sent.push(await sendEnvelope(client, "aud.router", message));
      }
      const letter = await until("the third to be dead-lettered", async () => {
        const { body } = await http("GET", `${served.api}/api/dead-letters?trace_id=${trace.trace_id}`);
        return body.dead_letters?.[0];
      });
      expect(letter.reason).toBe("trace budget exhausted (2 messages per trace)");
      // Routed at once, any one of the three may be the one over the budget.
      expect(sent.map((m) => m.msg_id)).toContain(letter.envelope.msg_id);
      // With a sample rate of 1 every routed message has its line: metadata, never the body.
      const routed = await until("a line per routed message", () => {
        const lines = served.logs().filter((l) => l.trace_id === trace.trace_id && l.layer === "capability");
        return lines.length === 2 ? lines : undefined;
      });
      expect(routed[0]).toMatchObject({ level: 20, agent: "aud-echo", source: "audit-settings" });
      expect(JSON.stringify(routed)).not.toContain("body-");
    } finally {
      await client.close();
      await running.stop();
      await served.stop();
    }
  }, 90_000);
});

/** A Retry-After of whole seconds: no task has ended yet, so at least a second, at most a minute. */
function expectRetryAfter(headers: Headers): void {
  const value = headers.get("retry-after") ?? "";
  expect(value).toMatch(/^[1-9][0-9]?$/);
  expect(Number(value)).toBeLessThanOrEqual(60);
}

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
      expectRetryAfter(answers[5].headers);
      expect(answers[5].body.code).toBe("QUEUE_FULL");
      const { body } = await http("GET", `${served.api}/api/tasks?status=pending`);
      expect(body.tasks).toHaveLength(5);
      await metricLine(served.api, /^mq9_orchestrator_queue_depth 3$/m);
      await metricLine(served.api, /^mq9_orchestrator_tasks\{state="queued"\} 3$/m);
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
      expectRetryAfter(answers[4].headers);
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

/** A chain a → b → c; `cAfter` is the step c depends on. */
const chain = (cAfter: string) =>
  `task_type: chain\ntimeout: 5m\nsteps:\n  - id: a\n    capability: chain.first\n    timeout: 60s\n  - id: b\n    capability: chain.gate\n    depends_on: [a]\n  - id: c\n    capability: chain.echo\n    timeout: 60s\n    depends_on: [${cAfter}]\n`;

describe("mq9 serve's orchestrator guards, deadlines and reloads, end to end", () => {
  let served: Served;
  let server: string;
  let templates: string;
  let hooks: Server;
  const received: Json[] = [];
  const running: { stop(): Promise<void> }[] = [];
  let client: Awaited<ReturnType<typeof connect>>;
  const inbox = "audit.guards";

  beforeAll(async () => {
    hooks = await webhookReceiver(received);
    const dir = tempDir();
    templates = join(dir, "templates");
    mkdirSync(templates);
    writeFileSync(join(templates, "chain.yaml"), chain("b"));
    writeFileSync(
      join(templates, "never.yaml"),
      "task_type: never\ntimeout: 5m\nsteps:\n  - id: work\n    capability: nobody.ever\n    timeout: 2s\n",
    );
    writeFileSync(join(templates, "prio.yaml"), one("prio", "p.work"));
    served = await serve([
      "--data",
      join(dir, "data"),
      "--templates",
      templates,
      "--config",
      loopWebhookConfig(dir, hooks),
    ]);
    server = `mq9://127.0.0.1:${served.port}`;
    running.push(
      await agents(server, [
        { name: "p-echo", capabilities: ["p.work"], echo_priority: true },
        { name: "first", capabilities: ["chain.first"], output: { a: 1 } },
        { name: "echo", capabilities: ["chain.echo"], echo_payload: true },
      ]),
    );
    client = await connect(server, { name: "audit-guards" });
    await client.ensureMailbox({ name: inbox });
  }, 60_000);
  afterAll(async () => {
    await client?.close();
    for (const r of running) await r.stop();
    await served?.stop();
    hooks?.close();
  });

  /** Hands a message to the router as another SDK would, built by hand. */
  const toRouter = (fields: Partial<Envelope>) =>
    sendEnvelope(client, "orch.router", {
      ...createEnvelope({ msg_type: "query", source: "audit-guards", target: "*", payload: "hi" }),
      reply_to: inbox,
      ...fields,
    } as Envelope);

  /** The one dead letter of a trace, its warning line, and its loop_detected webhook. */
  async function stopped(traceId: string) {
    const letter = await until("the dead letter", async () => {
      const { body } = await http("GET", `${served.api}/api/dead-letters?trace_id=${traceId}`);
      return body.dead_letters?.[0];
    });
    const hook = await until("the loop_detected webhook", () =>
      received.find((h) => h.event === "loop_detected" && h.data.trace_id === traceId),
    );
    // The log line may reach the test after the webhook does: it is waited for too.
    const line = await until("the warning line", () =>
      served.logs().find((l) => String(l.msg).includes("loop guard stopped") && l.trace_id === traceId),
    );
    return { letter, hook: hook.data as Json, line };
  }

  it("a step whose agent never comes times out at the step's timeout, and the task says why", async () => {
    const queued = await http("POST", `${served.api}/api/tasks?async=true`, {
      task_type: "never",
      payload: {},
    });
    expect(queued.status).toBe(202);
    const task = await ended(served.api, queued.body.task_id);
    const reason = "no agent took it within 2000 ms (no live agent has capability 'nobody.ever')";
    expect(task.status).toBe("timeout");
    expect(task.error).toBe(`step 'work' timed out: ${reason}`);
    expect(task.steps.work.status).toBe("timeout");
    expect(task.steps.work.history.map((h: Json) => h.outcome)).toEqual(["timeout"]);
  }, 90_000);

  it("mq9 task run says why a step waits, then that it timed out", async () => {
    const run = await runCli(["task", "run", "never", "--payload", "{}", "--api", served.api]);
    expect(run.code).toBe(1);
    const lines = run.stdout.split("\n").map((l) => l.trim());
    expect(lines).toContain("work             pending, waiting: no live agent has capability 'nobody.ever'");
    expect(lines.some((l) => l.startsWith("work             timeout in "))).toBe(true);
  }, 60_000);

  it("POST /api/tasks takes each priority of the design; deferred is sent as normal; others are refused", async () => {
    const expected = { critical: "critical", urgent: "urgent", normal: "normal", deferred: "normal" };
    for (const [asked, sent] of Object.entries(expected)) {
      const res = await http("POST", `${served.api}/api/tasks`, {
        task_type: "prio",
        payload: {},
        priority: asked,
      });
      expect(res.status, asked).toBe(200);
      expect(res.body.status).toBe("completed");
      expect(res.body.result).toEqual({ priority: sent, agent: "p-echo" });
    }
    const before = (await http("GET", `${served.api}/api/tasks`)).body.tasks.length;
    const wrong = await http("POST", `${served.api}/api/tasks`, {
      task_type: "prio",
      payload: {},
      priority: "someday",
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toMatch(/priority/);
    expect((await http("GET", `${served.api}/api/tasks`)).body.tasks.length).toBe(before);
  }, 90_000);

  it("a message at its max_hops is stopped loudly: log with trace and path, metric, webhook", async () => {
    const sent = await toRouter({ capability: "p.work", hops: 3, max_hops: 3 });
    const { letter, hook, line } = await stopped(sent.trace_id);
    expect(letter.reason).toBe("max_hops exhausted (3 of 3)");
    expect(hook).toMatchObject({ kind: "max_hops", msg_id: sent.msg_id, path: sent.path, hops: 3 });
    expect(line).toMatchObject({ level: 40, kind: "max_hops", msg_id: sent.msg_id, path: sent.path });
    await metricLine(served.api, /^mq9_orchestrator_loop_stops_total\{guard="max_hops"\} [1-9]/m);
  }, 60_000);

  it("a msg_id handed to the router again is not routed twice: log, metric, webhook", async () => {
    const first = await toRouter({ capability: "p.work" });
    await until("the first to be answered", async () => {
      const got = await client.fetch(inbox, { deliver: "earliest", batch: 100, maxWaitMs: 0 });
      return got.map((m) => readEnvelope(m)).some((e) => e.in_reply_to === first.msg_id);
    });
    await sendEnvelope(client, "orch.router", first);
    const { letter, hook, line } = await stopped(first.trace_id);
    expect(letter.reason).toBe(`duplicate: msg_id ${first.msg_id} was routed before`);
    expect(hook).toMatchObject({ kind: "duplicate", msg_id: first.msg_id });
    expect(line).toMatchObject({ level: 40, kind: "duplicate", path: first.path });
    await metricLine(served.api, /^mq9_orchestrator_loop_stops_total\{guard="duplicate"\} [1-9]/m);
  }, 60_000);

  it("the trace API pages over a long trace: more than 100 messages a mailbox, none lost", async () => {
    const trace = createEnvelope({ msg_type: "query", source: "audit-guards", target: "*", payload: 0 });
    const sent = new Set<string>();
    for (let i = 0; i < 130; i++) {
      const message = await toRouter({ capability: "p.work", payload: i, trace_id: trace.trace_id });
      sent.add(message.msg_id);
    }
    const url = `${served.api}/api/traces/${trace.trace_id}`;
    // Each is in the router's mailbox and p-echo's (agent.p.echo): more than 100 in each.
    const whole = await until("every message routed to p-echo", async () => {
      const { body } = await http("GET", url);
      const inAgent = (body.messages ?? []).filter((m: Json) => m.mailbox === "agent.p.echo");
      return inAgent.length === 130 ? body : undefined;
    });
    const pages: Json[] = [];
    for (let offset: number | undefined = 0; offset !== undefined; ) {
      const { status, body } = await http("GET", `${url}?offset=${offset}&limit=40`);
      expect(status).toBe(200);
      expect(body.total).toBe(whole.total);
      pages.push(...body.messages);
      offset = body.next_offset;
    }
    expect(pages).toHaveLength(whole.total);
    expect(pages.map((m) => `${m.mailbox} ${m.msg_id}`)).toEqual(
      whole.messages.map((m: Json) => `${m.mailbox} ${m.msg_id}`),
    );
    for (const mailbox of ["orch.router", "agent.p.echo"]) {
      const ids = new Set(pages.filter((m) => m.mailbox === mailbox).map((m) => m.msg_id));
      expect(
        [...sent].filter((id) => !ids.has(id)),
        mailbox,
      ).toEqual([]);
    }
  }, 120_000);

  it("a reload that changes depends_on leaves a waiting task's next step as it was", async () => {
    const old = await http("POST", `${served.api}/api/tasks?async=true`, { task_type: "chain", payload: {} });
    await until("step b to wait for its agent", async () => {
      const { body } = await http("GET", `${served.api}/api/tasks/${old.body.task_id}`);
      return body.steps.b.waiting !== undefined;
    });
    writeFileSync(join(templates, "chain.yaml"), chain("a"));
    await until("the reload", async () => {
      const { body } = await http("GET", `${served.api}/api/templates`);
      const c = body.templates.find((t: Json) => t.name === "chain")?.steps.find((s: Json) => s.id === "c");
      return c?.depends_on?.[0] === "a";
    });
    running.push(await agents(server, [{ name: "gate", capabilities: ["chain.gate"], output: { b: 2 } }]));
    const before = await ended(served.api, old.body.task_id);
    expect(before.status).toBe("completed");
    // Started on the old text: c still receives b's output.
    expect(before.result).toEqual({ received: { b: 2, agent: "gate" }, agent: "echo" });
    // A new task runs on the new text: c receives a's output.
    const after = await http("POST", `${served.api}/api/tasks`, { task_type: "chain", payload: {} });
    expect(after.body.status).toBe("completed");
    expect(after.body.result.c).toEqual({ received: { a: 1, agent: "first" }, agent: "echo" });
  }, 120_000);

  it("a bouncing result is stopped at once, not after max_hops", async () => {
    // A result routed by capability goes nowhere: it goes back to whoever asked.
    const byCapability = await toRouter({ msg_type: "result", capability: "p.work", in_reply_to: "q-1" });
    const first = await stopped(byCapability.trace_id);
    expect(first.letter.reason).toMatch(/^bounce: a result goes back to whoever asked/);
    expect(first.letter.envelope.hops).toBe(byCapability.hops);
    expect(first.hook).toMatchObject({ kind: "bounce" });
    // The same message answered twice to one agent: the second answer is a result going round.
    const once = createEnvelope({ msg_type: "query", source: "audit-guards", target: "*", payload: 0 });
    const answer = (n: number) =>
      toRouter({
        msg_type: "result",
        target: "p-echo",
        in_reply_to: "q-2",
        payload: n,
        trace_id: once.trace_id,
      });
    await answer(1);
    const again = await answer(2);
    const second = await stopped(once.trace_id);
    expect(second.letter.reason).toMatch(/^bounce: message q-2 was answered to p-echo already/);
    expect(second.letter.envelope.msg_id).toBe(again.msg_id);
    expect(second.line).toMatchObject({ level: 40, kind: "bounce" });
    await metricLine(served.api, /^mq9_orchestrator_loop_stops_total\{guard="bounce"\} [2-9]/m);
  }, 60_000);
});

describe("mq9 serve --intent-threshold", () => {
  /** Asks a serve started with `threshold` to route an intent; the dead letter, or who answered. */
  async function routeIntent(threshold: string): Promise<{ letter?: Json; agent?: string }> {
    const dir = tempDir();
    const served = await serve(["--data", join(dir, "data"), "--intent-threshold", threshold]);
    const server = `mq9://127.0.0.1:${served.port}`;
    const running = await agents(server, [
      {
        name: "translator",
        capabilities: ["translate"],
        description: "Translates documents between English, Chinese, Japanese and Korean.",
      },
    ]);
    const client = await connect(server, { name: "audit-intent" });
    try {
      await client.ensureMailbox({ name: "audit.intent" });
      const sent = await sendEnvelope(client, "orch.router", {
        ...createEnvelope({ msg_type: "query", source: "audit-intent", target: "*", payload: "hi" }),
        capability: "nobody.has.it",
        intent: "translate this note into Japanese",
        reply_to: "audit.intent",
      } as Envelope);
      return await until(
        "a dead letter or an answer",
        async () => {
          const { body } = await http("GET", `${served.api}/api/dead-letters?trace_id=${sent.trace_id}`);
          if (body.dead_letters?.[0]) return { letter: body.dead_letters[0] as Json };
          const got = await client.fetch("audit.intent", { deliver: "earliest", batch: 10, maxWaitMs: 0 });
          const answer = got.map((m) => readEnvelope(m)).find((e) => e.in_reply_to === sent.msg_id);
          return answer ? { agent: (answer.payload as Json).agent as string } : undefined;
        },
        60_000,
      );
    } finally {
      await client.close();
      await running.stop();
      await served.stop();
    }
  }

  it("below the threshold an intent is dead-lettered with the closest score; at that score it is routed", async () => {
    const below = await routeIntent("0.99");
    expect(below.agent).toBeUndefined();
    const match =
      /^no live agent has capability 'nobody.has.it'; intent fallback: no live agent matches the intent 'translate this note into Japanese'; the closest was translator at (\d\.\d\d), below the threshold 0\.99$/.exec(
        below.letter?.reason,
      );
    expect(match, below.letter?.reason).not.toBeNull();
    // The reported score is rounded to two places: a threshold a hundredth lower is under it.
    const score = Number(match![1]);
    const above = await routeIntent(String(Math.max(0, score - 0.01)));
    expect(above).toEqual({ agent: "translator" });
  }, 120_000);
});
