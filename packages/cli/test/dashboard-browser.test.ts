import { cpSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Agent, type Envelope } from "@mq9/agent";
import {
  contentAnalysisTemplates as exampleTemplates,
  startContentAnalysisAgents as startAgents,
  until,
} from "@mq9/testkit";
import { connect, headers, type NatsConnection } from "nats";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Browser, chromiumMissing, launchChromium } from "./browser-harness.js";
import { type ServeProcess, spawnServe, tempDir } from "./cli-harness.js";

const missing = chromiumMissing();

/** An agent whose first attempt fails: the second one completes. */
class FlakyAgent extends Agent {
  private calls = 0;

  constructor() {
    super(
      { name: "flaky", capabilities: ["flaky_work"], description: "fails once", max_concurrency: 1 },
      { heartbeatMs: 200, onError: () => {} },
    );
  }

  override async handleMessage(message: Envelope) {
    if (message.msg_type !== "query") return undefined;
    this.calls++;
    if (this.calls === 1) return this.reply(message, "error", { error: "printer jammed" });
    return this.reply(message, "result", { printed: true });
  }
}
const WAIT = { timeout: 20_000 };

async function request(nc: NatsConnection, subject: string, body: unknown, h?: Record<string, string>) {
  let natsHeaders: ReturnType<typeof headers> | undefined;
  if (h) {
    natsHeaders = headers();
    for (const [k, v] of Object.entries(h)) natsHeaders.set(k, v);
  }
  const data = typeof body === "string" ? body : JSON.stringify(body);
  const reply = await nc.request(subject, new TextEncoder().encode(data), {
    timeout: 10_000,
    headers: natsHeaders,
  });
  const parsed = JSON.parse(new TextDecoder().decode(reply.data));
  expect(parsed.error).toBe("");
  return parsed;
}

/** The text of a cell of the mailbox list, for a mailbox and a priority. */
const depthCell = (page: Page, mailbox: string, priority: string) =>
  page.locator(`tr[data-mailbox="${mailbox}"] td[data-col="${priority}"]`);

