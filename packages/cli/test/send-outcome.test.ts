import { connect, type Mq9Error } from "@mq9/client";
import {
  brokerKindMissing,
  type NatsServers,
  type PrivatePostgres,
  startNatsServers,
  startPrivatePostgres,
} from "@mq9/testkit";
import type { NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServeProcess, spawnServe } from "./cli-harness.js";
import {
  connectTo,
  eventually,
  everything,
  ids,
  type Mq9NodeProcess,
  mq9Client,
  startNode,
  tcpProxy,
} from "./cluster-harness.js";

const missing = brokerKindMissing("cluster");
const SENDS = 600;
const IN_FLIGHT = 32;

type Via = ReturnType<typeof mq9Client>;

/** Each body at most once in the mailbox; returns the ids each body is stored under. */
function storedOnce(stored: { id: number; body: string }[]): Map<string, number> {
  const byBody = new Map<string, number[]>();
  for (const { id, body } of stored) byBody.set(body, [...(byBody.get(body) ?? []), id]);
  for (const [body, ids] of byBody) expect(ids, `${body} stored once`).toHaveLength(1);
  return new Map([...byBody].map(([body, ids]) => [body, ids[0]]));
}

/**
 * Keyed SENDs through @mq9/client with retries (mailbox `<name>.sdk`) and through a plain nats
 * client that records each reply (`<name>.wire`), while PostgreSQL is stopped and started again
 * under them. Afterwards: with the SDK, every send acknowledged once, under its msg_id, nothing
 * twice; on the wire, a SEND answered with an error other than OUTCOME_UNKNOWN was not stored,
 * and a retry with the same key of the others stores each exactly once.
 */
async function keyedSendsAcrossStop(
  pg: PrivatePostgres,
  database: Awaited<ReturnType<typeof tcpProxy>>,
  servers: string[],
  name: string,
  storeIsDown: () => Promise<boolean>,
): Promise<void> {
  const client = await connect(servers, { requestTimeoutMs: 5_000 });
  const nc: NatsConnection = await connectTo(servers);
  const via: Via = mq9Client(nc);
  try {
    const sdkBox = `${name}.sdk`;
    const wireBox = `${name}.wire`;
    await client.createMailbox({ name: sdkBox });
    await client.createMailbox({ name: wireBox });

    let outage: Promise<void> | undefined;
    const stopOnce = (done: number) => {
      if (done < SENDS / 4 || outage) return;
      outage = (async () => {
        // First the answers stop coming back from the next COMMIT on: it is done, unanswered,
        // and the brokers' statements time out; then PostgreSQL stops, and starts again.
        database.muteRepliesAfter("COMMIT\u0000");
        await eventually(storeIsDown, 30_000, "the brokers to see PostgreSQL down");
        await pg.pause();
        database.switchTo(pg.port);
        await pg.start();
      })();
    };

    // The SDK: keys made by send() itself (retry: true) would do; the body is the key here so
    // that the test can name each send.
    const acked = new Map<string, number>();
    const sdkFailures = new Map<string, Mq9Error>();
    let next = 0;
    const sdkLoad = Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < SENDS) {
          const body = `s${next++}`;
          try {
            acked.set(body, await client.send(sdkBox, body, { idempotencyKey: body, retry: true }));
          } catch (err) {
            sdkFailures.set(body, err as Mq9Error);
          }
          stopOnce(acked.size);
        }
      }),
    );

    // The wire: one try each, every reply kept.
    const replies = new Map<string, { error: string; code?: unknown; msg_id?: unknown }>();
    let wireNext = 0;
    const wireLoad = Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (wireNext < SENDS) {
          const body = `w${wireNext++}`;
          try {
            replies.set(
              body,
              await via(`$mq9.AI.MSG.SEND.${wireBox}`, body, { headers: { "Nats-Msg-Id": body } }),
            );
          } catch (err) {
            replies.set(body, { error: `(client) ${(err as Error).message}`, code: "TIMEOUT" });
          }
        }
      }),
    );
    await Promise.all([sdkLoad, wireLoad]);
    await outage;
    expect(outage).toBeDefined();

    // The SDK rode the outage out: every send acknowledged, each stored once under its msg_id.
    expect([...sdkFailures].map(([body, err]) => `${body}: ${err.code} ${err.message}`)).toEqual([]);
    const sdkStored = storedOnce(await everything(via, sdkBox));
    expect(sdkStored.size).toBe(SENDS);
    for (const [body, id] of acked) expect(sdkStored.get(body), body).toBe(id);

    // The wire: an error other than OUTCOME_UNKNOWN changed nothing.
    const failed = [...replies].filter(([, reply]) => reply.error !== "");
    expect(failed.length).toBeGreaterThan(0);
    const before = storedOnce(await everything(via, wireBox));
    for (const [body, reply] of failed) {
      if (reply.code !== "OUTCOME_UNKNOWN") expect(before.has(body), `${body} (${reply.error})`).toBe(false);
    }
    // Retried with the same keys once PostgreSQL is back, every failed SEND is stored once; one
    // that was stored after all is answered with its msg_id, as a duplicate.
    for (const [body] of failed) {
      const reply = await eventually(
        async () => {
          const again = await via(`$mq9.AI.MSG.SEND.${wireBox}`, body, { headers: { "Nats-Msg-Id": body } });
          return again.error === "" ? again : undefined;
        },
        30_000,
        `the retry of ${body}`,
      );
      if (before.has(body)) expect(reply).toEqual({ error: "", msg_id: before.get(body), duplicate: true });
      replies.set(body, reply);
    }
    const after = storedOnce(await everything(via, wireBox));
    expect(after.size).toBe(SENDS);
    for (const [body, reply] of replies) expect(after.get(body), body).toBe(reply.msg_id);
  } finally {
    await nc.close().catch(() => {});
    await client.close().catch(() => {});
  }
}

