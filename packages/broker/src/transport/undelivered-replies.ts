import { randomBytes } from "node:crypto";
import type { NatsConnection, Subscription } from "nats";
import { logRefusedSubscription } from "../cluster/refused-subscription.js";
import type { Logger } from "../logger.js";

/** Subjects the no-responders answers come back on: `<prefix>.<node token>.<seq>`. */
export const UNDELIVERED_PREFIX = "_mq9.cluster.undelivered";

/** How long a reply's status may take to come back; later ones are no longer waited for. */
const WATCH_MS = 10_000;

/**
 * Tells a node that a reply reached no one: its requester's connection is gone. A node of a
 * cluster does not see its clients' sockets (the nats-servers do), so a long-poll FETCH whose
 * client died keeps waiting and may still claim messages when one arrives. Its reply then goes
 * out as a NATS request of its own (a reply subject set): a nats-server that has no subscriber
 * for the requester's inbox answers at once with a 503 no-responders status, which aborts the
 * reply's `undelivered` signal, and the FETCH gives its leases back. A live client simply
 * receives its reply (a reply subject on a reply is ignored by every NATS client).
 */
export class UndeliveredReplies {
  private readonly prefix = `${UNDELIVERED_PREFIX}.${randomBytes(6).toString("hex")}`;
  private readonly subscription: Subscription;
  private readonly watched = new Map<number, { controller: AbortController; sentMs: number }>();
  private seq = 0;
  private readonly sweeper: NodeJS.Timeout;

  constructor(connection: NatsConnection, logger: Logger) {
    this.subscription = connection.subscribe(`${this.prefix}.*`, {
      callback: (err, msg) => {
        if (err) {
          const consequence = "a FETCH whose client is gone keeps its leases until they run out";
          logRefusedSubscription(logger, `${UNDELIVERED_PREFIX}.>`, err, consequence);
          return;
        }
        if (msg.headers?.code !== 503) return;
        const seq = Number(msg.subject.slice(this.prefix.length + 1));
        const entry = this.watched.get(seq);
        if (!entry) return;
        this.watched.delete(seq);
        entry.controller.abort();
      },
    });
    this.sweeper = setInterval(() => this.forgetOld(), WATCH_MS);
    this.sweeper.unref();
  }

  /** The reply subject to send a reply with: a no-responders answer to it aborts `controller`. */
  replySubjectFor(controller: AbortController): string {
    const seq = ++this.seq;
    this.watched.set(seq, { controller, sentMs: Date.now() });
    return `${this.prefix}.${seq}`;
  }

  close(): void {
    clearInterval(this.sweeper);
    this.watched.clear();
    if (!this.subscription.isClosed()) this.subscription.unsubscribe();
  }

  private forgetOld(): void {
    const before = Date.now() - WATCH_MS;
    for (const [seq, entry] of this.watched) {
      if (entry.sentMs >= before) break;
      this.watched.delete(seq);
    }
  }
}
