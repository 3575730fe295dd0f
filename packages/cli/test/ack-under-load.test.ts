import { Subjects } from "@mq9/protocol";
import { connect, type NatsConnection } from "nats";
import { describe, expect, it } from "vitest";
import { spawnServe, tempDir } from "./cli-harness.js";

const enc = new TextEncoder();
const dec = new TextDecoder();

const MESSAGES = 20_000;
const SENDS_IN_FLIGHT = 64;
const GROUPS = 8;
/** Long enough that no lease runs out before its ACK, however slow the machine. */
const LEASE_MS = 20_000;

async function call(nc: NatsConnection, subject: string, body: unknown): Promise<Record<string, unknown>> {
  const data = body instanceof Uint8Array ? body : enc.encode(JSON.stringify(body));
  return JSON.parse(dec.decode((await nc.request(subject, data, { timeout: 30_000 })).data));
}

describe("ACK under SEND load", () => {
  it("answers no request with an error while 64 SENDs are in flight and 8 groups FETCH and ACK; an ACKed message never comes again", async () => {
    const served = await spawnServe(["--data", tempDir("mq9-ack-load-")]);
    const senders = await connect({ servers: `127.0.0.1:${served.port}`, reconnect: false });
    const consumers = await connect({ servers: `127.0.0.1:${served.port}`, reconnect: false });
    const errors: string[] = [];
    try {
      await call(senders, Subjects.mailboxCreate, { name: "load.box" });
      let sent = 0;
      const payload = new Uint8Array(256).fill(1);
      const sender = async () => {
        while (sent < MESSAGES) {
          sent++;
          const reply = await call(senders, Subjects.send("load.box"), payload);
          if (reply.error) errors.push(`SEND: ${reply.error}`);
        }
      };
      // Mailboxes created meanwhile take the same path as an ACK (one committed change).
      const creator = async () => {
        for (let i = 0; sent < MESSAGES; i++) {
          const reply = await call(senders, Subjects.mailboxCreate, { name: `load.extra${i}` });
          if (reply.error) errors.push(`MAILBOX.CREATE: ${reply.error}`);
        }
      };
      const consume = async (group: string) => {
        const acked = new Set<number>();
        /** Messages of ACKs that failed: they must come again. */
        const failed = new Set<number>();
        const redeliveredAfterAck: number[] = [];
        let idleSinceMs: number | undefined;
        while (acked.size < MESSAGES) {
          // Once sending is over, whatever is not ACKed yet comes within a lease, or never will.
          if (idleSinceMs !== undefined && Date.now() - idleSinceMs > LEASE_MS + 5_000) break;
          const reply = await call(consumers, Subjects.fetch("load.box"), {
            group_name: group,
            deliver: "earliest",
            config: { num_msgs: 50, max_wait_ms: 500, lease_ms: failed.size > 0 ? 1_000 : LEASE_MS },
          });
          if (reply.error) {
            errors.push(`FETCH: ${reply.error}`);
            continue;
          }
          const ids = (reply.messages as { msg_id: number }[]).map((m) => m.msg_id);
          if (ids.length === 0) {
            if (sent >= MESSAGES) idleSinceMs ??= Date.now();
            continue;
          }
          idleSinceMs = undefined;
          for (const id of ids) {
            if (acked.has(id)) redeliveredAfterAck.push(id);
            failed.delete(id);
          }
          const ack = await call(consumers, Subjects.ack("load.box"), {
            group_name: group,
            mail_address: "load.box",
            msg_id: ids.at(-1),
          });
          if (ack.error) {
            errors.push(`ACK: ${ack.error}`);
            for (const id of ids) failed.add(id);
          } else for (const id of ids) acked.add(id);
        }
        return { acked, failed, redeliveredAfterAck };
      };
      const [, , ...groups] = await Promise.all([
        Promise.all(Array.from({ length: SENDS_IN_FLIGHT }, sender)),
        creator(),
        ...Array.from({ length: GROUPS }, (_, g) => consume(`g${g}`)),
      ]);
      expect(errors).toEqual([]);
      for (const { acked, failed, redeliveredAfterAck } of groups) {
        expect(redeliveredAfterAck).toEqual([]);
        expect(failed.size).toBe(0);
        expect(acked.size).toBe(MESSAGES);
      }
    } finally {
      await senders.close();
      await consumers.close();
      served.child.kill("SIGTERM");
      await served.exited;
    }
  }, 300_000);
});
