// Regenerates the screenshots of docs/dashboard.md: starts `mq9 serve` (the built CLI) on free
// ports with the content-analysis example, fills it through the NATS protocol, runs a task, and
// has headless Chromium photograph each page. Run with `npm run docs:screenshots` after a build.
import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { connect, headers } from "nats";
import { chromium } from "playwright-core";
import { startAgents } from "../../../examples/content-analysis/agents.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const out = join(root, "docs/images");
const executablePath = process.env.MQ9_CHROMIUM ?? "/usr/bin/chromium";
if (!existsSync(executablePath)) {
  console.error(`no Chromium at ${executablePath}: apt-get install chromium (or set MQ9_CHROMIUM)`);
  process.exit(1);
}

/** Starts the built `mq9 serve` on free ports; resolves with them once it is ready. */
function serve(dataDir, templates) {
  const child = spawn(
    process.execPath,
    [
      join(root, "packages/cli/dist/main.js"),
      "serve",
      "--port",
      "0",
      "--http-port",
      "0",
      "--log-format",
      "json",
      "--data",
      dataDir,
      "--templates",
      templates,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  return new Promise((resolve, reject) => {
    let text = "";
    child.stdout.on("data", (chunk) => {
      text += chunk;
      const line = text.split("\n").find((l) => l.includes("broker ready"));
      if (line) resolve({ child, ...JSON.parse(line) });
    });
    child.on("exit", (code) => reject(new Error(`mq9 serve exited with ${code}`)));
  });
}

async function request(nc, subject, body, extra) {
  const h = extra ? headers() : undefined;
  for (const [k, v] of Object.entries(extra ?? {})) h.set(k, v);
  const data = new TextEncoder().encode(typeof body === "string" ? body : JSON.stringify(body));
  const reply = JSON.parse(
    new TextDecoder().decode((await nc.request(subject, data, { headers: h, timeout: 10_000 })).data),
  );
  if (reply.error) throw new Error(`${subject}: ${reply.error}`);
  return reply;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const dataDir = mkdtempSync(join(tmpdir(), "mq9-screenshots-"));
const profile = mkdtempSync(join(tmpdir(), "mq9-chromium-"));
// The example's templates, plus one with a mistake, so the Templates page shows a load error.
const templates = join(dataDir, "templates");
cpSync(join(root, "examples/content-analysis/templates"), templates, { recursive: true });
writeFileSync(
  join(templates, "triage.yaml"),
  "name: triage\nsteps:\n  - id: classify\n    capability: classify\n  - id: route\n    capability: route\n    depends_on: [clasify]\n",
);
const server = await serve(join(dataDir, "data"), templates);
const base = `http://127.0.0.1:${server.httpPort}`;
const nc = await connect({ servers: `127.0.0.1:${server.port}`, name: "shop-frontend" });
const agents = await startAgents(`mq9://127.0.0.1:${server.port}`, { heartbeatMs: 1000, onError: () => {} });
const browser = await chromium.launchPersistentContext(profile, {
  executablePath,
  headless: true,
  viewport: { width: 1280, height: 820 },
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
  ],
});
try {
  await request(nc, "$mq9.AI.MAILBOX.CREATE", { name: "orders.inbox", ttl: 0, desc: "orders from the shop" });
  await request(nc, "$mq9.AI.MAILBOX.CREATE", { name: "billing.events", ttl: 86400 });
  await request(nc, "$mq9.AI.AGENT.REGISTER", {
    name: "translator",
    mailbox: "agents.translator",
    payload: "Translates documents between English, German and Japanese",
    tags: ["language"],
    skills: [{ name: "translate" }, { name: "detect-language" }],
    ttl: 60,
  });
  const page = await browser.newPage();
  await page.goto(`${base}/`);
  // A few seconds of traffic, so the charts have something to show.
  for (let i = 0; i < 40; i++) {
    await request(nc, "$mq9.AI.MSG.SEND.orders.inbox", {
      order: 1000 + i,
      item: i % 2 ? "book" : "pen",
      qty: 1 + (i % 3),
    });
    if (i % 5 === 0)
      await request(nc, "$mq9.AI.MSG.SEND.billing.events", `invoice ${i} paid`, { "mq9-tags": "invoice" });
    if (i % 10 === 0) {
      await request(nc, "$mq9.AI.MSG.SEND.orders.inbox", "stock is low", {
        "mq9-priority": "critical",
        "mq9-key": "stock",
      });
    }
    await sleep(250);
  }
  const fetched = await request(nc, "$mq9.AI.MSG.FETCH.orders.inbox", {
    group_name: "packers",
    member: "packer-1",
    deliver: "earliest",
    config: { num_msgs: 5, lease_ms: 600_000 },
  });
  // One message fails for good: it goes to orders.inbox.dlq with its reason.
  await request(nc, "$mq9.AI.MSG.NAK.orders.inbox", {
    group_name: "packers",
    msg_id: fetched.messages[0].msg_id,
    reason: "label printer offline",
    terminal: true,
  });
  await sleep(1500);
  const submitted = await (
    await fetch(`${base}/api/v1/tasks`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        task_type: "content-analysis",
        payload: {
          text: "mq9 gives every agent a persistent mailbox. Agents find each other in its registry.",
        },
      }),
    })
  ).json();

  const shoot = async (name, hash, prepare) => {
    await page.goto(`${base}/${hash}`);
    await page.waitForTimeout(2500);
    await prepare?.();
    await page.screenshot({ path: join(out, `dashboard-${name}.png`) });
    console.log(`docs/images/dashboard-${name}.png`);
  };
  mkdirSync(out, { recursive: true });
  await shoot("overview", "");
  await shoot("mailboxes", "#/mailboxes");
  await shoot("mailbox", "#/mailboxes/orders.inbox", async () => {
    await page.click('[data-testid="message-table"] tbody tr:nth-child(3)');
  });
  await shoot("group", "#/mailboxes/orders.inbox/groups/packers");
  await shoot("dead-letters", "#/dead-letters");
  await shoot("connections", "#/connections");
  await shoot("agents", "#/agents/agents.translator", async () => {
    await page.fill('[data-testid="discover-form"] input[name="query"]', "japanese documents");
    await page.click('[data-testid="discover-form"] button[type="submit"]');
    await page.waitForTimeout(500);
  });
  await shoot("task", `#/tasks/${submitted.task_id}`);
  await shoot("templates", "#/templates");
} finally {
  await browser.close();
  for (const agent of agents) await agent.stop();
  await nc.close();
  server.child.kill("SIGTERM");
  rmSync(profile, { recursive: true, force: true });
}
