import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Subjects } from "@mq9/protocol";
import { until } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestBroker, type TestBroker } from "./harness.js";

// The Grafana dashboard and the Prometheus alert rules shipped in monitoring/ (docs/monitoring.md).
const MONITORING = join(dirname(fileURLToPath(import.meta.url)), "../../../monitoring");
const RULES = join(MONITORING, "prometheus/mq9-alerts.yml");
const DASHBOARD = join(MONITORING, "grafana/mq9-dashboard.json");

function promtoolMissing(): string | undefined {
  if (spawnSync("promtool", ["--version"]).status === 0) return undefined;
  const reason = "no promtool on PATH (apt-get install prometheus)";
  if (process.env.CI) throw new Error(`the monitoring tests need promtool: ${reason}`);
  return reason;
}

/** Runs promtool; its output is the failure's message when it fails. */
function promtool(args: string[], cwd?: string): string {
  const run = spawnSync("promtool", args, { cwd, encoding: "utf8" });
  const output = `${run.stdout}${run.stderr}`;
  if (run.status !== 0) throw new Error(`promtool ${args.join(" ")} failed:\n${output}`);
  return output;
}

/** The dashboard's PromQL queries, with Grafana's variables as a query would see them. */
function dashboardQueries(): string[] {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, "utf8")) as {
    panels: { title: string; targets: { expr: string }[] }[];
  };
  return dashboard.panels.flatMap((panel) =>
    panel.targets.map((target) =>
      target.expr.replaceAll("$__rate_interval", "1m").replaceAll("$job", ".*").replaceAll("$instance", ".*"),
    ),
  );
}

/** The metric names a PromQL expression reads (identifiers followed by `{` or `[`, or standing alone). */
function metricNames(expr: string): string[] {
  const names = expr.match(/\b(mq9_[a-z0-9_]+|up)\b/g) ?? [];
  return [...new Set(names)];
}

const missing = promtoolMissing();

describe.skipIf(missing !== undefined)(
  `monitoring/: alert rules and Grafana dashboard${missing ? ` (skipped: ${missing})` : ""}`,
  () => {
    it("the alert rules pass promtool check rules, and their unit tests fire each alert as meant", () => {
      expect(promtool(["check", "rules", RULES])).toMatch(/SUCCESS: \d+ rules found/);
      expect(promtool(["test", "rules", "mq9-alerts.test.yml"], dirname(RULES))).toMatch(/SUCCESS/);
    });

    it("every query of the Grafana dashboard is valid PromQL", () => {
      const queries = dashboardQueries();
      expect(queries.length).toBeGreaterThan(10);
      // promtool parses a rule file's expressions: each query becomes a recording rule.
      const file = join(mkdtempSync(join(tmpdir(), "mq9-grafana-")), "queries.yml");
      const rules = queries.map(
        (expr, i) => `      - record: dashboard_query_${i}\n        expr: ${JSON.stringify(expr)}`,
      );
      writeFileSync(file, `groups:\n  - name: dashboard\n    rules:\n${rules.join("\n")}\n`);
      expect(promtool(["check", "rules", file])).toMatch(
        new RegExp(`SUCCESS: ${queries.length} rules found`),
      );
    });

    describe("against a broker's /metrics", () => {
      let t: TestBroker;
      beforeAll(async () => {
        t = await startTestBroker({ registry: false, http: { port: 0, history: { intervalMs: 100 } } });
      });
      afterAll(() => t.close());

      it("every metric the rules and the dashboard read is one a broker exports", async () => {
        await t.request(Subjects.mailboxCreate, { name: "mon.box" });
        await t.request(Subjects.send("mon.box"), "m");
        await t.request(Subjects.fetch("mon.box"), {
          group_name: "g",
          deliver: "earliest",
          config: { num_msgs: 1, max_wait_ms: 0 },
        });
        const url = `http://127.0.0.1:${t.broker.http!.port}/metrics`;
        const exported = await until("the history's gauges on /metrics", async () => {
          const text = await (await fetch(url)).text();
          return text.includes('mq9_group_lag{mailbox="mon.box",group="g"} 1') ? text : undefined;
        });
        expect(exported).toContain('mq9_mailbox_messages{mailbox="mon.box"} 1');
        expect(exported).toMatch(/^mq9_healthy 1$/m);
        expect(exported).toMatch(/^mq9_data_dir_free_bytes \d+/m);
        const names = new Set([...exported.matchAll(/^([a-z0-9_]+)(?:\{| )/gm)].map((m) => m[1]));
        // Exported elsewhere: by Prometheus itself, a cluster node, a PostgreSQL store, the orchestrator.
        const elsewhere = new Set(["up", "mq9_cluster_nodes", "mq9_database_up", "mq9_orchestrator_tasks"]);
        const rules = readFileSync(RULES, "utf8")
          .split("\n")
          .filter((line) => line.trim().startsWith("expr:"));
        const read = [...rules, ...dashboardQueries()].flatMap(metricNames);
        const unknown = [...new Set(read)].filter((name) => !names.has(name) && !elsewhere.has(name));
        expect(unknown).toEqual([]);
      });
    });
  },
);