describe.skipIf(missing !== undefined)(
  `the dashboard in Chromium against mq9 serve${missing ? ` (skipped: ${missing})` : ""}`,
  () => {
    let served: ServeProcess;
    let browser: Browser;
    let page: Page;
    let nc: NatsConnection;
    let base: string;

    beforeAll(async () => {
      // The example's templates, and one file with a mistake the templates page must show.
      const templates = join(tempDir(), "templates");
      cpSync(exampleTemplates, templates, { recursive: true });
      writeFileSync(
        join(templates, "broken.yaml"),
        "name: broken\nsteps:\n  - id: a\n    depends_on: [nowhere]\n",
      );
      writeFileSync(
        join(templates, "flaky.yaml"),
        "name: flaky\nsteps:\n  - id: work\n    capability: flaky_work\n    retry: { count: 2, backoff: 100ms }\n",
      );
      served = await spawnServe(["--data", tempDir(), "--templates", templates]);
      base = `http://127.0.0.1:${served.httpPort}`;
      nc = await connect({ servers: `127.0.0.1:${served.port}` });
      browser = await launchChromium();
      page = await browser.context.newPage();
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
      await nc?.close();
      served?.child.kill("SIGTERM");
      await served?.exited;
    });

    it("shows a mailbox filled over NATS without a reload, peeks a message, purges and deletes after asking", async () => {
      await page.goto(`${base}/#/mailboxes`);
      await page.locator('[data-testid="live"]', { hasText: "live" }).waitFor(WAIT);
      // Set on this page load: still there later means the page never reloaded.
      await page.evaluate(() => {
        (window as unknown as { loadedOnce: boolean }).loadedOnce = true;
      });
      await request(nc, "$mq9.AI.MAILBOX.CREATE", { name: "web.inbox", ttl: 0 });
      await request(nc, "$mq9.AI.MSG.SEND.web.inbox", { order: 1, item: "book" });
      await request(nc, "$mq9.AI.MSG.SEND.web.inbox", "stock is low", {
        "mq9-priority": "critical",
        "mq9-key": "alert",
      });
      await page.locator('tr[data-mailbox="web.inbox"]').waitFor(WAIT);
      await page.waitForFunction(
        () =>
          document.querySelector('tr[data-mailbox="web.inbox"] td[data-col="critical"]')?.textContent === "1",
        undefined,
        WAIT,
      );
      expect(await depthCell(page, "web.inbox", "normal").textContent()).toBe("1");
      await request(nc, "$mq9.AI.MSG.SEND.web.inbox", { order: 2, item: "pen" });
      await page.waitForFunction(
        () =>
          document.querySelector('tr[data-mailbox="web.inbox"] td[data-col="normal"]')?.textContent === "2",
        undefined,
        WAIT,
      );
      expect(await page.evaluate(() => (window as unknown as { loadedOnce?: boolean }).loadedOnce)).toBe(
        true,
      );

      await page.click('a[href="#/mailboxes/web.inbox"]');
      // Newest first: the second order, then the critical one.
      const rows = page.locator('[data-testid="message-table"] tbody tr');
      await rows.nth(2).waitFor(WAIT);
      expect(await rows.first().textContent()).toContain("pen");
      expect(await rows.nth(1).textContent()).toContain("stock is low");
      await page.click('[data-testid="message-table"] tr[data-msg-id="0"]');
      const body = page.locator('[data-testid="payload-body"]');
      await body.waitFor(WAIT);
      expect(JSON.parse((await body.textContent()) ?? "")).toEqual({ order: 1, item: "book" });
      await page.click('[data-testid="payload-view"] button:has-text("hex")');
      expect(await body.textContent()).toMatch(/^000000 {2}7b 22 6f 72/);
      // Peeking consumed nothing: a consumer group still gets all three.
      const fetched = await request(nc, "$mq9.AI.MSG.FETCH.web.inbox", {
        group_name: "g",
        deliver: "earliest",
        config: { num_msgs: 10, max_wait_ms: 0 },
      });
      expect(fetched.messages).toHaveLength(3);
      page.removeAllListeners("dialog");

      // Purge and delete ask first; a "no" changes nothing.
      const answers: boolean[] = [false, true, true];
      const questions: string[] = [];
      page.on("dialog", (dialog) => {
        questions.push(dialog.message());
        void (answers.shift() ? dialog.accept() : dialog.dismiss());
      });
      await page.click('[data-testid="purge"]');
      await page.locator('[data-testid="message-table"] tbody tr').nth(2).waitFor(WAIT);
      await page.click('[data-testid="purge"]');
      await page.waitForFunction(
        () => document.querySelector('[data-testid="message-table"] tbody tr') === null,
        undefined,
        WAIT,
      );
      await page.click('[data-testid="delete-mailbox"]');
      await page.waitForFunction(() => location.hash === "#/mailboxes", undefined, WAIT);
      expect(questions).toHaveLength(3);
      expect(questions[0]).toMatch(/^Delete every message of web\.inbox\?/);
      expect(questions[2]).toMatch(/^Delete the mailbox web\.inbox/);
      const gone = await nc.request("$mq9.AI.MSG.SEND.web.inbox", new TextEncoder().encode("x"));
      expect(JSON.parse(new TextDecoder().decode(gone.data)).error).toBe("mailbox web.inbox does not exist");
      await page.locator('[data-testid="mailbox-table"]').waitFor(WAIT);
      expect(await page.locator('tr[data-mailbox="web.inbox"]').count()).toBe(0);
      page.removeAllListeners("dialog");
    });

    it("pages a mailbox past 100, filters it, shows binary as hex, deletes one message; hides internal mailboxes", async () => {
      await request(nc, "$mq9.AI.MAILBOX.CREATE", { name: "web.paged", ttl: 0, desc: "orders to pack" });
      await request(nc, "$mq9.AI.MAILBOX.CREATE", { name: "orch.webinternal", ttl: 0 });
      const firstId = (await request(nc, "$mq9.AI.MSG.SEND.web.paged", "order 0")).msg_id as number;
      for (let i = 1; i < 129; i++) await request(nc, "$mq9.AI.MSG.SEND.web.paged", `order ${i}`);
      const binary = new Uint8Array([0, 1, 2, 0xff, 0xfe]);
      const sent = await nc.request("$mq9.AI.MSG.SEND.web.paged", binary, {
        timeout: 10_000,
        headers: (() => {
          const h = headers();
          h.set("mq9-key", "blob");
          h.set("mq9-priority", "urgent");
          return h;
        })(),
      });
      const blobId = JSON.parse(new TextDecoder().decode(sent.data)).msg_id as number;

      await page.goto(`${base}/#/mailboxes`);
      await page.locator('tr[data-mailbox="web.paged"]').waitFor(WAIT);
      expect(await page.locator('tr[data-mailbox="orch.webinternal"]').count()).toBe(0);
      await page.click('[data-testid="hide-internal"]');
      await page.locator('tr[data-mailbox="orch.webinternal"]').waitFor(WAIT);
      await page.click('[data-testid="hide-internal"]');

      await page.goto(`${base}/#/mailboxes/web.paged`);
      await page.locator('[data-testid="mailbox-desc"]', { hasText: "orders to pack" }).waitFor(WAIT);
      const rows = page.locator('[data-testid="message-table"] tbody tr');
      await rows.nth(49).waitFor(WAIT);
      expect(await rows.count()).toBe(50);
      expect(await rows.first().getAttribute("data-msg-id")).toBe(String(blobId));
      // Past 100: the third page holds the oldest 30, down to the first message.
      await page.click('[data-testid="older"]');
      await page.click('[data-testid="older"]');
      await page.locator(`[data-testid="message-table"] tr[data-msg-id="${firstId}"]`).waitFor(WAIT);
      expect(await rows.count()).toBe(30);
      expect(await page.locator('[data-testid="older"]').isDisabled()).toBe(true);

      await page.fill('[data-testid="message-filters"] input[name="key"]', "blob");
      await page.locator(`[data-testid="message-table"] tr[data-msg-id="${blobId}"]`).waitFor(WAIT);
      await page.waitForFunction(
        () => document.querySelectorAll('[data-testid="message-table"] tbody tr').length === 1,
        undefined,
        WAIT,
      );
      await page.click(`[data-testid="message-table"] tr[data-msg-id="${blobId}"]`);
      await page.locator('[data-testid="payload-view"][data-view="hex"]').waitFor(WAIT);
      expect(await page.locator('[data-testid="payload-body"]').textContent()).toMatch(
        /^000000 {2}00 01 02 ff fe/,
      );

      page.once("dialog", (dialog) => void dialog.accept());
      await page.click('[data-testid="delete-message"]');
      await page.waitForFunction(
        () => document.querySelectorAll('[data-testid="message-table"] tbody tr').length === 0,
        undefined,
        WAIT,
      );
      const left = await (await fetch(`${base}/api/v1/mailboxes/web.paged/browse?key=blob`)).json();
      expect(left.messages).toEqual([]);
    });

    it("shows a group's leases with member and deliveries, releases them; retries a dead letter that is delivered again", async () => {
      await request(nc, "$mq9.AI.MAILBOX.CREATE", { name: "web.jobs", ttl: 0 });
      for (const job of ["label 1", "label 2", "label 3"])
        await request(nc, "$mq9.AI.MSG.SEND.web.jobs", job);
      const fetch1 = await request(nc, "$mq9.AI.MSG.FETCH.web.jobs", {
        group_name: "packers",
        member: "alice",
        deliver: "earliest",
        config: { num_msgs: 2, max_wait_ms: 0, lease_ms: 600_000 },
      });
      expect(fetch1.messages).toHaveLength(2);
      page.removeAllListeners("dialog");
      page.on("dialog", (dialog) => void dialog.accept());
      try {
        await page.goto(`${base}/#/mailboxes/web.jobs`);
        await page.click('[data-testid="group-table"] a:has-text("packers")');
        const leases = page.locator('[data-testid="lease-table"] tbody tr[data-state="leased"]');
        await leases.nth(1).waitFor(WAIT);
        expect(await leases.count()).toBe(2);
        expect(await leases.first().textContent()).toContain("alice");
        expect(await leases.first().locator('td[data-col="deliveries"]').textContent()).toBe("1");
        await page.locator('[data-testid="member-table"] tr[data-member="alice"]').waitFor(WAIT);
        await page.click('[data-testid="release-all"]');
        await page.locator('[data-testid="group-notice"]', { hasText: "released 2 leases" }).waitFor(WAIT);

        // A message that fails for good goes to web.jobs.dlq; retried from the page, it comes back.
        const fetch2 = await request(nc, "$mq9.AI.MSG.FETCH.web.jobs", {
          group_name: "packers",
          config: { num_msgs: 1, max_wait_ms: 0 },
        });
        const failed = fetch2.messages[0] as { msg_id: number; payload: string };
        await request(nc, "$mq9.AI.MSG.NAK.web.jobs", {
          group_name: "packers",
          msg_id: failed.msg_id,
          reason: "printer offline",
          terminal: true,
        });
        await page.goto(`${base}/#/dead-letters`);
        const letter = page.locator('[data-dlq="web.jobs.dlq"] [data-testid="dead-letter-table"] tbody tr');
        await letter.first().waitFor(WAIT);
        expect(await letter.first().locator('td[data-col="reason"]').textContent()).toBe("printer offline");
        await letter.first().locator('[data-testid="retry-one"]').click();
        await page
          .locator('[data-dlq="web.jobs.dlq"] [data-testid="dlq-notice"]', { hasText: "sent back 1" })
          .waitFor(WAIT);
        const again = await request(nc, "$mq9.AI.MSG.FETCH.web.jobs", {
          group_name: "packers",
          config: { num_msgs: 10, max_wait_ms: 0 },
        });
        const payloads = (again.messages as { payload: string }[]).map((m) => m.payload);
        expect(payloads).toContain(failed.payload);
      } finally {
        page.removeAllListeners("dialog");
      }
    });

    it("draws the broker's history at once on a fresh page after traffic ran with no page open", async () => {
      await page.goto("about:blank");
      await request(nc, "$mq9.AI.MAILBOX.CREATE", { name: "web.history", ttl: 0 });
      for (let i = 0; i < 30; i++) await request(nc, "$mq9.AI.MSG.SEND.web.history", `m${i}`);
      // Asked through the API, which watches nothing: the broker samples on its own.
      const json = async (path: string) => (await fetch(`${base}${path}`)).json();
      await until("a sampled SEND rate", async () => {
        const history = (await json("/api/v1/metrics/history")) as { samples: { sends_per_s: number }[] };
        return history.samples.some((s) => s.sends_per_s > 0);
      });
      await until("web.history's sample", async () => {
        const h = (await json("/api/v1/mailboxes/web.history/history")) as { series: { messages: number[] } };
        return h.series.messages.at(-1) === 30;
      });
      await page.goto(`${base}/#/`);
      // Drawn from the history before the live stream has sent anything.
      const requests = page.locator('[data-testid="chart-requests"]');
      await page.waitForFunction(
        () =>
          Number(document.querySelector('[data-testid="chart-requests"]')?.getAttribute("data-points")) >= 2,
        undefined,
        WAIT,
      );
      expect(Number(await requests.getAttribute("data-points"))).toBeGreaterThanOrEqual(2);
      await page.click('[data-testid="range-picker"] button[data-range="86400"]');
      await page.locator('[data-testid="range-picker"] button.on[data-range="86400"]').waitFor(WAIT);
      await page.goto(`${base}/#/mailboxes/web.history`);
      await page.waitForFunction(
        () =>
          Number(
            document.querySelector('[data-testid="chart-mailbox-messages"]')?.getAttribute("data-points"),
          ) >= 1,
        undefined,
        WAIT,
      );
    });

    it("lists client connections with their name, subscriptions and messages in and out", async () => {
      const client = await connect({ servers: `127.0.0.1:${served.port}`, name: "web-client" });
      try {
        client.subscribe("web.connz.echo");
        for (let i = 0; i < 4; i++) client.publish("web.connz.echo", "ping");
        await client.flush();
        await page.goto(`${base}/#/connections`);
        const row = page.locator('[data-testid="connection-table"] tr[data-connection="web-client"]');
        await row.locator('td[data-col="msgs_out"]', { hasText: "4" }).waitFor(WAIT);
        expect(await row.locator('td[data-col="msgs_in"]').textContent()).toBe("4");
        expect(await row.locator('td[data-col="subscriptions"]').textContent()).toBe("1");
        expect(await row.textContent()).toContain("127.0.0.1:");
      } finally {
        await client.close();
      }
    });

    it("finds an agent registered over NATS through the discovery box, with its score and card", async () => {
      await request(nc, "$mq9.AI.AGENT.REGISTER", {
        name: "translator",
        mailbox: "web.translator",
        payload: "Translates English text to French and German.",
        tags: ["language"],
        ttl: 60,
      });
      await request(nc, "$mq9.AI.AGENT.REPORT", {
        mailbox: "web.translator",
        report_info: "translating 3 files",
      });
      await request(nc, "$mq9.AI.AGENT.REGISTER", {
        name: "summarizer",
        mailbox: "web.summarizer",
        payload: "Summarizes long documents.",
        tags: ["text"],
      });
      await page.goto(`${base}/#/agents`);
      await page.locator('[data-testid="agent-table"] tr[data-agent="translator"]').waitFor(WAIT);
      // The CLI's words: online while it heartbeats, offline otherwise; its last REPORT as status.
      expect(await page.locator('tr[data-agent="translator"] .pill').textContent()).toBe("online");
      expect(await page.locator('tr[data-agent="summarizer"] .pill').textContent()).toBe("offline");
      await page
        .locator('tr[data-agent="translator"] td[data-col="status"]', { hasText: "translating 3 files" })
        .waitFor(WAIT);
      await page.fill('[data-testid="agent-tag-filter"]', "language");
      await page.waitForFunction(
        () => document.querySelector('[data-testid="agent-table"] tr[data-agent="summarizer"]') === null,
        undefined,
        WAIT,
      );
      expect(await page.locator('[data-testid="agent-table"] tr[data-agent="translator"]').count()).toBe(1);
      const form = page.locator('[data-testid="discover-form"]');
      await form.locator('select[name="mode"]').selectOption("text");
      await form.locator('input[name="query"]').fill("french translation");
      await form.locator('button[type="submit"]').click();
      const hit = page.locator('[data-testid="discover-results"] tr[data-agent="translator"]');
      await hit.waitFor(WAIT);
      expect(Number(await hit.locator('td[data-col="score"]').textContent())).toBeGreaterThan(0);
      await form.locator('select[name="mode"]').selectOption("tag");
      await form.locator('input[name="query"]').fill("");
      await form.locator('input[name="tags"]').fill("language");
      await form.locator('button[type="submit"]').click();
      await hit.waitFor(WAIT);
      await hit.click();
      const card = page.locator('[data-testid="agent-card"]');
      await card.waitFor(WAIT);
      expect(JSON.parse((await card.textContent()) ?? "")).toMatchObject({
        name: "translator",
        mailbox: "web.translator",
        tags: ["language"],
      });
    });

    it("links only to http(s) URLs: a javascript: URL in a roster entry or an agent card stays text", async () => {
      const evil = "javascript:alert(document.cookie)";
      // Any client on a cluster's NATS account can publish a node's presence news, its http_url
      // included: the roster below is what such news makes a node answer.
      const node = (name: string, http_url: string) => ({
        node: name,
        instance: `${name}-1`,
        self: name === "n1",
        state: "up",
        started_at: Date.now(),
        last_heard_ms: 0,
        nats_server: "nats://127.0.0.1:4222",
        http_port: 8332,
        http_url,
        duties: [],
      });
      await page.route("**/api/v1/cluster", (route) =>
        route.fulfill({
          json: {
            clustered: true,
            cluster: "c",
            node: "n1",
            nodes: [node("n1", "http://10.0.0.1:8332"), node("n2", evil), node("n3", " JavaScript:alert(1)")],
          },
        }),
      );
      await request(nc, "$mq9.AI.AGENT.REGISTER", {
        name: "phisher",
        mailbox: "web.phisher",
        payload: "an agent card whose links run script",
        url: evil,
        documentationUrl: evil,
        iconUrl: evil,
        provider: { organization: "x", url: evil },
      });
      const unsafeLinks = () =>
        page.evaluate(
          () =>
            Array.from(document.querySelectorAll("a[href]"))
              .map((a) => a.getAttribute("href") ?? "")
              .filter((href) => !/^(https?:\/\/|#)/i.test(href.trim())).length,
        );
      try {
        await page.goto(`${base}/#/`);
        const nodes = page.locator('[data-testid="cluster-nodes"]');
        await nodes.locator('tr[data-node="n2"]', { hasText: evil }).waitFor(WAIT);
        expect(await nodes.locator('tr[data-node="n1"] a').getAttribute("href")).toBe(
          "http://10.0.0.1:8332/",
        );
        expect(await nodes.locator('tr[data-node="n2"] a').count()).toBe(0);
        expect(await nodes.locator('tr[data-node="n3"] a').count()).toBe(0);
        expect(await unsafeLinks()).toBe(0);
        await page.goto(`${base}/#/agents/web.phisher`);
        await page.locator('[data-testid="agent-card"]', { hasText: evil }).waitFor(WAIT);
        expect(await unsafeLinks()).toBe(0);
      } finally {
        await page.unroute("**/api/v1/cluster");
      }
    });

    it("draws a task's parallel DAG with edges, a timeline per step, a step's input and output; retries and cancels", async () => {
      const agents = await startAgents(`mq9://127.0.0.1:${served.port}`, {
        heartbeatMs: 200,
        onError: () => {},
      });
      try {
        const submitted = await fetch(`${base}/api/v1/tasks?async=true`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            task_type: "content-analysis",
            payload: { text: "Agents send messages. The broker keeps them for agents that are offline." },
          }),
        });
        expect(submitted.status).toBe(202);
        const { task_id: taskId } = (await submitted.json()) as { task_id: string };
        await page.goto(`${base}/#/tasks/${taskId}`);
        const dag = page.locator('[data-testid="task-dag"]');
        await dag.waitFor(WAIT);
        for (const step of ["summarize", "keywords", "quality", "report"]) {
          await dag.locator(`g[data-step="${step}"][data-status="completed"]`).waitFor(WAIT);
        }
        await page.locator('[data-testid="task-status"]', { hasText: "completed" }).waitFor(WAIT);
        // The parallel steps side by side (one rank), each with an edge into the merge that waits for them.
        const x = async (step: string) =>
          Number(await dag.locator(`g[data-step="${step}"]`).getAttribute("data-x"));
        expect(await x("keywords")).toBe(await x("summarize"));
        expect(await x("quality")).toBe(await x("summarize"));
        expect(await x("report")).toBeGreaterThan(await x("summarize"));
        expect(await dag.locator('polyline.dag-edge[data-to="report"]').count()).toBe(3);
        // A bar per attempt from dispatch to result.
        const rows = page.locator('[data-testid="step-timeline"] .step-row');
        await page
          .locator('[data-testid="step-timeline"] .step-row[data-step="report"][data-status="completed"]')
          .waitFor(WAIT);
        expect(await rows.count()).toBe(4);
        for (const step of ["summarize", "keywords", "quality"]) {
          expect(
            await rows
              .locator(`xpath=self::*[@data-step="${step}"]`)
              .locator('.bar[data-outcome="completed"]')
              .count(),
          ).toBeGreaterThanOrEqual(1);
        }
        // The merge step's input is its inputs' outputs; its output is what it made of them.
        await dag.locator('g[data-step="report"]').click();
        const detail = page.locator('[data-testid="step-detail"][data-step="report"]');
        await detail.waitFor(WAIT);
        expect(
          Object.keys(
            JSON.parse((await detail.locator('[data-testid="step-input"]').textContent()) ?? "{}"),
          ).sort(),
        ).toEqual(["keywords", "quality", "summarize"]);
        expect(await detail.locator('[data-testid="step-output"]').textContent()).not.toBe("—");
        const lanes = page.locator('[data-testid="timeline"] .lane');
        await lanes.nth(5).waitFor(WAIT);
        expect(await page.locator('[data-testid="timeline"] .lane[data-msg-type="query"]').count()).toBe(3);
        // Retry runs the same template and payload as a new task.
        page.once("dialog", (dialog) => void dialog.accept());
        await page.click('[data-testid="retry-task"]');
        await page.waitForFunction(
          (first) => location.hash.startsWith("#/tasks/") && !location.hash.endsWith(first),
          taskId,
          WAIT,
        );
        await page.locator('[data-testid="task-status"]', { hasText: "completed" }).waitFor(WAIT);
        await page.goto(`${base}/#/tasks`);
        await page
          .locator(`[data-testid="task-table"] tr[data-task="${taskId}"]`, { hasText: "completed" })
          .waitFor(WAIT);
        await page.locator('[data-testid="task-filters"] select[name="status"]').selectOption("failed");
        await page.waitForFunction(
          (id) => document.querySelector(`[data-testid="task-table"] tr[data-task="${id}"]`) === null,
          taskId,
          WAIT,
        );
        await page.locator('[data-testid="task-filters"] select[name="status"]').selectOption("");
        await page.locator(`[data-testid="task-table"] tr[data-task="${taskId}"]`).waitFor(WAIT);
        await page.goto(`${base}/#/templates`);
        await page.locator('[data-template="content-analysis"] svg g[data-step="report"]').waitFor(WAIT);
        await page
          .locator('[data-testid="template-problem"]', {
            hasText: "step 'a' depends on unknown step 'nowhere'",
          })
          .waitFor(WAIT);
      } finally {
        for (const agent of agents) await agent.stop();
      }
      // With no agent to take it, a task waits: cancel ends it.
      const waiting = await fetch(`${base}/api/v1/tasks?async=true`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ task_type: "content-analysis", payload: { text: "nobody is there" } }),
      });
      const { task_id: waitingId } = (await waiting.json()) as { task_id: string };
      await page.goto(`${base}/#/tasks/${waitingId}`);
      page.once("dialog", (dialog) => void dialog.accept());
      await page.click('[data-testid="cancel-task"]');
      await page.locator('[data-testid="task-status"]', { hasText: "canceled" }).waitFor(WAIT);
    });
    it("shows a failed attempt and its retry on the step timeline, with the last error", async () => {
      const agent = new FlakyAgent();
      await agent.start(`mq9://127.0.0.1:${served.port}`);
      try {
        const submitted = await fetch(`${base}/api/v1/tasks?async=true`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ task_type: "flaky", payload: { label: 1 } }),
        });
        expect(submitted.status).toBe(202);
        const { task_id: taskId } = (await submitted.json()) as { task_id: string };
        await page.goto(`${base}/#/tasks/${taskId}`);
        await page.locator('[data-testid="task-status"]', { hasText: "completed" }).waitFor(WAIT);
        const row = page.locator('[data-testid="step-timeline"] .step-row[data-step="work"]');
        await row.locator('.bar[data-outcome="completed"]').waitFor(WAIT);
        const outcomes = await row
          .locator(".bar")
          .evaluateAll((bars) => bars.map((b) => b.getAttribute("data-outcome")));
        expect(outcomes).toEqual(["failed", "completed"]);
        expect(await row.textContent()).toContain("2 attempts");
        await row.locator("button", { hasText: "work" }).click();
        const detail = page.locator('[data-testid="step-detail"][data-step="work"]');
        expect(await detail.locator('[data-testid="step-error"]').textContent()).toBe("printer jammed");
        expect(JSON.parse((await detail.locator('[data-testid="step-input"]').textContent()) ?? "")).toEqual({
          label: 1,
        });
        expect(JSON.parse((await detail.locator('[data-testid="step-output"]').textContent()) ?? "")).toEqual(
          { printed: true },
        );
      } finally {
        await agent.stop();
      }
    });
  },
);

