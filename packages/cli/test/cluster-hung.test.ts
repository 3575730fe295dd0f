import {
  brokerKindMissing,
  type NatsServers,
  PINNED_NATS_SERVER_VERSION,
  type PrivatePostgres,
  pinnedNatsServer,
  pinnedNatsServerMissing,
  startNatsServers,
  startPrivatePostgres,
  systemAccountNatsConfig,
} from "@mq9/testkit";
import { connect, type NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  answered,
  connectTo,
  eventually,
  everything,
  expectStoredOnce,
  type Mq9NodeProcess,
  mq9Client,
  startNode,
} from "./cluster-harness.js";

// A hung node (SIGSTOP: its connection stays open) keeps its share of the queue group's requests
// until its connection closes. These tests stop a node under a steady load and watch what the
// other nodes do once it has been silent for --drop-missing-after.
const missing = brokerKindMissing("cluster");
const SYSTEM = { user: "sys", password: "sys-secret" };
const DROP_AFTER_S = "8";
const WITH_SYSTEM_USER = [
  "--nats-system-user",
  SYSTEM.user,
  "--nats-system-password",
  SYSTEM.password,
  "--drop-missing-after",
  DROP_AFTER_S,
];

interface Sent {
  body: string;
  /** The msg_id of an answered SEND; undefined while waiting or after a timeout. */
  msgId?: number;
  failed?: string;
  done: boolean;
}

/** One SEND every `everyMs`, each on its own (a hung node holds some, the others go on). */
function steadyLoad(nc: NatsConnection, mailbox: string, everyMs = 40) {
  const via = mq9Client(nc);
  const sent: Sent[] = [];
  const timer = setInterval(() => {
    const entry: Sent = { body: `m${sent.length}`, done: false };
    sent.push(entry);
    via(`$mq9.AI.MSG.SEND.${mailbox}`, entry.body, { timeout: 1_500 })
      .then((reply) => {
        if (reply.error === "" && typeof reply.msg_id === "number") entry.msgId = reply.msg_id;
        else entry.failed = reply.error;
      })
      .catch((err: Error) => {
        entry.failed = err.message;
      })
      .finally(() => {
        entry.done = true;
      });
  }, everyMs);
  return {
    sent,
    stop: () => clearInterval(timer),
    acked: () => new Map(sent.filter((s) => s.msgId !== undefined).map((s) => [s.body, s.msgId as number])),
  };
}

const lines = (node: Mq9NodeProcess, has: string) =>
  node
    .output()
    .split("\n")
    .filter((line) => line.includes(has));

const clusterOf = async (node: Mq9NodeProcess) => {
  const res = await fetch(`http://127.0.0.1:${node.httpPort}/api/v1/cluster`);
  return ((await res.json()) as { cluster: string }).cluster;
};

const heardAgain = async (observer: Mq9NodeProcess, node: string) => {
  const res = await fetch(`http://127.0.0.1:${observer.httpPort}/api/v1/cluster`);
  const roster = (await res.json()) as { nodes: { node: string; state: string }[] };
  return roster.nodes.some((n) => n.node === node && n.state === "up");
};

const pinnedMissing = missing ?? pinnedNatsServerMissing();

/** The once-per-cluster works a node says it holds (its own roster entry). */
const dutiesOf = async (node: Mq9NodeProcess): Promise<string[]> => {
  const res = await fetch(`http://127.0.0.1:${node.httpPort}/api/v1/cluster`);
  const roster = (await res.json()) as { nodes: { self: boolean; duties: string[] }[] };
  return roster.nodes.find((n) => n.self)?.duties ?? [];
};

/** The once-per-cluster works `observer` last heard `nodeId` say it holds. */
const dutiesHeard = async (observer: Mq9NodeProcess, nodeId: string): Promise<string[]> => {
  const res = await fetch(`http://127.0.0.1:${observer.httpPort}/api/v1/cluster`);
  const roster = (await res.json()) as { nodes: { node: string; duties: string[] }[] };
  return roster.nodes.find((n) => n.node === nodeId)?.duties ?? [];
};

