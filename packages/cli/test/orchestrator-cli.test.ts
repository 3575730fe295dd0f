import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import {
  DESIGN_TEMPLATE,
  contentAnalysisTemplates as exampleTemplates,
  repoRoot as root,
  startContentAnalysisAgents as startAgents,
} from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, runCli, SERVE_ON_FREE_PORTS, spawnServe, tempDir } from "./cli-harness.js";

const text = "Agents send messages. The broker keeps every message for agents that are offline.";

interface Served {
  child: ChildProcess;
  server: string;
  api: string;
}

/** `mq9 serve` with the orchestrator on free ports; resolves once the orchestrator's API answers. */
async function serveWithOrchestrator(templates: string): Promise<Served> {
  const child = spawn(
    process.execPath,
    [CLI, ...SERVE_ON_FREE_PORTS, "--data", tempDir(), "--templates", templates],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  const ready = await new Promise<{ port: number; httpPort: number }>((resolve, reject) => {
    child.stdout!.on("data", (chunk) => {
      out += chunk;
      const line = out.split("\n").find((l) => l.includes('"httpPort"'));
      if (line) resolve(JSON.parse(line));
    });
    child.on("exit", (code) => reject(new Error(`mq9 serve exited with ${code}`)));
  });
  const api = `http://127.0.0.1:${ready.httpPort}`;
  for (;;) {
    const res = await fetch(`${api}/api/templates`).catch(() => undefined);
    if (res?.ok) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, server: `mq9://127.0.0.1:${ready.port}`, api };
}

describe("mq9 task | trace | agent list | templates (against mq9 serve's orchestrator)", () => {
  let served: Served;
  let agents: { stop(): Promise<void> }[];
  let taskId: string;
  let traceId: string;
  // The HTTP commands find the HTTP server from the broker's address, as a user's would.
  const cli = (...args: string[]) => runCli([...args, "--server", served.server]);

  beforeAll(async () => {
    served = await serveWithOrchestrator(exampleTemplates);
    agents = await startAgents(served.server, { heartbeatMs: 200, onError: () => {} });
  });
  afterAll(async () => {
    for (const agent of agents ?? []) await agent.stop();
    served?.child.kill("SIGTERM");
  });

  it("task run follows the steps live and prints the merged result", async () => {
    const run = await cli("task", "run", "content-analysis", "--payload", JSON.stringify({ text }));
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const lines = run.stdout.split("\n");
    taskId = /^task (\w+) \(content-analysis\) started$/.exec(lines[0])![1];
    for (const step of ["summarize", "keywords", "quality", "report"]) {
      expect(lines.some((l) => new RegExp(`^  ${step}\\s+completed`).test(l))).toBe(true);
    }
    expect(run.stdout).toMatch(new RegExp(`task ${taskId} completed in \\d`));
    expect(run.stdout).toContain('"summary": "Agents send messages.');
    expect(run.stdout).toMatch(/^ {2}summarize\s+completed by summarizer in /m);
  });

  it("task show, task list, and cancel of a finished task", async () => {
    const show = await cli("task", "show", taskId);
    expect(show.code).toBe(0);
    traceId = /^trace (\w+)$/m.exec(show.stdout)![1];
    expect(show.stdout).toContain(`task ${taskId} (content-analysis) completed`);
    const list = await cli("task", "list", "--status", "completed");
    expect(list.stdout.split("\n")[0]).toMatch(/^TASK\s+TYPE\s+STATUS\s+STARTED\s+TOOK\s+STEPS$/);
    expect(list.stdout).toContain(taskId);
    const json = await cli("task", "show", taskId, "--json");
    expect(JSON.parse(json.stdout)).toMatchObject({ task_id: taskId, status: "completed" });
    const cancel = await cli("task", "cancel", taskId);
    expect(cancel.code).toBe(1);
    expect(cancel.stderr).toBe(
      `mq9: task ${taskId} is already completed; only a pending or running task can be canceled\n`,
    );
  }, 120_000);

  it("trace prints a readable timeline of the task's messages", async () => {
    const trace = await cli("trace", traceId);
    expect(trace.code).toBe(0);
    const lines = trace.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(new RegExp(`^trace ${traceId}: 6 messages over [\\d.]+ ms$`));
    expect(
      lines.slice(1).filter((l) => /orchestrator -> (summarizer|keyword-extractor|quality-checker)/.test(l)),
    ).toHaveLength(3);
    expect(lines[1]).toMatch(
      /^\d\d:\d\d:\d\d\.\d{3}\s+\+0\.0ms {2}hop 0 {2}orchestrator -> \S+\s+query \[\w+\]/,
    );
  });

  it("agent list shows the agents with load and liveness", async () => {
    const list = await cli("agent", "list");
    expect(list.code).toBe(0);
    expect(list.stdout.split("\n")[0]).toMatch(/^NAME\s+STATE\s+LOAD\s+WEIGHT\s+SEEN\s+CAPABILITIES$/);
    expect(list.stdout).toMatch(/^summarizer\s+online\s+0\/4\s+1\s+.+ ago\s+summarize$/m);
  });

  it("bad input: an unknown task type, a payload that is not JSON, an API that is not there", async () => {
    const unknown = await cli("task", "run", "nope");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe("mq9: unknown task type 'nope'; known types: content-analysis\n");
    const badJson = await cli("task", "run", "content-analysis", "--payload", "{oops");
    expect(badJson.code).toBe(2);
    expect(badJson.stderr).toMatch(/^mq9: the payload is not valid JSON/);
    const away = await runCli(["task", "list", "--http", "http://127.0.0.1:9"]);
    expect(away.code).toBe(3);
    expect(away.stderr).toMatch(
      /^mq9: cannot reach the broker's HTTP API at http:\/\/127.0.0.1:9 .*is 'mq9 serve' running there\?/,
    );
  }, 120_000);

  it("a broker without the orchestrator: task and agent commands say so, not 'Not Found'", async () => {
    const off = await spawnServe([
      "--data",
      join(tempDir(), "data"),
      "--registry-embedder",
      "none",
      "--orchestrator",
      "off",
    ]);
    try {
      const http = `http://127.0.0.1:${off.httpPort}`;
      for (const args of [
        ["task", "list"],
        ["agent", "list"],
        ["task", "run", "x"],
      ]) {
        const result = await runCli([...args, "--http", http]);
        expect(result.code, args.join(" ")).toBe(1);
        expect(result.stderr).toBe(
          `mq9: the broker at ${http} runs no orchestrator (its /api routes are not there): start mq9 serve with --orchestrator on (the default), or point --server or --http at one that runs it\n`,
        );
      }
    } finally {
      off.child.kill("SIGTERM");
      await off.exited;
    }
  }, 60_000);

  it("the HTTP address comes from --server or MQ9_SERVER (the broker's INFO), or --http; -v says which", async () => {
    const httpPort = new URL(served.api).port;
    const fromFlag = await runCli(["agent", "list", "-v", "--server", served.server]);
    expect(fromFlag.code, fromFlag.stderr).toBe(0);
    expect(fromFlag.stderr).toBe(
      `mq9: HTTP API ${served.api} (port ${httpPort} from the INFO of the broker at ${served.server} (--server))\n`,
    );
    expect(fromFlag.stdout).toMatch(/^summarizer\s+online/m);
    const fromEnv = await runCli(["task", "list", "-v"], { MQ9_SERVER: served.server, MQ9_HTTP: "" });
    expect(fromEnv.code, fromEnv.stderr).toBe(0);
    expect(fromEnv.stderr).toContain(
      `(port ${httpPort} from the INFO of the broker at ${served.server} (MQ9_SERVER))`,
    );
    const given = await runCli(["agent", "list", "-v", "--http", served.api], { MQ9_SERVER: "127.0.0.1:9" });
    expect(given.code, given.stderr).toBe(0);
    expect(given.stderr).toBe(`mq9: HTTP API ${served.api} (given by --http)\n`);
    // --server on the command line beats an MQ9_HTTP left in the environment.
    const flagBeatsEnv = await runCli(["agent", "list", "-v", "--server", served.server], {
      MQ9_HTTP: "http://127.0.0.1:9",
    });
    expect(flagBeatsEnv.code, flagBeatsEnv.stderr).toBe(0);
    expect(flagBeatsEnv.stderr).toContain(`mq9: HTTP API ${served.api} (port ${httpPort} from the INFO`);
  }, 120_000);

  it("--server pointed at the HTTP port: a clear error and exit 3, for NATS and HTTP commands alike", async () => {
    const wrong = served.api.replace("http://", "mq9://");
    const [create, list] = await Promise.all([
      runCli(["mailbox", "create", "demo.inbox", "--server", wrong, "--timeout", "1000"]),
      runCli(["agent", "list", "--server", wrong]),
    ]);
    expect(create.code, create.stderr).toBe(3);
    expect(create.stderr).toBe(
      `mq9: cannot connect to ${wrong}: no NATS INFO within 1000 ms; is the broker reachable, and is that its NATS port (not its HTTP port)? (TIMEOUT)\n`,
    );
    expect(list.code, list.stderr).toBe(3);
    expect(list.stderr).toMatch(
      /^mq9: 127\.0\.0\.1:\d+ sent no NATS INFO within 5000 ms: it is not an mq9 broker's port/,
    );
  }, 120_000);
});

describe("mq9 templates check", () => {
  const designSchedule = [
    "  1. summarize         parallel with: extract_keywords, check_quality",
    "  2. extract_keywords  parallel with: summarize, check_quality",
    "  3. check_quality     parallel with: summarize, extract_keywords",
    "  4. merge_result      after: summarize, extract_keywords, check_quality",
    "",
  ].join("\n");

  it("reports every problem with file, line and column, and exits 1", async () => {
    const folder = join(tempDir(), "templates");
    mkdirSync(folder);
    writeFileSync(join(folder, "good.yaml"), "name: good\nsteps:\n  - id: a\n    capability: x\n");
    writeFileSync(
      join(folder, "bad.yaml"),
      "name: bad\nsteps:\n  - id: a\n    capability: x\n    depends_on: [b]\n  - id: b\n    agent: y\n    depends_on: a\n",
    );
    const result = await runCli(["templates", "check", folder]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `${join(folder, "bad.yaml")}:3:5: steps depend on each other in a cycle: a -> b -> a\n`,
    );
    expect(result.stdout).toBe(
      `ok   good (${join(folder, "good.yaml")}): a\n  1. a  first\n1 template ok, 1 problem\n`,
    );
    const ok = await runCli(["templates", "check", exampleTemplates]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain("content-analysis");
  });

  it("checks one template file as well as a folder; a path that is not there says so", async () => {
    const folder = join(tempDir(), "templates");
    mkdirSync(folder);
    const file = join(folder, "design.yaml");
    writeFileSync(file, DESIGN_TEMPLATE);
    const one = await runCli(["templates", "check", file]);
    expect(one.code).toBe(0);
    expect(one.stdout).toBe(
      `ok   content_analysis (${file}): summarize + extract_keywords + check_quality -> merge_result\n${designSchedule}1 template ok, 0 problems\n`,
    );
    const missing = join(folder, "nowhere");
    const none = await runCli(["templates", "check", missing]);
    expect(none.code).toBe(1);
    expect(none.stderr).toBe(`${missing}: cannot read the templates folder: no such folder\n`);
  });

  it("shows the steps that run at once joined by +, and what follows them after ->", async () => {
    const folder = join(tempDir(), "templates");
    mkdirSync(folder);
    writeFileSync(join(folder, "design.yaml"), DESIGN_TEMPLATE);
    const result = await runCli(["templates", "check", folder]);
    expect(result.stdout).toBe(
      `ok   content_analysis (${join(folder, "design.yaml")}): summarize + extract_keywords + check_quality -> merge_result\n${designSchedule}1 template ok, 0 problems\n`,
    );
  });

  it("says how it reads each step: no mode runs in parallel, pipeline after the step before, when and merge wait", async () => {
    const folder = join(tempDir(), "templates");
    mkdirSync(folder);
    // The issue's template: "shout, then count" written without a mode runs both at once.
    writeFileSync(
      join(folder, "a.yaml"),
      "name: shout-count\nsteps:\n  - id: shout\n    capability: shout\n  - id: count\n    capability: count\n",
    );
    writeFileSync(
      join(folder, "b.yaml"),
      "name: shout-then-count\nsteps:\n  - id: shout\n    capability: shout\n    mode: pipeline\n  - id: count\n    capability: count\n    mode: pipeline\n",
    );
    writeFileSync(
      join(folder, "c.yaml"),
      [
        "name: dag",
        "steps:",
        "  - id: fetch",
        "    capability: fetch",
        "  - id: lint",
        "    capability: lint",
        "    mode: fan_out",
        "  - id: summarize",
        "    capability: summarize",
        "    depends_on: fetch",
        "  - id: publish",
        "    capability: publish",
        "    when: outputs.lint.ok == true",
        "  - id: report",
        "    mode: merge",
        "    depends_on: [summarize, lint]",
        "",
      ].join("\n"),
    );
    const text = await runCli(["templates", "check", folder]);
    expect(text.stderr).toBe("");
    expect(text.code).toBe(0);
    expect(text.stdout).toBe(
      [
        `ok   shout-count (${join(folder, "a.yaml")}): shout + count`,
        "  1. shout  parallel with: count",
        "  2. count  parallel with: shout",
        `ok   shout-then-count (${join(folder, "b.yaml")}): shout -> count`,
        "  1. shout  first",
        "  2. count  after: shout",
        `ok   dag (${join(folder, "c.yaml")}): fetch + lint -> summarize + publish -> report`,
        "  1. fetch      parallel with: lint, publish",
        "  2. lint       parallel with: fetch, summarize",
        "  3. summarize  after: fetch; parallel with: lint, publish",
        "  4. publish    after: lint; parallel with: fetch, summarize, report",
        "  5. report     after: summarize, lint; parallel with: publish",
        "3 templates ok, 0 problems",
        "",
      ].join("\n"),
    );
    const json = await runCli(["templates", "check", join(folder, "c.yaml"), "--json"]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout).templates[0].schedule).toEqual([
      { step: "fetch", after: [], parallel_with: ["lint", "publish"] },
      { step: "lint", after: [], parallel_with: ["fetch", "summarize"] },
      { step: "summarize", after: ["fetch"], parallel_with: ["lint", "publish"] },
      { step: "publish", after: ["lint"], parallel_with: ["fetch", "summarize", "report"] },
      { step: "report", after: ["summarize", "lint"], parallel_with: ["publish"] },
    ]);
  });
});

describe("examples/content-analysis", () => {
  it("runs with one command: three agents in parallel, merged, with the trace", async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ["examples/content-analysis/run.js"], {
      cwd: root,
      timeout: 60_000,
    });
    const lines = stdout.trimEnd().split("\n");
    expect(lines[0]).toBe("agents: summarizer, keyword-extractor, quality-checker");
    expect(lines[1]).toBe(
      "task completed: summarize=completed keywords=completed quality=completed report=completed",
    );
    expect(lines[2]).toMatch(/^summary: mq9 gives every agent a persistent mailbox/);
    expect(lines[3]).toBe("keywords: agent, agents, mq9, broker, built");
    expect(lines[5]).toMatch(/^trace \w+: 6 messages$/);
  });
});
