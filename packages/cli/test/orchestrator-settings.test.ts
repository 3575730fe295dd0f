// Each orchestrator setting of `mq9 serve`, given as a flag, an MQ9_* variable or a config
// file key, seen to change what a running orchestrator does with real agent processes.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createEnvelope, type Envelope, sendEnvelope, TraceMemory } from "@mq9/agent";
import { connect } from "@mq9/client";
import { Orchestrator } from "@mq9/orchestrator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadServeConfig } from "../src/serve/config.js";
import { runCli, tempDir } from "./cli-harness.js";
import {
  agents,
  http,
  type Json,
  one,
  requestCount,
  type Served,
  serve,
  until,
} from "./orchestrator-harness.js";

/** Longer than several reads at the default refresh (1 s), far shorter than the one set (60 s). */
const QUIET_MS = 2_500;

describe("mq9 serve's orchestrator lifetimes, refresh and poll timeout, end to end", () => {
  let served: Served;
  let server: string;
  const running: { stop(): Promise<void> }[] = [];

  beforeAll(async () => {
    const dir = tempDir();
    const templates = join(dir, "templates");
    mkdirSync(templates);
    // No task timeout: the memory's lifetime is the setting alone.
    writeFileSync(
      join(templates, "quick.yaml"),
      "task_type: quick\nsteps:\n  - id: work\n    capability: q.work\n",
    );
    writeFileSync(join(templates, "late.yaml"), one("late", "late.work"));
    const config = join(dir, "mq9.json");
    writeFileSync(
      config,
      JSON.stringify({ orchestrator: { memoryTtlSeconds: 3, directoryRefreshMs: 60_000 } }),
    );
    // One path each: a flag, the environment and the config file. Lifetimes of 3 s: long enough
    // to see a finished task, its dispatch and its memory before they expire, even on a busy machine.
    served = await serve(
      [
        "--data",
        join(dir, "data"),
        "--templates",
        templates,
        "--registry-embedder",
        "none",
        "--config",
        config,
        "--task-retention",
        "3",
      ],
      0,
      { MQ9_MESSAGE_TTL: "3", MQ9_POLL_TIMEOUT_MS: "100" },
    );
    server = `mq9://127.0.0.1:${served.port}`;
    running.push(await agents(server, [{ name: "q-agent", capabilities: ["q.work"], remember: "seen" }]));
  }, 60_000);
  afterAll(async () => {
    for (const r of running) await r.stop();
    await served?.stop();
  });

  /** Runs one `quick` task to completion; its id and trace. */
  async function quick(): Promise<Json> {
    const res = await http("POST", `${served.api}/api/tasks`, { task_type: "quick", payload: { n: 1 } });
    expect(res.body.status).toBe("completed");
    return res.body;
  }

  it("--task-retention: a finished task is gone from the API and the task list after it", async () => {
    const task = await quick();
    expect((await http("GET", `${served.api}/api/tasks/${task.task_id}`)).status).toBe(200);
    const gone = await until("the finished task to expire", async () => {
      const res = await http("GET", `${served.api}/api/tasks/${task.task_id}`);
      return res.status === 404 ? res : undefined;
    });
    expect(gone.body.code).toBe("TASK_NOT_FOUND");
    const list = await http("GET", `${served.api}/api/tasks`);
    expect(list.body.tasks.map((t: Json) => t.task_id)).not.toContain(task.task_id);
  }, 30_000);

  it("MQ9_MESSAGE_TTL: the orchestrator's messages to agents expire, and so leave the trace", async () => {
    const task = await quick();
    const url = `${served.api}/api/traces/${task.trace_id}`;
    const first = await http("GET", url);
    const queries = (body: Json) =>
      (body.messages ?? []).filter((m: Json) => m.msg_type === "query" && m.source === "orchestrator");
    expect(queries(first.body)).toHaveLength(1);
    // The agent's answer carries the agent's own TTL (a week): the trace keeps it.
    const later = await until("the dispatch to expire", async () => {
      const { body } = await http("GET", url);
      return queries(body).length === 0 ? body : undefined;
    });
    expect(later.messages.map((m: Json) => m.msg_type)).toEqual(["result"]);
  }, 30_000);

  it("orchestrator.memoryTtlSeconds: a trace's memory expires after it", async () => {
    const task = await quick();
    const client = await connect(server, { name: "settings-memory" });
    try {
      const memory = new TraceMemory(client, task.trace_id);
      expect(await memory.get("payload")).toEqual({ n: 1 });
      expect(await memory.get("seen")).toBeTypeOf("number");
      await until("the memory to expire", async () => (await memory.get("payload")) === undefined);
      expect(await memory.get("seen")).toBeUndefined();
    } finally {
      await client.close();
    }
  }, 30_000);

  it("orchestrator.directoryRefreshMs: an agent that registers is seen at the next read, not before", async () => {
    const queued = await http("POST", `${served.api}/api/tasks?async=true`, {
      task_type: "late",
      payload: {},
    });
    await until("the step to wait for its agent", async () => {
      const { body } = await http("GET", `${served.api}/api/tasks/${queued.body.task_id}`);
      return body.steps.work.waiting !== undefined;
    });
    const reads = await requestCount(served.api, "agent.discover");
    running.push(await agents(server, [{ name: "late", capabilities: ["late.work"] }]));
    // Registered, but the orchestrator reads the registry once a minute: the step waits on.
    await new Promise((r) => setTimeout(r, QUIET_MS));
    const still = await http("GET", `${served.api}/api/tasks/${queued.body.task_id}`);
    expect(still.body.steps.work.status).toBe("pending");
    expect(await requestCount(served.api, "agent.discover")).toBe(reads);
    // GET /api/agents reads the registry afresh, and the waiting step goes to the agent.
    await http("GET", `${served.api}/api/agents`);
    await until("the task to complete", async () => {
      const { body } = await http("GET", `${served.api}/api/tasks/${queued.body.task_id}`);
      return body.status === "completed";
    });
  }, 30_000);

  it("a second orchestrator on the serve's namespace is reported in the serve's log, not silent", async () => {
    const templates = join(tempDir(), "templates");
    mkdirSync(templates);
    writeFileSync(
      join(templates, "quick.yaml"),
      "task_type: quick\nsteps:\n  - id: work\n    capability: q.work\n",
    );
    // The package README's snippet, run beside mq9 serve's own orchestrator.
    const second = await Orchestrator.start({ server, templates, onError: () => {} });
    try {
      // Both read the shared inbox: sooner or later the serve's takes a reply of the second's.
      const warning = await until("the serve's warning", async () => {
        await second.submit("quick", {});
        return served
          .logs()
          .find((l) => String(l.msg).includes("another orchestrator runs on namespace 'orch'"));
      });
      expect(warning).toMatchObject({ level: 40 });
    } finally {
      await second.close();
    }
  }, 60_000);

  it("MQ9_POLL_TIMEOUT_MS: an idle orchestrator's FETCHes wait at most that long", async () => {
    // The router and the inbox each FETCH again every 100 ms; at the default 2 s, 60 more
    // FETCHes (with the agents' own) would take far longer than the 10 s allowed.
    const before = await requestCount(served.api, "msg.fetch");
    await until(
      "60 more FETCHes",
      async () => (await requestCount(served.api, "msg.fetch")) >= before + 60,
      10_000,
    );
  }, 30_000);
});

