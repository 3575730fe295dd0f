import type { NatsConnection, Subscription } from "nats";
import { LocalNotifier, type Notifier, type Watch } from "../engine/notifier.js";
import type { Logger } from "../logger.js";
import { logRefusedSubscription } from "./refused-subscription.js";

/** The subject every node of an mq9 cluster announces new messages on. */
export const WAKE_SUBJECT = "_mq9.cluster.wake";

/**
 * Wakes long-polls across the cluster: a node that stored messages (or promoted delayed ones)
 * wakes its own waiters and tells the other nodes on one NATS subject, which they all subscribe
 * to from the start (no interest to propagate per mailbox, so a wake is never lost to a race).
 * Mailboxes notified in the same run of microtasks share one announcement. A lost announcement costs only
 * latency: a long-poll still ends at its max_wait_ms and claims again.
 */
export class NatsNotifier implements Notifier {
  private readonly local = new LocalNotifier();
  private readonly subscription: Subscription;
  private pending = new Set<string>();
  private scheduled = false;

  constructor(
    private readonly connection: NatsConnection,
    private readonly nodeId: string,
    private readonly logger: Logger,
  ) {
    this.subscription = connection.subscribe(WAKE_SUBJECT, {
      callback: (err, msg) => {
        if (err) {
          const consequence = "long-polls here wake on other nodes' SENDs only at their max_wait_ms";
          logRefusedSubscription(this.logger, WAKE_SUBJECT, err, consequence);
          return;
        }
        try {
          const news = JSON.parse(Buffer.from(msg.data).toString("utf8")) as {
            node: string;
            mailboxes: string[];
          };
          if (news.node === this.nodeId) return;
          for (const mailbox of news.mailboxes) this.local.notify(mailbox);
        } catch {
          this.logger.warn("cluster: ignored a malformed wake-up announcement");
        }
      },
    });
  }

  notify(mailbox: string): void {
    this.local.notify(mailbox);
    this.pending.add(mailbox);
    if (this.scheduled) return;
    this.scheduled = true;
    // Before the client flushes what this turn published: with a batch's replies, one write.
    queueMicrotask(() => this.announce());
  }

  watch(mailbox: string): Watch {
    return this.local.watch(mailbox);
  }

  async close(): Promise<void> {
    if (this.pending.size > 0) this.announce();
    if (!this.subscription.isClosed()) this.subscription.unsubscribe();
    await this.local.close();
  }

  private announce(): void {
    this.scheduled = false;
    const mailboxes = [...this.pending];
    this.pending = new Set();
    if (mailboxes.length === 0 || this.connection.isClosed()) return;
    try {
      this.connection.publish(WAKE_SUBJECT, JSON.stringify({ node: this.nodeId, mailboxes }));
    } catch (err) {
      this.logger.warn(
        { err },
        "cluster: could not announce new messages; remote long-polls wake at their timeout",
      );
    }
  }
}
