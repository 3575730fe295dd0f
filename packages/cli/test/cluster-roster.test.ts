import { hostname } from "node:os";
import {
  brokerKindMissing,
  freePort,
  type NatsServers,
  type PrivatePostgres,
  startNatsServers,
  startPrivatePostgres,
} from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./cli-harness.js";
import { eventually, type Mq9NodeProcess, startNode } from "./cluster-harness.js";

const missing = brokerKindMissing("cluster");

interface Member {
  node: string;
  instance: string;
  state: string;
  since?: number;
}

// A node that dies stays in the roster until an operator forgets it, and a node started without
// --node-id comes back under the same id (its host and HTTP port), replacing its own entry.
describe.skipIf(missing !== undefined)(`cluster roster${missing ? ` (skipped: ${missing})` : ""}`, () => {
  let nats: NatsServers;
  let pg: PrivatePostgres;
  let a: Mq9NodeProcess;
  const started: Mq9NodeProcess[] = [];

  const roster = async (node: Mq9NodeProcess) => {
    const res = await fetch(`http://127.0.0.1:${node.httpPort}/api/v1/cluster`);
    return ((await res.json()) as { nodes: Member[] }).nodes;
  };
  const start = async (options: { nodeId?: string; server: number; httpPort?: number }) => {
    const node = await startNode({
      nodeId: options.nodeId,
      nats: [nats.urls[options.server]],
      postgres: pg.url,
      httpPort: options.httpPort,
    });
    started.push(node);
    return node;
  };

  beforeAll(async () => {
    [nats, pg] = await Promise.all([startNatsServers({ size: 2 }), startPrivatePostgres()]);
    a = await start({ nodeId: "a", server: 0 });
  }, 120_000);
  afterAll(async () => {
    await Promise.all(started.map((node) => node.stop()));
    await nats?.stop();
    await pg?.stop();
  }, 60_000);

  it("a node without --node-id killed and started again replaces its own entry; mq9 cluster forget drops a dead one", async () => {
    const httpPort = await freePort();
    const id = `${hostname()}-${httpPort}`;
    const first = await start({ server: 1, httpPort });
    await eventually(async () => (await roster(a)).some((m) => m.node === id && m.state === "up"));

    await first.kill("SIGKILL");
    const dead = await eventually(
      async () => (await roster(a)).find((m) => m.node === id && m.state === "missing"),
      20_000,
      "a to report the killed node missing",
    );
    expect(dead.since).toBeLessThanOrEqual(Date.now());
    // Same host, same configuration: the same node id, which takes the dead process's place.
    const again = await start({ server: 1, httpPort });
    const entries = await eventually(
      async () => {
        const named = (await roster(a)).filter((m) => m.node === id);
        return named.length === 1 && named[0].state === "up" ? named : undefined;
      },
      20_000,
      "a to list the restarted node alone",
    );
    expect(entries[0].instance).not.toBe(dead.instance);

    // A node that is up is not forgotten, nor is one no node has heard of.
    const http = `http://127.0.0.1:${a.httpPort}`;
    const refused = await runCli(["cluster", "forget", id, "--http", http]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`node ${id} is up`);
    const unknown = await runCli(["cluster", "forget", "nobody", "--http", http]);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain("no node nobody in this node's roster");

    await again.kill("SIGKILL");
    await eventually(
      async () => (await roster(a)).some((m) => m.node === id && m.state === "missing"),
      20_000,
      "a to report it missing again",
    );
    const status = await runCli(["cluster", "status", "--http", http]);
    expect(status.stdout).toMatch(/^cluster \S+: 1 node up, 1 missing, 0 down, as node a hears them$/m);
    expect(status.stdout).toMatch(new RegExp(`${id} +missing since \\d{4}-`));
    const forgotten = await runCli(["cluster", "forget", id, "--http", http]);
    expect(forgotten).toMatchObject({ code: 0, stdout: `node ${id} forgotten: no node lists it any more\n` });
    expect((await roster(a)).map((m) => m.node)).toEqual(["a"]);
    const health = (await (await fetch(`${http}/healthz`)).json()) as { nodes: unknown };
    expect(health.nodes).toEqual({ up: 1, missing: 0, down: 0 });
  }, 120_000);
});