/** The nodes' `mq9_cluster_duty` for `duty`, summed: 1 when exactly one node runs it. */
const dutySum = async (nodes: Mq9NodeProcess[], duty: string): Promise<number> => {
  let sum = 0;
  for (const node of nodes) {
    const text = await (await fetch(`http://127.0.0.1:${node.httpPort}/metrics`)).text();
    const line = text.split("\n").find((l) => l.startsWith(`mq9_cluster_duty{duty="${duty}"}`));
    sum += Number(line?.split(" ")[1] ?? 0);
  }
  return sum;
};

/** SIGSTOPs `stopped` until `watcher` logs a line with `has` (60 s at most), SIGCONTs it, and gives the line. */
async function lineWhileStopped(
  stopped: Mq9NodeProcess,
  watcher: Mq9NodeProcess,
  has: string,
): Promise<string> {
  process.kill(stopped.pid, "SIGSTOP");
  try {
    return await eventually(async () => lines(watcher, has)[0], 60_000, `the line '${has}'`);
  } finally {
    process.kill(stopped.pid, "SIGCONT");
  }
}

/** Wakes any stopped node, then stops the nodes, the client, the nats-servers and PostgreSQL. */
async function stopAll(
  nodes: Record<string, Mq9NodeProcess>,
  nc: NatsConnection | undefined,
  nats: NatsServers | undefined,
  pg: PrivatePostgres | undefined,
): Promise<void> {
  for (const node of Object.values(nodes)) process.kill(node.pid, "SIGCONT");
  await nc?.close().catch(() => {});
  await Promise.all(Object.values(nodes).map((node) => node.stop()));
  await nats?.stop();
  await pg?.stop();
}
describe.skipIf(pinnedMissing !== undefined)(
  `hung nodes, nats-server ${PINNED_NATS_SERVER_VERSION}${pinnedMissing ? ` (skipped: ${pinnedMissing})` : ""}`,
  () => {
    let nats: NatsServers;
    let pg: PrivatePostgres;
    const nodes: Record<string, Mq9NodeProcess> = {};
    let nc: NatsConnection;

    beforeAll(async () => {
      [nats, pg] = await Promise.all([
        startNatsServers({ size: 3, bin: pinnedNatsServer(), config: systemAccountNatsConfig(SYSTEM) }),
        startPrivatePostgres(),
      ]);
      const start = async (nodeId: string, server: number) => {
        nodes[nodeId] = await startNode({
          nodeId,
          nats: [nats.urls[server]],
          postgres: pg.url,
          args: WITH_SYSTEM_USER,
        });
      };
      await Promise.all([start("a", 0), start("b", 1), start("c", 2)]);
      nc = await connectTo(nats.urls);
    }, 240_000);

    afterAll(() => stopAll(nodes, nc, nats, pg), 120_000);

    it("one node drops a stopped node's connection; requests then all answer, and it rejoins on SIGCONT", async () => {
      const { a, b, c } = nodes;
      const via = mq9Client(nc);
      expect((await via("$mq9.AI.MAILBOX.CREATE", { name: "hung", ttl: 3600 })).error).toBe("");
      const load = steadyLoad(nc, "hung");
      try {
        await eventually(async () => (await answered(c, "msg.send")) > 0, 20_000, "c to answer a SEND");
        const stoppedAt = load.sent.length;
        process.kill(c.pid, "SIGSTOP");
        try {
          // a is the first node up by id: it acts for the cluster, once.
          await eventually(
            async () => lines(a, "dropped its NATS connection").length > 0,
            60_000,
            "a to drop c's connection",
          );
          const droppedAt = load.sent.length;
          expect(lines(a, "dropped its NATS connection")[0]).toMatch(
            /node c looks hung: not heard for \d+ s/,
          );
          expect(lines(a, "dropped its NATS connection")[0]).toContain("named mq9-c-broker");
          // While c hung, its share timed out: the hang was real.
          await eventually(
            async () => load.sent.slice(stoppedAt, droppedAt).every((s) => s.done) || undefined,
            10_000,
            "the requests before the drop to end",
          );
          expect(load.sent.slice(stoppedAt, droppedAt).some((s) => s.failed !== undefined)).toBe(true);
          // After the drop, 100 consecutive requests all answer.
          await eventually(
            async () => load.sent.length >= droppedAt + 100 && load.sent[droppedAt + 99].done,
            60_000,
            "100 requests after the drop",
          );
          const after = load.sent.slice(droppedAt, droppedAt + 100);
          expect(after.filter((s) => s.msgId === undefined).map((s) => `${s.body}: ${s.failed}`)).toEqual([]);
          expect(lines(b, "looks hung")).toEqual([]);
        } finally {
          process.kill(c.pid, "SIGCONT");
        }
        // It reconnects, is heard again and takes requests again.
        await eventually(() => heardAgain(a, "c"), 30_000, "a to hear c again");
        const before = await answered(c, "msg.send");
        await eventually(async () => (await answered(c, "msg.send")) > before, 30_000, "c to answer again");
        expect(lines(a, "dropped its NATS connection")).toHaveLength(1);
      } finally {
        load.stop();
      }
      await eventually(async () => load.sent.every((s) => s.done) || undefined, 10_000, "the load to end");
      // Nothing acknowledged is lost, nothing is stored twice.
      expectStoredOnce(load.acked(), await everything(via, "hung"));
    }, 240_000);

    it("forged presence news naming another client's connection gets it logged, not closed", async () => {
      // An agent's connection, named as the forged news claims: the name a node's connection has
      // (mq9-zz-broker) is what counts.
      const victim = await connect({ servers: [nats.urls[0]], name: "agent-x" });
      try {
        const info = victim.info;
        if (!info) throw new Error("not connected");
        const forged = { server_id: info.server_id, client_id: info.client_id, name: "agent-x" };
        nc.publish(
          "_mq9.cluster.presence",
          JSON.stringify({
            node: "zz",
            instance: "zz/1",
            cluster: await clusterOf(nodes.a),
            started_at: 1,
            duties: [],
            nats_connection: forged,
          }),
        );
        const said = await eventually(
          async () => lines(nodes.a, "node zz looks hung")[0],
          60_000,
          "a's line on zz",
        );
        expect(said).toContain(
          `connection ${info.client_id} on nats-server ${info.server_id} is named agent-x, not mq9-zz-broker`,
        );
        expect(said).toContain("not mq9-zz-broker: not that node's, so it is left alone");
        expect(victim.isClosed()).toBe(false);
        expect(await mq9Client(victim)("$mq9.AI.MAILBOX.CREATE", { name: "still.here", ttl: 60 })).toEqual({
          error: "",
          mail_address: "still.here",
        });
      } finally {
        await victim.close();
      }
    }, 120_000);
  },
);

