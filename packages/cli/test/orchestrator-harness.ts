// What the orchestrator's end-to-end tests share: `mq9 serve` in a process of its own with
// JSON logs, agents in processes of their own (fixtures/orchestrator-agents.mjs), and small
// readers of its HTTP API and /metrics.
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { spawnServe, until } from "@mq9/testkit";

export { until };

const AGENTS = fileURLToPath(new URL("./fixtures/orchestrator-agents.mjs", import.meta.url));

/** A template of one step, `work`, done by any agent with `capability`. */
export const one = (name: string, capability: string, extra = "") =>
  `task_type: ${name}\ntimeout: 2m\nsteps:\n  - id: work\n    capability: ${capability}\n    timeout: 60s\n${extra}`;

export interface Served {
  child: ChildProcess;
  port: number;
  api: string;
  logs: () => Record<string, unknown>[];
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** `mq9 serve` with JSON logs; resolves once the orchestrator's API answers (the broker's, with `--orchestrator off`). */
export async function serve(args: string[], port = 0, env: Record<string, string> = {}): Promise<Served> {
  const served = await spawnServe(args, { port, env });
  const { child } = served;
  const api = `http://127.0.0.1:${served.httpPort}`;
  // Without the orchestrator, the broker's own health check says it is ready.
  const off = args.some((arg, i) => arg === "--orchestrator" && args[i + 1] === "off");
  const probe = off ? "/healthz" : "/api/templates";
  // Bounded, and the process ended on failure: a test that gives up must not leave it running.
  const deadline = Date.now() + 60_000;
  for (;;) {
    const res = await fetch(`${api}${probe}`).catch(() => undefined);
    if (res?.ok) break;
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`mq9 serve did not answer ${probe} within 60 s: ${served.stderr()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const logs = () =>
    served
      .stdout()
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return {
    child,
    port: served.port,
    api,
    logs,
    stop: async (signal = "SIGTERM") => {
      child.kill(signal);
      await served.exited;
    },
  };
}

export interface AgentSpec {
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
  /** The orchestrator's namespace the agent works in (default orch). */
  namespace?: string;
  /** Print "handled <msg_id>" for each message handled. */
  report?: boolean;
  /** Answer with the priority the message came with. */
  echo_priority?: boolean;
  /** Answer with the payload the message came with (`received`). */
  echo_payload?: boolean;
  /** The manifest's tags: a list, or an object as the design writes them. */
  tags?: string[] | Record<string, string>;
  /** Write the count of messages handled to the trace's memory under this key. */
  remember?: string;
  /** Lease of the messages the agent fetches (default the SDK's, 30 s). */
  lease_ms?: number;
  /** Print what the SDK logs, info included, on stdout as `log <message> <fields>`. */
  log?: boolean;
}

/** Agents in a process of their own (fixtures/orchestrator-agents.mjs); resolves once registered. */
export async function agents(
  server: string,
  list: AgentSpec[],
): Promise<{ stop(signal?: NodeJS.Signals): Promise<void>; output(): string }> {
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
    stop: async (signal: NodeJS.Signals = "SIGTERM") => {
      child.kill(signal);
      await exited;
    },
    output: () => out,
  };
}

// biome-ignore lint/suspicious/noExplicitAny: JSON answers of the API, checked field by field with expect
export type Json = Record<string, any>;

/** One request to the HTTP API, its answer read as JSON. */
export async function http(method: "GET" | "POST", url: string, body?: unknown) {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Json };
}

/** Scrapes /metrics until a line matches (a scrape may show numbers up to 250 ms old). */
export async function metricLine(api: string, line: RegExp): Promise<void> {
  await until(`a metric line matching ${line}`, async () =>
    line.test(await (await fetch(`${api}/metrics`)).text()),
  );
}

/** Polls a task until it has ended. */
export async function ended(api: string, taskId: string, timeoutMs = 60_000): Promise<Json> {
  return until(
    `task ${taskId} to end`,
    async () => {
      const { body } = await http("GET", `${api}/api/tasks/${taskId}`);
      return ["completed", "failed", "timeout", "canceled"].includes(body.status) ? body : undefined;
    },
    timeoutMs,
  );
}

/** The broker's count of answered requests of one operation (`msg.fetch`, `agent.discover`, ...). */
export async function requestCount(api: string, op: string): Promise<number> {
  const text = await (await fetch(`${api}/metrics`)).text();
  let total = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith(`mq9_requests_total{op="${op}",`)) total += Number(line.split(" ").pop());
  }
  return total;
}
