import { cpSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  contentAnalysisTemplates as exampleTemplates,
  startContentAnalysisAgents as startAgents,
  until,
} from "@mq9/testkit";
import { Ajv2020 } from "ajv/dist/2020.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServeProcess, spawnServe, tempDir } from "./cli-harness.js";

type Document = {
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, { schema?: object }> }> }>
  >;
};

/** Calls a route and checks its answer against what the served OpenAPI document says of it. */
function checker(base: string, document: Document) {
  const ajv = new Ajv2020({ strict: false });
  const called = new Map<string, Set<number>>();
  const check = async (method: string, path: string, url: string, status: number, body?: unknown) => {
    const res = await fetch(`${base}${url}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    expect(res.status, `${method} ${url}: ${text}`).toBe(status);
    const documented = document.paths[path]?.[method.toLowerCase()]?.responses[String(status)];
    expect(documented, `${method} ${path} documents ${status}`).toBeDefined();
    const json = JSON.parse(text);
    const schema = documented!.content?.["application/json"]?.schema;
    if (schema)
      expect(ajv.validate(schema, json), `${method} ${path} ${text}: ${ajv.errorsText()}`).toBe(true);
    const key = `${method} ${path}`;
    called.set(key, new Set([...(called.get(key) ?? []), status]));
    return json;
  };
  return { check, called };
}

const ORCHESTRATOR_ROUTES = [
  "GET /api/v1/tasks",
  "POST /api/v1/tasks",
  "GET /api/v1/tasks/{id}",
  "POST /api/v1/tasks/{id}/cancel",
  "GET /api/v1/traces/{trace_id}",
  "GET /api/v1/dead-letters",
  "GET /api/v1/templates",
  "GET /api/v1/orchestrator/agents",
];

describe("the orchestrator's routes in the REST API v1 (mq9 serve)", () => {
  let served: ServeProcess;
  let agents: { stop(): Promise<void> }[];
  let base: string;
  const templatesDir = join(tempDir(), "templates");
  beforeAll(async () => {
    // The example's templates, and one file with a mistake in it.
    cpSync(exampleTemplates, templatesDir, { recursive: true });
    writeFileSync(
      join(templatesDir, "broken.yaml"),
      "name: broken\nsteps:\n  - id: a\n    depends_on: [nowhere]\n",
    );
    served = await spawnServe(["--data", tempDir(), "--templates", templatesDir]);
    base = `http://127.0.0.1:${served.httpPort}`;
    agents = await startAgents(`mq9://127.0.0.1:${served.port}`, { heartbeatMs: 200, onError: () => {} });
  }, 60_000);
  afterAll(async () => {
    for (const agent of agents ?? []) await agent.stop();
    served?.child.kill("SIGTERM");
    await served?.exited;
  });

  it("answers each route as documented, and bad input with the documented error", async () => {
    const document = (await (await fetch(`${base}/api/v1/openapi.json`)).json()) as Document;
    const { check, called } = checker(base, document);
    // The orchestrator starts after the HTTP server: 503 until then.
    for (let i = 0; i < 200; i++) {
      if ((await fetch(`${base}/api/v1/templates`)).status === 200) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const templates = await check("GET", "/api/v1/templates", "/api/v1/templates", 200);
    expect(templates.templates.map((t: { name: string }) => t.name)).toEqual(["content-analysis"]);
    expect(templates.problems).toContainEqual({
      file: join(templatesDir, "broken.yaml"),
      line: 3,
      column: 5,
      message: "step 'a' depends on unknown step 'nowhere'",
    });
    const done = await check("POST", "/api/v1/tasks", "/api/v1/tasks?timeout_ms=30000", 200, {
      task_type: "content-analysis",
      payload: { text: "Agents send messages. The broker keeps them." },
    });
    expect(done.status).toBe("completed");
    await check("POST", "/api/v1/tasks", "/api/v1/tasks?async=true", 202, {
      task_type: "content-analysis",
      payload: { text: "x." },
    });
    await check("POST", "/api/v1/tasks", "/api/v1/tasks", 400, { payload: {} });
    const unknown = await check("POST", "/api/v1/tasks", "/api/v1/tasks", 404, { task_type: "nope" });
    expect(unknown).toEqual({
      code: "UNKNOWN_TASK_TYPE",
      error: "unknown task type 'nope'; known types: content-analysis",
    });
    const list = await check("GET", "/api/v1/tasks", "/api/v1/tasks?status=completed", 200);
    expect(list.tasks.some((t: { task_id: string }) => t.task_id === done.task_id)).toBe(true);
    await check("GET", "/api/v1/tasks", "/api/v1/tasks?status=sleeping", 400);
    await check("GET", "/api/v1/tasks/{id}", `/api/v1/tasks/${done.task_id}`, 200);
    await check("GET", "/api/v1/tasks/{id}", "/api/v1/tasks/nope", 404);
    const canceled = await check(
      "POST",
      "/api/v1/tasks/{id}/cancel",
      "/api/v1/tasks/{id}/cancel".replace("{id}", done.task_id),
      409,
    );
    expect(canceled.error).toMatch(/already completed/);
    const trace = await check("GET", "/api/v1/traces/{trace_id}", `/api/v1/traces/${done.trace_id}`, 200);
    expect(trace.messages.length).toBeGreaterThanOrEqual(6);
    await check("GET", "/api/v1/dead-letters", "/api/v1/dead-letters", 200);
    await check("GET", "/api/v1/dead-letters", "/api/v1/dead-letters?limit=0", 400);
    await check("GET", "/api/v1/orchestrator/agents", "/api/v1/orchestrator/agents", 200);
    for (const route of ORCHESTRATOR_ROUTES) {
      const [method, path] = route.split(" ");
      expect(document.paths[path]?.[method.toLowerCase()], `${route} is documented`).toBeDefined();
      expect(called.has(route), `${route} was called`).toBe(true);
    }
  });
});

