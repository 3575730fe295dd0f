import type { NatsConnection, Subscription } from "nats";
import { LocalNotifier, type Notifier, type Watch } from "../engine/notifier.js";
import type { Logger } from "../logger.js";
import { logRefusedSubscription } from "./refused-subscription.js";

/** The subject every node of an mq9 cluster announces new messages on. */
export const WAKE_SUBJECT = "_mq9.cluster.wake";

/** How long a wait's claim waits at most for the subscription's confirmation. */
const READY_WAIT_MS = 1_000;

/** How long a node keeps hearing the news after its last long-poll ended: a consumer's next one comes soon. */
export const WAKE_LINGER_MS = 30_000;

/**
 * Wakes long-polls across the cluster: a node that stored messages (or promoted delayed ones)
 * wakes its own waiters and tells the other nodes on one NATS subject. A node hears that subject
 * only while a long-poll waits on it (and WAKE_LINGER_MS after the last one), so the nodes that
 * serve SENDs alone read nothing when another node appends. A wait subscribes before the claim
 * that precedes it, and that claim waits until its nats-server has the subscription (a flush):
 * an append the claim missed commits after it, so its news finds the interest in place.
 * Mailboxes notified in the same run of microtasks share one announcement. A lost announcement
 * costs only latency: a long-poll still ends at its max_wait_ms and claims again.
 */
export class NatsNotifier implements Notifier {
  private readonly local = new LocalNotifier();
  private subscription?: Subscription;
  /** Resolves once this node's nats-server has the subscription (a flush after SUB). */
  private subscribed?: Promise<void>;
  private ready = false;
  /** Watches not yet cancelled: the subscription stays while any is. */
  private watching = 0;
  private linger?: NodeJS.Timeout;
  private refusalLogged = false;
  private pending = new Set<string>();
  private scheduled = false;
  private closed = false;

  constructor(
    private readonly connection: NatsConnection,
    private readonly nodeId: string,
    private readonly logger: Logger,
    private readonly lingerMs = WAKE_LINGER_MS,
  ) {}

  notify(mailbox: string): void {
    this.local.notify(mailbox);
    this.pending.add(mailbox);
    if (this.scheduled) return;
    this.scheduled = true;
    // Before the client flushes what this turn published: with a batch's replies, one write.
    queueMicrotask(() => this.announce());
  }

  watch(mailbox: string): Watch {
    const watch = this.local.watch(mailbox);
    if (this.closed) return watch;
    this.watching++;
    clearTimeout(this.linger);
    this.linger = undefined;
    const ready = this.listen();
    let cancelled = false;
    return {
      fired: watch.fired,
      ...(ready ? { ready } : {}),
      cancel: () => {
        watch.cancel();
        if (cancelled) return;
        cancelled = true;
        this.watching--;
        if (this.watching === 0) this.stopListeningSoon();
      },
    };
  }

  /** Whether this node hears the other nodes' news now (a long-poll waits, or did lately). */
  get listening(): boolean {
    return this.subscription !== undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.pending.size > 0) this.announce();
    this.stopListening();
    await this.local.close();
  }

  /** Subscribes unless subscribed; returns what a claim must wait for, undefined once in place. */
  private listen(): Promise<void> | undefined {
    if (this.ready) return undefined;
    if (this.subscribed) return this.subscribed;
    // Subscribed, its confirmation overdue (reconnecting): it comes with the new connection.
    if (this.subscription || this.connection.isClosed()) return undefined;
    let subscription: Subscription;
    try {
      subscription = this.connection.subscribe(WAKE_SUBJECT, {
        callback: (err, msg) => {
          if (err) {
            if (this.refusalLogged) return;
            this.refusalLogged = true;
            const consequence = "long-polls here wake on other nodes' SENDs only at their max_wait_ms";
            logRefusedSubscription(this.logger, WAKE_SUBJECT, err, consequence);
            return;
          }
          this.heard(msg.data);
        },
      });
    } catch {
      return undefined;
    }
    this.subscription = subscription;
    let timer: NodeJS.Timeout | undefined;
    const confirmed = this.connection.flush().then(
      () => {
        if (this.subscription === subscription) this.ready = true;
      },
      // Closing: the claim goes ahead, and the wait ends at its max_wait_ms at worst.
      () => {},
    );
    // Reconnecting, the flush waits for the new connection: the claim does not.
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, READY_WAIT_MS);
    });
    const subscribed = Promise.race([confirmed, late]).finally(() => clearTimeout(timer));
    this.subscribed = subscribed.finally(() => {
      if (this.subscription === subscription) this.subscribed = undefined;
    });
    return this.subscribed;
  }

  private stopListeningSoon(): void {
    clearTimeout(this.linger);
    this.linger = setTimeout(() => {
      this.linger = undefined;
      if (this.watching === 0) this.stopListening();
    }, this.lingerMs);
    this.linger.unref();
  }

  private stopListening(): void {
    clearTimeout(this.linger);
    this.linger = undefined;
    const subscription = this.subscription;
    this.subscription = undefined;
    this.subscribed = undefined;
    this.ready = false;
    if (subscription && !subscription.isClosed()) {
      try {
        subscription.unsubscribe();
      } catch {
        // The connection is closing: the subscription goes with it.
      }
    }
  }

  private heard(data: Uint8Array): void {
    try {
      const news = JSON.parse(Buffer.from(data).toString("utf8")) as {
        node: string;
        mailboxes: string[];
      };
      if (news.node === this.nodeId) return;
      for (const mailbox of news.mailboxes) this.local.notify(mailbox);
    } catch {
      this.logger.warn("cluster: ignored a malformed wake-up announcement");
    }
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