describe.skipIf(missing !== undefined)("the dashboard of a broker with a token", () => {
  let served: ServeProcess;
  let browser: Browser;

  beforeAll(async () => {
    served = await spawnServe(["--data", tempDir(), "--orchestrator", "off"], { MQ9_TOKEN: "s3cret" });
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    served?.child.kill("SIGTERM");
    await served?.exited;
  });

  it("asks for the token, refuses a wrong one and the API without it, and shows the broker with it", async () => {
    const base = `http://127.0.0.1:${served.httpPort}`;
    const page = await browser.context.newPage();
    await page.goto(`${base}/`);
    const login = page.locator('[data-testid="login"]');
    await login.waitFor(WAIT);
    // No way around the login: the data routes want the token too.
    expect((await fetch(`${base}/api/v1/mailboxes`)).status).toBe(401);
    expect((await fetch(`${base}/api/v1/stream`)).status).toBe(401);
    await login.locator('input[name="token"]').fill("wrong");
    await login.locator('button[type="submit"]').click();
    await login.locator('[role="alert"]', { hasText: "refused" }).waitFor(WAIT);
    expect(await page.locator('[data-testid="figure-connections"]').count()).toBe(0);
    await login.locator('input[name="token"]').fill("s3cret");
    const roster = page.waitForResponse((res) => res.url().endsWith("/api/v1/cluster"), WAIT);
    await login.locator('button[type="submit"]').click();
    await page.locator('[data-testid="figure-connections"]').waitFor(WAIT);
    // A broker of its own has no cluster: the overview shows no nodes table.
    expect(await (await roster).json()).toEqual({ clustered: false, nodes: [] });
    await page.locator('[data-testid="figure-agents"]').waitFor(WAIT);
    expect(await page.locator('[data-testid="cluster-nodes"]').count()).toBe(0);
    // With the orchestrator off, the tasks page says so.
    await page.goto(`${base}/#/tasks`);
    await page.locator('[role="alert"][data-code="ORCHESTRATOR_OFF"]').waitFor(WAIT);
  });
});
