import { execFileSync } from "node:child_process";
import { hostname } from "node:os";
import {
  brokerKindMissing,
  type NatsServers,
  type PrivatePostgres,
  startNatsServers,
  startPrivatePostgres,
} from "@mq9/testkit";
import type { NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMq9Node } from "../../../scripts/local-cluster/mq9-node.js";
import {
  connectTo,
  eventually,
  LIGHT_NODE,
  type Mq9NodeProcess,
  mq9Client,
  type Reply,
  startNode,
} from "./cluster-harness.js";

const missing = brokerKindMissing("cluster");

/** TCP ports process `pid` listens on (ss, from iproute2). */
function listeningPorts(pid: number): number[] {
  const out = execFileSync("ss", ["-Hltnp"], { encoding: "utf8" });
  return out
    .split("\n")
    .filter((line) => line.includes(`pid=${pid},`))
    .map((line) => {
      // State, Recv-Q, Send-Q, local address:port, peer, process.
      const local = line.trim().split(/\s+/)[3];
      return Number(local.slice(local.lastIndexOf(":") + 1));
    });
}

// What a node does at its start and with the cluster's background work: no embedded listener, a
// clear refusal when PostgreSQL cannot be reached, and expiry that goes on when its node dies.
describe.skipIf(missing !== undefined)(`cluster node start${missing ? ` (skipped: ${missing})` : ""}`, () => {
  let nats: NatsServers;
  let pg: PrivatePostgres;
  const nodes: Mq9NodeProcess[] = [];
  let nc: NatsConnection;

  beforeAll(async () => {
    [nats, pg] = await Promise.all([startNatsServers({ size: 1 }), startPrivatePostgres()]);
    nc = await connectTo(nats.urls);
  }, 240_000);

  afterAll(async () => {
    await nc?.close().catch(() => {});
    await Promise.all(nodes.map((node) => node.stop()));
    await nats?.stop();
    await pg?.stop();
  }, 120_000);

  it("a cluster node listens on its HTTP port only: the embedded NATS listener is off", async () => {
    const node = await startNode({ nodeId: "quiet", nats: nats.urls, postgres: pg.url });
    nodes.push(node);
    expect(listeningPorts(node.pid)).toEqual([node.httpPort]);
    expect(node.output()).toMatch(
      /mq9 cluster node quiet ready: clients connect to nats:\/\/127\.0\.0\.1:\d+/,
    );
    expect(node.output()).not.toMatch(/mq9 broker ready on/);
    // Its health and metrics are its own: which node, which nats-server, whether the database answers.
    const health = await (await fetch(`http://127.0.0.1:${node.httpPort}/healthz`)).json();
    expect(health).toMatchObject({
      ok: true,
      node: "quiet",
      nats: { connected: true, server: expect.stringMatching(/127\.0\.0\.1:\d+/) },
      postgres: { up: true },
    });
    const metrics = await (await fetch(`http://127.0.0.1:${node.httpPort}/metrics`)).text();
    expect(metrics).toMatch(/^mq9_cluster_nats_connected 1$/m);
    expect(metrics).toMatch(/^mq9_cluster_database_up 1$/m);
  });

  it("a node of another mq9 cluster on the same NATS account is refused at start; one of the same joins, a namesake is warned of", async () => {
    const home = await startNode({ nodeId: "home", nats: nats.urls, postgres: pg.url });
    nodes.push(home);
    // Another schema is another mq9 cluster: on this NATS account both would take every request.
    const stranger = startNode({
      nodeId: "stranger",
      nats: nats.urls,
      postgres: pg.url,
      args: ["--postgres-schema", "elsewhere"],
    });
    await expect(stranger).rejects.toThrow(/exited during start/);
    await expect(stranger).rejects.toThrow(
      /another mq9 cluster already serves \$mq9\.AI\.> on this NATS account \(node [^)]*home[^)]*, on another database or schema\)/,
    );
    // The home cluster alone answers, and a second node of it joins.
    const via = mq9Client(nc);
    expect(await via("$mq9.AI.MAILBOX.CREATE", { name: "roll.call" })).toEqual({
      error: "",
      mail_address: "roll.call",
    });
    const neighbour = await startNode({ nodeId: "neighbour", nats: nats.urls, postgres: pg.url });
    nodes.push(neighbour);
    expect(neighbour.output()).not.toContain("another mq9 cluster");
    // The serving node heard the stranger's call, and says so.
    const HEARD =
      "node stranger of another mq9 cluster (another database or schema) is starting on this NATS account";
    await eventually(
      async () => home.output().includes(HEARD),
      10_000,
      "the serving node to log the stranger",
    );
    // A second node under an id in use starts, and both it and the first say so.
    const twin = await startNode({ nodeId: "home", nats: nats.urls, postgres: pg.url });
    nodes.push(twin);
    const SHARED = "another node of this mq9 cluster runs under the node id home";
    expect(twin.output()).toContain(SHARED);
    await eventually(
      async () => home.output().includes(SHARED),
      10_000,
      "the first node to warn of its namesake",
    );
    expect(neighbour.output()).not.toContain(SHARED);
    // The expiry test below wants no node but the first test's holding the expiry lock.
    await Promise.all([home.stop(), neighbour.stop(), twin.stop()]);
  });

  it("a node's HTTP address in the rosters: its bound host, the machine's name on a wildcard bind, or --node-http-url", async () => {
    const wild = await startNode({
      nodeId: "wild",
      nats: nats.urls,
      postgres: pg.url,
      args: ["--http-host", "0.0.0.0"],
    });
    nodes.push(wild);
    const behind = await startNode({
      nodeId: "behind",
      nats: nats.urls,
      postgres: pg.url,
      args: ["--node-http-url", "https://behind.example:9443/"],
    });
    nodes.push(behind);
    const urls = await eventually(
      async () => {
        const res = await fetch(`http://127.0.0.1:${wild.httpPort}/api/v1/cluster`);
        const { nodes: listed } = (await res.json()) as {
          nodes: { node: string; http_url: string | null }[];
        };
        const byNode = Object.fromEntries(listed.map((n) => [n.node, n.http_url]));
        return byNode.behind ? byNode : undefined;
      },
      10_000,
      "node wild to hear behind",
    );
    // (A node on 127.0.0.1, as cluster.test.ts's, is listed as http://127.0.0.1:<port>.)
    expect(urls).toMatchObject({
      wild: `http://${hostname()}:${wild.httpPort}`,
      behind: "https://behind.example:9443",
    });
    await Promise.all([wild.stop(), behind.stop()]);
    // Not a URL: refused at start, with what it should look like.
    const bad = startNode({
      nodeId: "bad",
      nats: nats.urls,
      postgres: pg.url,
      args: ["--node-http-url", "n1:8332"],
    });
    await expect(bad).rejects.toThrow(/must be an http:\/\/ or https:\/\/ URL of a host and port/);
  });

  it("a node whose schema a newer mq9 migrated steps aside: leaves the queue group, refuses, gives up its duties", async () => {
    // A cluster of its own (its schema, its nats-server): the one schema version it moves is its own.
    const ownNats = await startNatsServers({ size: 1 });
    const old = await startNode({
      nodeId: "old",
      nats: ownNats.urls,
      postgres: pg.url,
      args: ["--postgres-schema", "upgrading"],
    });
    const ownClient = await connectTo(ownNats.urls);
    const via = mq9Client(ownClient);
    expect(await via("$mq9.AI.MAILBOX.CREATE", { name: "up.grade" })).toMatchObject({ error: "" });
    expect(await via("$mq9.AI.MSG.SEND.up.grade", "before")).toMatchObject({ error: "" });
    const roster = async () =>
      (await (await fetch(`http://127.0.0.1:${old.httpPort}/api/v1/cluster`)).json()) as {
        nodes: { duties: string[] }[];
      };
    await eventually(
      async () => (await roster()).nodes[0].duties.includes("expiry"),
      10_000,
      "old to run expiry",
    );
    // What a newer mq9 does at its start: migrate the schema to its format.
    await pg.query("UPDATE upgrading.mq9_schema_version SET version = version + 1");
    try {
      const health = await eventually(
        async () => {
          const res = await fetch(`http://127.0.0.1:${old.httpPort}/healthz`);
          return res.status === 503 ? ((await res.json()) as { postgres: { refused?: string } }) : undefined;
        },
        10_000,
        "old's /healthz to answer 503",
      );
      expect(health.postgres.refused).toMatch(
        /^the PostgreSQL schema upgrading was migrated to format \d+ by a newer mq9 \(this one runs format \d+\): this broker no longer serves it/,
      );
      expect(old.output()).toMatch(
        /cluster node old stops taking requests: the PostgreSQL schema upgrading was migrated/,
      );
      // No longer in the queue group: NATS has no one to give the request to (the new nodes would
      // take it). Leaving takes the node's UNSUB a trip to the nats-server; a SEND that reaches it
      // before then is refused with an error, and stores nothing.
      const answeredMeanwhile: Reply[] = [];
      await eventually(
        async () => {
          try {
            answeredMeanwhile.push(await via("$mq9.AI.MSG.SEND.up.grade", "after", { timeout: 2_000 }));
            return false;
          } catch (err) {
            if (/503|no responders/i.test(String(err))) return true;
            throw err;
          }
        },
        10_000,
        "old to leave the queue group",
      );
      for (const reply of answeredMeanwhile) expect(reply.error, JSON.stringify(reply)).not.toBe("");
      // Its once-per-cluster work is free for the new nodes to take.
      await eventually(
        async () => (await roster()).nodes[0].duties.length === 0,
        10_000,
        "old to give up its duties",
      );
    } finally {
      await pg.query("UPDATE upgrading.mq9_schema_version SET version = version - 1");
      await ownClient.close();
      await old.stop();
      await ownNats.stop();
    }
  });

  it("an unreachable PostgreSQL stops the start with where and why", async () => {
    const start = startMq9Node({
      nodeId: "no-db",
      nats: nats.urls,
      postgres: "postgres://postgres@127.0.0.1:1/mq9",
      args: LIGHT_NODE,
    });
    await expect(start).rejects.toThrow(/exited during start/);
    await expect(start).rejects.toThrow(/PostgreSQL at 127\.0\.0\.1:1\/mq9 is unavailable/);
  });

  it("a PostgreSQL user without rights stops the start with what to grant", async () => {
    await pg.query("CREATE DATABASE rights");
    await pg.query("CREATE ROLE norights LOGIN");
    const start = startMq9Node({
      nodeId: "no-rights",
      nats: nats.urls,
      postgres: `postgres://norights@127.0.0.1:${pg.port}/rights`,
      args: LIGHT_NODE,
    });
    await expect(start).rejects.toThrow(/exited during start/);
    await expect(start).rejects.toThrow(/the PostgreSQL user lacks rights .*grant it CREATE on the database/);
    // Nothing was made half-way.
    expect(await pg.query("SELECT count(*) FROM pg_namespace WHERE nspname = 'mq9'", "rights")).toBe("0");
  });

  it("a nats-server at its connection limit stops the start with a hint to read its log", async () => {
    const full = await startNatsServers({ size: 1, config: "max_connections: 1\n" });
    const holder = await connectTo(full.urls);
    try {
      const start = startMq9Node({ nodeId: "no-room", nats: full.urls, postgres: pg.url, args: LIGHT_NODE });
      await expect(start).rejects.toThrow(/exited during start/);
      await expect(start).rejects.toThrow(
        /cannot reach the NATS cluster .*refusing connections over a connection limit; the nats-server log says which/,
      );
    } finally {
      await holder.close();
      await full.stop();
    }
  }, 120_000);

  it("expiry goes on when the node running it is killed: another takes over and purges", async () => {
    const [e1, e2] = await Promise.all(
      ["e1", "e2"].map((nodeId) => startNode({ nodeId, nats: nats.urls, postgres: pg.url })),
    );
    nodes.push(e1, e2);
    const RUNS = "this broker now runs expiry for every broker on this database";
    const holders = () => [e1, e2].filter((n) => n.output().includes(RUNS));
    // (The node of the first test may hold it: stop it, so one of these two takes over.)
    await nodes[0].stop();
    const holder = await eventually(async () => holders()[0], 30_000, "a node to run expiry");
    expect(holders()).toHaveLength(1);
    const other = holder === e1 ? e2 : e1;
    await holder.kill("SIGKILL");
    await eventually(
      async () => other.output().includes(RUNS),
      30_000,
      `${other.nodeId} to take over expiry`,
    );

    const via = mq9Client(nc);
    expect(await via("$mq9.AI.MAILBOX.CREATE", { name: "brief", ttl: 1 })).toMatchObject({ error: "" });
    expect(await pg.query("SELECT count(*) FROM mq9.mailboxes WHERE address = 'brief'")).toBe("1");
    // Gone for readers at once, and from the database at the survivor's next sweep.
    await eventually(
      async () => (await via("$mq9.AI.MSG.SEND.brief", "late")).error === "mailbox brief does not exist",
      20_000,
    );
    await eventually(
      async () => (await pg.query("SELECT count(*) FROM mq9.mailboxes WHERE address = 'brief'")) === "0",
      30_000,
      "the survivor to purge the expired mailbox",
    );
  }, 180_000);
});
