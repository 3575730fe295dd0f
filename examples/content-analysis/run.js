// The content-analysis flow in one command: summarize, extract keywords and check
// quality of a text in parallel, then merge, orchestrated by mq9 over its own mailboxes.
//
//   npm run build && node examples/content-analysis/run.js ["your text"]
//
// It starts `mq9 serve` (broker + orchestrator, with this folder's templates) on free
// ports and a fresh data dir, starts the three agents of agents.js, runs one task
// through the orchestrator's HTTP API, prints the merged result and the trace, and
// stops everything. To use a broker you already run (`mq9 serve --templates
// examples/content-analysis/templates`), set MQ9_SERVER and MQ9_API.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startAgents } from "./agents.js";

const here = fileURLToPath(new URL(".", import.meta.url));
const cli = fileURLToPath(new URL("../../packages/cli/dist/main.js", import.meta.url));
const text =
  process.argv[2] ??
  "mq9 gives every agent a persistent mailbox, so messages wait while an agent is offline. " +
    "Agents find each other through the registry built into the broker. " +
    "The orchestrator routes work to agents by capability, runs task templates as pipelines, fan-outs or DAGs, " +
    "and keeps every message of a trace in mq9 mailboxes.";

/** Starts `mq9 serve` on free ports; resolves with its URLs once its orchestrator answers. */
async function serve() {
  const data = mkdtempSync(join(tmpdir(), "mq9-content-analysis-"));
  const child = spawn(
    process.execPath,
    [cli, "serve", "--port", "0", "--http-port", "0", "--data", data, "--templates", join(here, "templates")],
    { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, MQ9_LOG_FORMAT: "json" } },
  );
  let out = "";
  const ports = await new Promise((resolve, reject) => {
    child.stdout.on("data", (chunk) => {
      out += chunk;
      const ready = out.split("\n").find((line) => line.includes('"httpPort"'));
      if (ready) resolve(JSON.parse(ready));
    });
    child.on("exit", (code) => reject(new Error(`mq9 serve exited (${code}); did you run 'npm run build'?`)));
  });
  const api = `http://127.0.0.1:${ports.httpPort}`;
  for (let i = 0; ; i++) {
    const res = await fetch(`${api}/api/templates`).catch(() => undefined);
    if (res?.ok) break;
    if (i > 200) throw new Error("the orchestrator did not come up");
    await new Promise((r) => setTimeout(r, 50));
  }
  const stop = async () => {
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
    rmSync(data, { recursive: true, force: true });
  };
  return { server: `mq9://127.0.0.1:${ports.port}`, api, stop };
}

const own = process.env.MQ9_SERVER ? undefined : await serve();
const server = own?.server ?? process.env.MQ9_SERVER;
const api = own?.api ?? process.env.MQ9_API ?? "http://127.0.0.1:8332";
const agents = await startAgents(server);
console.log(`agents: ${agents.map((a) => a.name).join(", ")}`);

try {
  const res = await fetch(`${api}/api/tasks?wait=true`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ task_type: "content-analysis", payload: { text } }),
  });
  const task = await res.json();
  if (!res.ok) throw new Error(`${res.status}: ${task.error}`);
  console.log(`task ${task.status}: ${task.order.map((id) => `${id}=${task.steps[id].status}`).join(" ")}`);
  console.log(`summary: ${task.result.summarize.summary}`);
  console.log(`keywords: ${task.result.keywords.keywords.join(", ")}`);
  console.log(`quality: ${task.result.quality.score} ${JSON.stringify(task.result.quality.issues)}`);
  const trace = await (await fetch(`${api}/api/traces/${task.trace_id}`)).json();
  console.log(`trace ${trace.trace_id}: ${trace.messages.length} messages`);
  for (const m of trace.messages) {
    console.log(
      `  +${m.offset_ms.toFixed(1).padStart(6)} ms  ${m.msg_type.padEnd(6)} ${m.source} -> ${m.target}`,
    );
  }
} finally {
  for (const agent of agents) await agent.stop();
  await own?.stop();
}