/** `n` messages for the router, each to a named agent, built as another SDK would. */
function toAgents(n: number, target: (i: number) => string): Envelope[] {
  return Array.from({ length: n }, (_, i) =>
    createEnvelope({ msg_type: "query", source: "settings-tester", target: target(i), payload: i }),
  );
}

describe("mq9 serve --poll-batch and --router-concurrency, end to end", () => {
  const N = 120;
  let dir: string;
  let data: string;

  beforeAll(async () => {
    dir = tempDir();
    data = join(dir, "data");
    // Two routers' mailboxes filled while no orchestrator reads them, so each starts with N
    // messages waiting: what one FETCH takes and how many are handled at once decide the rest.
    const filler = await serve(["--data", data, "--registry-embedder", "none", "--orchestrator", "off"]);
    const client = await connect(`mq9://127.0.0.1:${filler.port}`, { name: "settings-filler" });
    try {
      for (const namespace of ["pb", "rc"]) await client.ensureMailbox({ name: `${namespace}.router` });
      const manifest = join(dir, "sink.json");
      writeFileSync(manifest, JSON.stringify({ name: "sink", capabilities: ["sink.work"] }));
      const reg = await runCli([
        "agent",
        "register",
        "--manifest",
        manifest,
        "--server",
        `mq9://127.0.0.1:${filler.port}`,
      ]);
      expect(reg.stderr).toBe("");
      for (const message of toAgents(N, () => "sink")) await sendEnvelope(client, "pb.router", message);
      // Agents nobody registered: each is looked up in the whole registry before its dead letter.
      for (const message of toAgents(N, (i) => `ghost-${i}`))
        await sendEnvelope(client, "rc.router", message);
    } finally {
      await client.close();
      await filler.stop();
    }
  }, 60_000);

  /** Starts the orchestrator of `namespace` with `flags` on the filled data; resolves once its router is empty. */
  async function drain(namespace: string, flags: string[], done: (api: string) => Promise<boolean>) {
    const served = await serve([
      "--data",
      data,
      "--registry-embedder",
      "none",
      "--orchestrator-namespace",
      namespace,
      // No reads of the registry on the clock: the ones counted are the router's.
      "--directory-refresh-ms",
      "600000",
      ...flags,
    ]);
    try {
      await until(`the ${namespace} router to be drained`, () => done(served.api), 60_000);
      return {
        fetches: await requestCount(served.api, "msg.fetch"),
        reads: await requestCount(served.api, "agent.discover"),
      };
    } finally {
      await served.stop();
    }
  }

  /** Whether the orchestrator's metrics show `n` of a counter (a scrape does no FETCH). */
  const counted = (line: string) => async (api: string) =>
    (await (await fetch(`${api}/metrics`)).text()).includes(`\n${line} ${N}\n`);

  it("--poll-batch 1: the router takes one message per FETCH", async () => {
    const delivered = counted('mq9_orchestrator_dispatches_total{layer="explicit"}');
    const { fetches } = await drain("pb", ["--poll-batch", "1"], delivered);
    // One FETCH per message at least (the default batch, 256, takes them all in one).
    expect(fetches).toBeGreaterThanOrEqual(N);
  }, 90_000);

  it("--router-concurrency 1: the router handles one message at a time", async () => {
    const letters = counted('mq9_orchestrator_dead_letters_total{reason="unavailable"}');
    const { reads } = await drain("rc", ["--router-concurrency", "1"], letters);
    // Each unknown agent is looked up on its own; handled at once (the default), they share reads.
    expect(reads).toBeGreaterThanOrEqual(N);
  }, 90_000);
});