/** Whether a broker's /healthz reports its PostgreSQL down. */
async function postgresDown(httpPort: number): Promise<boolean> {
  const health = (await (await fetch(`http://127.0.0.1:${httpPort}/healthz`)).json()) as {
    postgres?: { up?: boolean };
  };
  return health.postgres?.up === false;
}

// PostgreSQL stopped (pg_ctl stop -m fast) under keyed SENDs in flight, its answers cut off first
// so that COMMITs in flight are done without a reply, then started again: no acknowledged SEND
// lost, none stored twice after retries, and an error reply other than OUTCOME_UNKNOWN means the
// SEND was not stored. The brokers reach PostgreSQL through a TCP proxy that can mute replies.
describe.skipIf(missing !== undefined)(
  `SENDs across a PostgreSQL stop${missing ? ` (skipped: ${missing})` : ""}`,
  () => {
    let pg: PrivatePostgres;
    let database: Awaited<ReturnType<typeof tcpProxy>>;
    let url: string;

    beforeAll(async () => {
      pg = await startPrivatePostgres();
      database = await tcpProxy(pg.port);
      url = pg.url.replace(`:${pg.port}/`, `:${database.port}/`);
    }, 120_000);
    afterAll(async () => {
      await database?.close();
      await pg?.stop();
    }, 60_000);

    describe("one broker on PostgreSQL", () => {
      let serve: ServeProcess;
      beforeAll(async () => {
        serve = await spawnServe([
          "--postgres",
          url,
          "--postgres-schema",
          "single",
          "--registry-embedder",
          "none",
          "--orchestrator",
          "off",
        ]);
      }, 60_000);
      afterAll(async () => {
        serve?.child.kill("SIGTERM");
        await serve?.exited;
      }, 60_000);

      it("keyed SENDs with retries: zero duplicates, zero losses; other errors stored nothing", async () => {
        await keyedSendsAcrossStop(pg, database, [`127.0.0.1:${serve.port}`], "single", () =>
          postgresDown(serve.httpPort),
        );
      }, 240_000);
      // The answer of one change's statement is lost on its way back (its Bind names it): the
      // change committed, and the reply says that it may have, not that nothing changed.
      it("an ACK, DELETE or FETCH left unanswered by PostgreSQL says OUTCOME_UNKNOWN, and was made", async () => {
        const nc = await connectTo([`127.0.0.1:${serve.port}`]);
        const via = mq9Client(nc);
        const unanswered = async (statement: string, subject: string, body: object) => {
          database.muteRepliesAfter(`${statement}\u0000`);
          try {
            return await via(subject, body, { timeout: 20_000 });
          } finally {
            database.switchTo(pg.port);
          }
        };
        try {
          await via("$mq9.AI.MAILBOX.CREATE", { name: "unanswered" });
          for (const body of ["one", "two"]) await via("$mq9.AI.MSG.SEND.unanswered", body);
          const fetchOne = () =>
            via("$mq9.AI.MSG.FETCH.unanswered", {
              group_name: "g",
              deliver: "earliest",
              config: { num_msgs: 1, max_wait_ms: 0, lease_ms: 1_000 },
            });
          const [first] = ids(await fetchOne());
          const ack = await unanswered("mq9-ack", "$mq9.AI.MSG.ACK.unanswered", {
            group_name: "g",
            msg_id: first,
          });
          expect(ack.code, JSON.stringify(ack)).toBe("OUTCOME_UNKNOWN");
          expect(ack.error).toMatch(
            /^outcome unknown: the change may or may not have been made \(cannot acknowledge the message: PostgreSQL at .* did not answer its commit/,
          );
          // Made: once its lease is over the ACKed message does not come back, the next one does.
          await eventually(async () => (await postgresDown(serve.httpPort)) === false, 30_000);
          await new Promise((resolve) => setTimeout(resolve, 1_500));
          const next = await fetchOne();
          expect(ids(next)).not.toContain(first);
          const [second] = ids(next);
          const deleted = await unanswered("mq9-delete", `$mq9.AI.MSG.DELETE.unanswered.${second}`, {});
          expect(deleted.code, JSON.stringify(deleted)).toBe("OUTCOME_UNKNOWN");
          const left = await via("$mq9.AI.MSG.QUERY.unanswered", {});
          expect(ids(left)).toEqual([first]);
          // A FETCH's claim leases what it returns: left unanswered, it may have leased.
          await via("$mq9.AI.MSG.SEND.unanswered", "three");
          await eventually(async () => (await postgresDown(serve.httpPort)) === false, 30_000);
          const claimed = await unanswered("mq9-claim", "$mq9.AI.MSG.FETCH.unanswered", {
            group_name: "g",
            config: { num_msgs: 1, max_wait_ms: 0, lease_ms: 1_000 },
          });
          expect(claimed.code, JSON.stringify(claimed)).toBe("OUTCOME_UNKNOWN");
          expect(claimed.error).toMatch(
            /^outcome unknown: messages may or may not have been leased to this FETCH \(cannot fetch messages: PostgreSQL at .* did not answer its commit/,
          );
          // It did lease it: after its lease the message is delivered again, a second time.
          await eventually(async () => (await postgresDown(serve.httpPort)) === false, 30_000);
          await new Promise((resolve) => setTimeout(resolve, 1_500));
          const again = (await fetchOne()) as { messages?: { body?: string; delivery_count?: number }[] };
          expect(again.messages?.map((m) => m.delivery_count)).toEqual([2]);
        } finally {
          await nc.close();
        }
      }, 120_000);
    });

    describe("a cluster of two nodes", () => {
      let nats: NatsServers;
      const nodes: Mq9NodeProcess[] = [];
      beforeAll(async () => {
        nats = await startNatsServers({ size: 1 });
        nodes.push(
          ...(await Promise.all(
            ["a", "b"].map((nodeId) => startNode({ nodeId, nats: nats.urls, postgres: url })),
          )),
        );
      }, 120_000);
      afterAll(async () => {
        await Promise.all(nodes.map((node) => node.stop()));
        await nats?.stop();
      }, 60_000);

      it("keyed SENDs with retries: zero duplicates, zero losses; other errors stored nothing", async () => {
        await keyedSendsAcrossStop(pg, database, nats.urls, "cluster", async () => {
          const down = await Promise.all(nodes.map((node) => postgresDown(node.httpPort)));
          return down.every(Boolean);
        });
      }, 240_000);
    });
  },
);
