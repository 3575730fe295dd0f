import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, type Envelope } from "@mq9/agent";
import {
  brokerKindMissing,
  type NatsServers,
  type PrivatePostgres,
  startNatsServers,
  startPrivatePostgres,
} from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, type Mq9NodeProcess, startNode } from "./cluster-harness.js";

const missing = brokerKindMissing("cluster");

const TEMPLATE = `name: counting
description: one slow step per task, to count how often each is dispatched
timeout: 5m
steps:
  - id: count
    capability: count
    timeout: 2m
`;

/** An agent that takes its time over each step and notes every dispatch it receives. */
class CountingAgent extends Agent {
  readonly received: number[] = [];

  constructor() {
    super(
      { name: "counter", capabilities: ["count"], description: "counts", max_concurrency: 8 },
      { heartbeatMs: 200, onError: () => {} },
    );
  }

  override async handleMessage(message: Envelope) {
    if (message.msg_type !== "query") return undefined;
    const n = (message.payload as { n?: number } | undefined)?.n;
    this.received.push(Number(n));
    await new Promise((r) => setTimeout(r, 3_000));
    return this.reply(message, "result", { n });
  }
}

// Two nodes with the orchestrator on, one real agent on the NATS cluster. One node runs the
// orchestrator at a time; it is killed with tasks in flight; the other takes over and every task
// completes, each step dispatched once.
describe.skipIf(missing !== undefined)(
  `orchestrator in a cluster${missing ? ` (skipped: ${missing})` : ""}`,
  () => {
    let nats: NatsServers;
    let pg: PrivatePostgres;
    let agent: CountingAgent;
    const nodes: Mq9NodeProcess[] = [];
    const templates = mkdtempSync(join(tmpdir(), "mq9-cluster-templates-"));

    beforeAll(async () => {
      mkdirSync(templates, { recursive: true });
      writeFileSync(join(templates, "counting.yaml"), TEMPLATE);
      [nats, pg] = await Promise.all([startNatsServers({ size: 2 }), startPrivatePostgres()]);
      nodes.push(
        ...(await Promise.all(
          ["o1", "o2"].map((nodeId, i) =>
            startNode({
              nodeId,
              nats: [nats.urls[i], nats.urls[1 - i]],
              postgres: pg.url,
              args: ["--orchestrator", "on", "--templates", templates],
            }),
          ),
        )),
      );
      agent = new CountingAgent();
      await agent.start(nats.urls.join(","));
    }, 240_000);

    afterAll(async () => {
      await agent?.stop().catch(() => {});
      await Promise.all(nodes.map((node) => node.stop()));
      await nats?.stop();
      await pg?.stop();
      rmSync(templates, { recursive: true, force: true });
    }, 120_000);

    const api = async (node: Mq9NodeProcess, path: string, body?: unknown) => {
      const res = await fetch(`http://127.0.0.1:${node.httpPort}/api/v1${path}`, {
        method: body === undefined ? "GET" : "POST",
        headers: body === undefined ? {} : { "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      }).catch(() => undefined);
      return {
        status: res?.status,
        body: (res ? await res.json().catch(() => ({})) : {}) as Record<string, unknown>,
      };
    };

    it("a leader killed with tasks in flight: the other node finishes them, each step dispatched once", async () => {
      const leader = await eventually(
        async () => {
          const up = [];
          for (const node of nodes) if ((await api(node, "/tasks")).status === 200) up.push(node);
          return up.length === 1 ? up[0] : undefined;
        },
        90_000,
        "one orchestrator",
      );
      const follower = nodes.find((n) => n !== leader) as Mq9NodeProcess;
      // The logs say which node does what: the leader runs the orchestrator, the other does not.
      const RUNS = "this broker now runs the orchestrator for every broker on this database";
      expect(leader.output()).toContain(RUNS);
      expect(follower.output()).not.toContain(RUNS);
      expect(await api(follower, "/tasks")).toMatchObject({ status: 503 });
      // One node at a time runs expiry too, and says so.
      const runsExpiry = () =>
        nodes.filter((n) =>
          n.output().includes("this broker now runs expiry for every broker on this database"),
        );
      await eventually(async () => runsExpiry().length > 0, 30_000, "a node to take the expiry lock");
      expect(runsExpiry()).toHaveLength(1);
      // The agent's registration reaches the leader's directory.
      await eventually(
        async () => {
          const agents = (await api(leader, "/orchestrator/agents")).body.agents as
            | { name: string }[]
            | undefined;
          return agents?.some((a) => a.name === "counter");
        },
        30_000,
        "the leader to know the agent",
      );

      const total = 6;
      const ids: string[] = [];
      for (let n = 0; n < total; n++) {
        const submitted = await api(leader, "/tasks?async=true", { task_type: "counting", payload: { n } });
        expect(submitted.status, JSON.stringify(submitted.body)).toBe(202);
        ids.push(String(submitted.body.task_id));
      }
      // Steps are out at the agent (3 s each): the leader dies before their results come back.
      await eventually(async () => agent.received.length > 0, 30_000, "the first dispatch");
      await leader.kill("SIGKILL");

      for (const id of ids) {
        const done = await eventually(
          async () => {
            const task = await api(follower, `/tasks/${id}`);
            if (task.status === 200 && task.body.status === "completed") return task.body;
            // Kept as the timeout's message: where the task stands says why it did not finish.
            throw new Error(`HTTP ${task.status} ${JSON.stringify(task.body).slice(0, 1500)}`);
          },
          120_000,
          `task ${id} to complete on ${follower.nodeId}`,
        ).catch(async (err: Error) => {
          // What the new leader's router sees of the agent says why a step found nobody.
          const known = JSON.stringify((await api(follower, "/orchestrator/agents")).body).slice(0, 1500);
          err.message += `\nagent received ${JSON.stringify(agent.received)}\n${follower.nodeId}'s agents: ${known}\n${follower.nodeId}'s log ends:\n${follower.output().slice(-6000)}`;
          throw err;
        });
        expect(done.status).toBe("completed");
      }
      expect(follower.output()).toContain(RUNS);
      // Every task's step reached the agent once: none lost, none dispatched again by the new leader.
      expect([...agent.received].sort((a, b) => a - b)).toEqual(Array.from({ length: total }, (_, n) => n));
    }, 400_000);
  },
);