/** The settings of issue 19's list: config key, flag, variable. */
const SEVEN = [
  ["directoryRefreshMs", "directory-refresh-ms", "MQ9_DIRECTORY_REFRESH_MS"],
  ["retentionSeconds", "task-retention", "MQ9_TASK_RETENTION"],
  ["messageTtlSeconds", "message-ttl", "MQ9_MESSAGE_TTL"],
  ["memoryTtlSeconds", "memory-ttl", "MQ9_MEMORY_TTL"],
  ["pollBatch", "poll-batch", "MQ9_POLL_BATCH"],
  ["pollTimeoutMs", "poll-timeout-ms", "MQ9_POLL_TIMEOUT_MS"],
  ["routerConcurrency", "router-concurrency", "MQ9_ROUTER_CONCURRENCY"],
] as const;

const camel = (flag: string) => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

describe("mq9 serve's orchestrator settings: file, environment, flag, and refused values", () => {
  it("takes each from the config file, the environment and a flag, flags winning", () => {
    const file = join(tempDir(), "mq9.json");
    writeFileSync(file, JSON.stringify({ orchestrator: Object.fromEntries(SEVEN.map(([key]) => [key, 7])) }));
    for (const [key, flag, env] of SEVEN) {
      expect(loadServeConfig({ file }).orchestrator[key], key).toBe(7);
      expect(loadServeConfig({ file, env: { [env]: "8" } }).orchestrator[key], env).toBe(8);
      const flags = { [camel(flag)]: "9" };
      expect(loadServeConfig({ file, env: { [env]: "8" }, flags }).orchestrator[key], flag).toBe(9);
    }
  });

  it("refuses a negative, zero or fractional value, naming the setting and where it was set", () => {
    const file = join(tempDir(), "mq9.json");
    for (const [key, flag, env] of SEVEN) {
      for (const bad of ["-1", "0", "1.5"]) {
        expect(() => loadServeConfig({ flags: { [camel(flag)]: bad } }), `--${flag} ${bad}`).toThrow(
          `orchestrator.${key}: must be a whole number above 0 (set by --${flag} ${bad})`,
        );
      }
      expect(() => loadServeConfig({ env: { [env]: "-1" } })).toThrow(`(set by ${env}=-1)`);
      writeFileSync(file, JSON.stringify({ orchestrator: { [key]: 0 } }));
      expect(() => loadServeConfig({ file })).toThrow(
        `orchestrator.${key}: must be a whole number above 0 (set in ${file}; its flag is --${flag}, its variable ${env})`,
      );
      expect(() => loadServeConfig({ flags: { [camel(flag)]: "soon" } })).toThrow(
        `--${flag} must be a number, got 'soon'`,
      );
    }
  });

  it("a refused value stops mq9 serve at start with that message and exit code 2", async () => {
    const byFlag = await runCli(["serve", "--data", join(tempDir(), "data"), "--poll-batch", "-1"]);
    expect(byFlag.code).toBe(2);
    expect(byFlag.stderr).toBe(
      "mq9: invalid configuration: orchestrator.pollBatch: must be a whole number above 0 (set by --poll-batch -1)\n",
    );
    const byEnv = await runCli(["serve", "--data", join(tempDir(), "data")], { MQ9_POLL_TIMEOUT_MS: "fast" });
    expect(byEnv.code).toBe(2);
    expect(byEnv.stderr).toBe("mq9: MQ9_POLL_TIMEOUT_MS must be a number, got 'fast'\n");
  });
});