describe.skipIf(missing !== undefined)(
  `hung nodes, Debian's nats-server${missing ? ` (skipped: ${missing})` : ""}`,
  () => {
    let nats: NatsServers;
    let pg: PrivatePostgres;
    const nodes: Record<string, Mq9NodeProcess> = {};
    let nc: NatsConnection;

    beforeAll(async () => {
      [nats, pg] = await Promise.all([
        startNatsServers({ size: 2, config: systemAccountNatsConfig(SYSTEM) }),
        startPrivatePostgres(),
      ]);
      // a has the system user (but no KICK to send); b has none.
      nodes.a = await startNode({
        nodeId: "a",
        nats: [nats.urls[0]],
        postgres: pg.url,
        args: WITH_SYSTEM_USER,
      });
      nodes.b = await startNode({
        nodeId: "b",
        nats: [nats.urls[1]],
        postgres: pg.url,
        args: ["--drop-missing-after", DROP_AFTER_S],
      });
      nc = await connectTo(nats.urls);
    }, 240_000);

    afterAll(() => stopAll(nodes, nc, nats, pg), 120_000);

    it("a node whose user is not of the system account does not start", async () => {
      const refused = startNode({
        nodeId: "x",
        nats: [nats.urls[0]],
        postgres: pg.url,
        args: ["--nats-system-user", "app", "--nats-system-password", "app"],
      });
      await expect(refused).rejects.toThrow(/not a user of the system account/);
    }, 60_000);

    it("the node with a system user says it cannot drop; the one without says what to do", async () => {
      const { a, b } = nodes;
      expect(lines(a, "has no request to close a client connection")[0]).toMatch(/nats-server 2\.9\.\d+/);
      const via = mq9Client(nc);
      expect((await via("$mq9.AI.MAILBOX.CREATE", { name: "hung29", ttl: 3600 })).error).toBe("");
      const load = steadyLoad(nc, "hung29", 100);
      try {
        const onB = await lineWhileStopped(b, a, "node b looks hung");
        expect(onB).toContain("could not drop its NATS connection");
        expect(onB).toContain("older than 2.10.0");
        expect(onB).toMatch(/\$SYS\.REQ\.SERVER\.\w+\.KICK with \{\\?"cid\\?":\d+\}/);
        await eventually(() => heardAgain(a, "b"), 30_000, "a to hear b again");
        await eventually(() => heardAgain(b, "a"), 30_000, "b to hear a");
        const onA = await lineWhileStopped(a, b, "node a looks hung");
        expect(onA).toContain("Stop or restart node a");
        expect(onA).toContain("named mq9-a-broker");
        expect(onA).toContain("--nats-system-user");
        await eventually(() => heardAgain(b, "a"), 30_000, "b to hear a again");
        // Once each: the line is not repeated at every look.
        expect(lines(a, "node b looks hung")).toHaveLength(1);
        expect(lines(b, "node a looks hung")).toHaveLength(1);
      } finally {
        load.stop();
      }
      await eventually(async () => load.sent.every((s) => s.done) || undefined, 10_000, "the load to end");
      expectStoredOnce(load.acked(), await everything(via, "hung29"));
    }, 240_000);

    it("a hung node's PostgreSQL sessions are ended: its once-per-cluster work moves while it hangs", async () => {
      const { a, b } = nodes;
      const holder = await eventually(
        async () =>
          (await dutiesOf(a)).includes("expiry") ? a : (await dutiesOf(b)).includes("expiry") ? b : undefined,
        30_000,
        "a node to run expiry",
      );
      const [stopped, other] = holder === a ? [a, b] : [b, a];
      const stoppedId = holder === a ? "a" : "b";
      const ended = `PostgreSQL sessions of hung node ${stoppedId} (`;
      // The other node has heard that the holder runs it (presence news come every interval).
      await eventually(
        async () => (await dutiesHeard(other, stoppedId)).includes("expiry") || undefined,
        30_000,
        `the other node to hear that ${stoppedId} runs expiry`,
      );
      const before = lines(other, ended).length;
      process.kill(stopped.pid, "SIGSTOP");
      try {
        const said = await eventually(
          async () => lines(other, ended)[before],
          60_000,
          `the other node to end ${stoppedId}'s sessions`,
        );
        expect(said).toMatch(/ended the \d+ PostgreSQL sessions of hung node/);
        expect(said).toMatch(/so its once-per-cluster locks are free: [^;]*expiry[^;]* move to another node/);
        // The work moves while the node still hangs.
        await eventually(
          async () => (await dutiesOf(other)).includes("expiry") || undefined,
          30_000,
          "the other node to run expiry",
        );
      } finally {
        process.kill(stopped.pid, "SIGCONT");
      }
      // Resumed, it finds its lock gone and does not run expiry beside the other node.
      await eventually(() => heardAgain(other, stoppedId), 30_000, `${stoppedId} to be heard again`);
      await eventually(
        async () => (await dutiesOf(stopped)).includes("expiry") === false || undefined,
        30_000,
        "the resumed node to drop expiry",
      );
      expect(await dutySum([a, b], "expiry")).toBe(1);
      // And it serves again: a request through its nats-server's queue group answers.
      const via = mq9Client(nc);
      expect((await via("$mq9.AI.MAILBOX.CREATE", { name: "after.resume", ttl: 60 })).error).toBe("");
    }, 240_000);
  },
);
