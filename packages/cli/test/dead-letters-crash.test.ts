import {
  brokerKindMissing,
  type NatsServers,
  type PrivatePostgres,
  startNatsServers,
  startPrivatePostgres,
} from "@mq9/testkit";
import type { NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnServe, tempDir } from "./cli-harness.js";
import { connectTo, eventually, type Mq9NodeProcess, mq9Client, startNode } from "./cluster-harness.js";

const N = 300;
const BOX = "crash.poison";
const DLQ = `${BOX}.dlq`;

/** One broker (or cluster) under test: where to connect, and how to kill -9 and restart a node. */
interface Brokers {
  servers(): string[];
  /** Kills a node with SIGKILL while the moves run. */
  killOne(): Promise<void>;
  /** Brings the killed node back (the data it left behind: its directory or its database). */
  restart(): Promise<void>;
}

type Item = { msg_id: number; headers?: Record<string, string> };

/** Every message of a mailbox, read statelessly page by page. */
async function readAll(via: ReturnType<typeof mq9Client>, box: string): Promise<Item[]> {
  const all: Item[] = [];
  let from = 0;
  for (;;) {
    const reply = await via(`$mq9.AI.MSG.FETCH.${box}`, {
      deliver: "from_id",
      from_id: from,
      config: { num_msgs: 100, max_wait_ms: 0 },
    });
    if (reply.error)
      return reply.error.includes("does not exist") ? all : Promise.reject(new Error(reply.error));
    const batch = reply.messages as Item[];
    if (batch.length === 0) return all;
    all.push(...batch);
    from = batch.at(-1)!.msg_id + 1;
  }
}

/**
 * N messages that fail on their only delivery (max_deliver 1) reach the dead-letter mailbox while a
 * node is killed in the middle of moving them: afterwards every one is there exactly once, and the
 * group never gets any of them again.
 */
async function killedWhileMoving(brokers: Brokers): Promise<void> {
  let nc: NatsConnection = await connectTo(brokers.servers());
  let via = mq9Client(nc);
  expect(await via("$mq9.AI.MAILBOX.CREATE", { name: BOX, max_deliver: 1 })).toMatchObject({ error: "" });
  const sent: number[] = [];
  for (let i = 0; i < N; i++) sent.push((await via(`$mq9.AI.MSG.SEND.${BOX}`, `job ${i}`)).msg_id as number);
  const leaseAll = async () => {
    let taken = 0;
    for (;;) {
      const reply = await via(`$mq9.AI.MSG.FETCH.${BOX}`, {
        group_name: "workers",
        deliver: "earliest",
        config: { num_msgs: 100, max_wait_ms: 0, lease_ms: 300 },
      });
      if (reply.error) throw new Error(reply.error);
      const got = (reply.messages as Item[]).length;
      if (got === 0) return taken;
      taken += got;
    }
  };
  // Every message leased and never ACKed: each lease's end is its last.
  expect(await leaseAll()).toBe(N);
  await eventually(async () => (await readAll(via, DLQ)).length > 0, 30_000, "the first dead letters");
  await brokers.killOne();
  await brokers.restart();
  await nc.close().catch(() => {});
  nc = await connectTo(brokers.servers());
  via = mq9Client(nc);
  // After a restart a store that kept no lease delivers the unsettled messages once more.
  const letters = await eventually(
    async () => {
      await leaseAll();
      const found = await readAll(via, DLQ);
      return found.length >= N ? found : undefined;
    },
    90_000,
    "every message to reach the dead-letter mailbox",
  );
  const origins = letters.map((l) => Number(l.headers?.["mq9-dlq-msg-id"]));
  expect(letters).toHaveLength(N);
  expect(new Set(origins).size).toBe(N);
  expect([...origins].sort((a, b) => a - b)).toEqual(sent);
  for (const letter of letters) {
    expect(letter.headers).toMatchObject({ "mq9-dlq-mailbox": BOX, "mq9-dlq-group": "workers" });
  }
  // Nothing comes back to the group, and no copy is added later.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  expect(await leaseAll()).toBe(0);
  expect(await readAll(via, DLQ)).toHaveLength(N);

  // Sending them all back, killed halfway: each reaches its mailbox once, and leaves the DLQ.
  // Its answer is lost with the node; the request is left to time out.
  void via(`$mq9.AI.MSG.RETRY.${DLQ}`, {}, { timeout: 60_000 }).catch(() => undefined);
  await eventually(async () => (await readAll(via, BOX)).length > N, 30_000, "the first retried message");
  await brokers.killOne();
  await brokers.restart();
  await nc.close().catch(() => {});
  nc = await connectTo(brokers.servers());
  via = mq9Client(nc);
  await eventually(
    async () => {
      const reply = await via(`$mq9.AI.MSG.RETRY.${DLQ}`, {}, { timeout: 60_000 });
      return reply.error === "" && (await readAll(via, DLQ)).length === 0;
    },
    60_000,
    "every dead letter sent back",
  );
  const bodies = (await readAll(via, BOX)).map((m) => (m as Item & { payload: string }).payload);
  const copies = new Map<string, number>();
  for (const body of bodies) copies.set(body, (copies.get(body) ?? 0) + 1);
  // The original (still the mailbox's: other groups may want it) and one retried copy each.
  expect(bodies).toHaveLength(2 * N);
  expect([...copies.values()].every((n) => n === 2)).toBe(true);
  await nc.close();
}