describe("the orchestrator's routes when it is off", () => {
  it("answer 503 with the reason, as documented", async () => {
    const served = await spawnServe(["--data", tempDir(), "--orchestrator", "off"]);
    try {
      const base = `http://127.0.0.1:${served.httpPort}`;
      const document = (await (await fetch(`${base}/api/v1/openapi.json`)).json()) as Document;
      const { check } = checker(base, document);
      const off = await check("GET", "/api/v1/tasks", "/api/v1/tasks", 503);
      expect(off).toEqual({ code: "ORCHESTRATOR_OFF", error: expect.stringMatching(/orchestrator is off/) });
      await check("GET", "/api/v1/templates", "/api/v1/templates", 503);
      // The broker's own routes work on.
      await check("GET", "/api/v1/mailboxes", "/api/v1/mailboxes", 200);
    } finally {
      served.child.kill("SIGTERM");
      await served.exited;
    }
  });
});

describe("POST /api/v1/tasks beyond the queue", () => {
  it("answers 429 QUEUE_FULL with Retry-After, as documented", async () => {
    const templates = join(tempDir(), "templates");
    mkdirSync(templates);
    writeFileSync(
      join(templates, "held.yaml"),
      "task_type: held\nsteps:\n  - id: work\n    capability: nobody.yet\n    timeout: 60s\n",
    );
    const served = await spawnServe([
      "--data",
      tempDir(),
      "--templates",
      templates,
      "--max-tasks-in-flight",
      "1",
      "--queue-capacity",
      "1",
    ]);
    try {
      const base = `http://127.0.0.1:${served.httpPort}`;
      const document = (await (await fetch(`${base}/api/v1/openapi.json`)).json()) as Document;
      const { check } = checker(base, document);
      await until("the orchestrator to be up", async () => (await fetch(`${base}/api/v1/templates`)).ok);
      const task = { task_type: "held", payload: {} };
      await check("POST", "/api/v1/tasks", "/api/v1/tasks?async=true", 202, task);
      await check("POST", "/api/v1/tasks", "/api/v1/tasks?async=true", 202, task);
      const full = await check("POST", "/api/v1/tasks", "/api/v1/tasks?async=true", 429, task);
      expect(full.code).toBe("QUEUE_FULL");
      const res = await fetch(`${base}/api/v1/tasks?async=true`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(task),
      });
      expect(res.status).toBe(429);
      expect(res.headers.get("retry-after")).toMatch(/^[1-9][0-9]?$/);
    } finally {
      served.child.kill("SIGTERM");
      await served.exited;
    }
  });
});
