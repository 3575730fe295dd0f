import {
  brokerKindMissing,
  type NatsServers,
  type PostgresStandby,
  type PrivatePostgres,
  startNatsServers,
  startPrivatePostgres,
} from "@mq9/testkit";
import type { NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  connectTo,
  eventually,
  everything,
  expectStoredOnce,
  type Mq9NodeProcess,
  mq9Client,
  payloads,
  sendLoad,
  startNode,
  tcpProxy,
} from "./cluster-harness.js";

const missing = brokerKindMissing("cluster");

// A primary PostgreSQL with a synchronous streaming-replication standby (pg_basebackup), and two
// mq9 nodes that reach the database through one address: a TCP proxy standing in for the
// virtual IP, DNS name, PgBouncer or managed-service endpoint that follows the primary. The
// primary dies mid-load, the standby is promoted and the address moves to it, the nodes run on.
describe.skipIf(missing !== undefined)(`cluster failover${missing ? ` (skipped: ${missing})` : ""}`, () => {
  let nats: NatsServers;
  let pg: PrivatePostgres;
  let standby: PostgresStandby;
  let database: Awaited<ReturnType<typeof tcpProxy>>;
  const nodes: Mq9NodeProcess[] = [];
  let nc: NatsConnection;

  beforeAll(async () => {
    [nats, pg] = await Promise.all([startNatsServers({ size: 1 }), startPrivatePostgres()]);
    standby = await pg.startStandby({ synchronous: true });
    database = await tcpProxy(pg.port);
    const url = `postgres://postgres@127.0.0.1:${database.port}/mq9`;
    nodes.push(
      ...(await Promise.all(
        ["a", "b"].map((nodeId) => startNode({ nodeId, nats: nats.urls, postgres: url })),
      )),
    );
    nc = await connectTo(nats.urls);
  }, 240_000);

  afterAll(async () => {
    await nc?.close().catch(() => {});
    await Promise.all(nodes.map((node) => node.stop()));
    await database?.close();
    await nats?.stop();
    await pg?.stop();
  }, 120_000);

  it("standby promoted under 64 SENDs in flight — nothing acknowledged is lost, the nodes serve on by themselves", async () => {
    const via = mq9Client(nc);
    expect((await via("$mq9.AI.MAILBOX.CREATE", { name: "failover" })).error).toBe("");
    for (const body of ["g0", "g1", "g2", "g3"]) await via("$mq9.AI.MSG.SEND.failover", body);
    const leased = await via("$mq9.AI.MSG.FETCH.failover", {
      group_name: "g",
      deliver: "earliest",
      config: { num_msgs: 4, lease_ms: 2_000, max_wait_ms: 0 },
    });
    expect(payloads(leased)).toEqual(["g0", "g1", "g2", "g3"]);
    expect(await via("$mq9.AI.MSG.ACK.failover", { group_name: "g", msg_id: 1 })).toEqual({ error: "" });

    await via("$mq9.AI.MAILBOX.CREATE", { name: "load" });
    let failover: Promise<void> | undefined;
    const load = await sendLoad(via, "load", 2_000, 64, (acked) => {
      if (acked < 300 || failover) return;
      failover = (async () => {
        await pg.kill();
        await standby.promote();
        database.switchTo(standby.port);
      })();
    });
    await failover;
    expect(failover).toBeDefined();
    // Requests during the outage failed with the store's own error; a few of those in flight as
    // the pools reconnected may have outlasted the client's 5 s instead (queued for a connection).
    for (const error of load.errors.keys()) {
      expect(error).toMatch(/PostgreSQL at 127\.0\.0\.1:\d+\/mq9|^\(client\) TIMEOUT$/);
    }
    const timeouts = load.errors.get("(client) TIMEOUT") ?? 0;
    expect(timeouts).toBeLessThanOrEqual(64);
    // The same nodes serve on the promoted standby, without a restart.
    const after = await eventually(
      async () => {
        const reply = await via("$mq9.AI.MSG.SEND.load", "after-failover");
        return reply.error === "" ? reply : undefined;
      },
      30_000,
      "SENDs to succeed on the promoted standby",
    );
    load.acked.set("after-failover", after.msg_id as number);
    const stored = await everything(via, "load");
    expectStoredOnce(load.acked, stored);
    expect(load.acked.size).toBeGreaterThan(300);
    expect(await standby.query("SELECT pg_is_in_recovery()")).toBe("f");

    // The group's ACK and leases came through the failover: g1 and g0 stay ACKed, g2 and g3
    // come back once their lease has run out.
    const back = await via("$mq9.AI.MSG.FETCH.failover", {
      group_name: "g",
      config: { num_msgs: 10, max_wait_ms: 3_000 },
    });
    expect(payloads(back)).toEqual(["g2", "g3"]);
    for (const node of nodes) {
      expect((await fetch(`http://127.0.0.1:${node.httpPort}/healthz`)).status).toBe(200);
    }
  });
});