describe("dead letters survive kill -9 in the middle of their moves", () => {
  it("embedded store (SQLite)", async () => {
    const dataDir = tempDir("mq9-dlq-crash-");
    let serve = await spawnServe(["--data", dataDir, "--orchestrator", "off", "--registry-embedder", "none"]);
    await killedWhileMoving({
      servers: () => [`127.0.0.1:${serve.port}`],
      killOne: async () => {
        serve.child.kill("SIGKILL");
        await serve.exited;
      },
      restart: async () => {
        serve = await spawnServe(["--data", dataDir, "--orchestrator", "off", "--registry-embedder", "none"]);
      },
    });
    serve.child.kill("SIGTERM");
    await serve.exited;
  }, 180_000);

  const pgMissing = brokerKindMissing("postgres");
  describe.skipIf(pgMissing !== undefined)(
    `on PostgreSQL${pgMissing ? ` (skipped: ${pgMissing})` : ""}`,
    () => {
      let pg: PrivatePostgres;
      let nats: NatsServers | undefined;
      const nodes: Mq9NodeProcess[] = [];
      beforeAll(async () => {
        pg = await startPrivatePostgres();
      }, 240_000);
      afterAll(async () => {
        await Promise.all(nodes.map((node) => node.stop()));
        await nats?.stop();
        await pg?.stop();
      }, 120_000);

      it("one broker", async () => {
        const args = ["--postgres-schema", "dlq_single"];
        let node = await startNode({ postgres: pg.url, args });
        nodes.push(node);
        await killedWhileMoving({
          servers: () => [`127.0.0.1:${node.port}`],
          killOne: () => node.kill("SIGKILL"),
          restart: async () => {
            node = await startNode({ postgres: pg.url, args });
            nodes.push(node);
          },
        });
      }, 180_000);

      const clusterMissing = brokerKindMissing("cluster");
      it.skipIf(clusterMissing !== undefined)(
        "two cluster nodes, one killed",
        async () => {
          nats = await startNatsServers({ size: 1 });
          const args = ["--postgres-schema", "dlq_cluster"];
          const start = (nodeId: string) => startNode({ nodeId, nats: nats!.urls, postgres: pg.url, args });
          let first = await start("d1");
          const second = await start("d2");
          nodes.push(first, second);
          await killedWhileMoving({
            servers: () => nats!.urls,
            killOne: () => first.kill("SIGKILL"),
            restart: async () => {
              first = await start("d1");
              nodes.push(first);
            },
          });
        },
        240_000,
      );
    },
  );
});
