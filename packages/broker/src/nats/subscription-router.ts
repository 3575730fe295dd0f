import type { InboxClaims } from "./inbox-claims.js";
import { OutboundMessage } from "./outbound-message.js";
import { Sublist } from "./sublist.js";
import type { Subscriber, Subscription } from "./subscription.js";

const NO_RESPONDERS_HEADER = Buffer.from("NATS/1.0 503\r\n\r\n");
const EMPTY = Buffer.alloc(0);

/** Delivers messages to matching subscriptions: every plain one, and one member per queue group. */
export class SubscriptionRouter {
  readonly subscriptions = new Sublist<Subscription>();
  /** Set when clients are isolated: a message on a reply inbox goes to the inbox's owner alone. */
  inboxes: InboxClaims | undefined;

  add(sub: Subscription): void {
    this.subscriptions.insert(sub);
  }

  remove(sub: Subscription): void {
    sub.closed = true;
    this.subscriptions.remove(sub);
  }

  /**
   * Routes one message; `publisher` is undefined for server-originated ones. `cacheMatch: false`
   * leaves a one-off subject out of the match cache. `onlyTo` limits delivery to one connection's
   * subscriptions (a service reply, when clients are isolated). Returns deliveries made.
   */
  route(
    msg: OutboundMessage,
    publisher: Subscriber | undefined,
    cacheMatch = true,
    onlyTo?: Subscriber,
  ): number {
    const { psubs, qsubs } = this.subscriptions.match(msg.subject, cacheMatch);
    // With echo on (the common case) no subscriber needs skipping.
    const skip = publisher !== undefined && !publisher.echo ? publisher : undefined;
    let only = onlyTo;
    if (only === undefined && this.inboxes !== undefined) {
      const recipient = this.inboxes.recipientOf(msg.subject);
      if (recipient === null) return 0;
      only = recipient;
    }
    let delivered = 0;
    for (let i = 0; i < psubs.length; i++) {
      const sub = psubs[i];
      if (sub.closed || sub.owner === skip || (only !== undefined && sub.owner !== only)) continue;
      sub.owner.deliver(sub, msg);
      delivered++;
    }
    for (let g = 0; g < qsubs.length; g++) {
      const group = qsubs[g];
      const n = group.length;
      // Random start, then the first eligible member: one delivery per group, load spread evenly.
      const start = n === 1 ? 0 : Math.floor(Math.random() * n);
      for (let k = 0; k < n; k++) {
        const sub = group[(start + k) % n];
        if (sub.closed || sub.owner === skip || (only !== undefined && sub.owner !== only)) continue;
        sub.owner.deliver(sub, msg);
        delivered++;
        break;
      }
    }
    return delivered;
  }

  /**
   * Tells a requester that nobody listens: a `503` status message on its reply subject, delivered
   * only to the requester's own subscriptions (nats.js then fails the request at once).
   */
  noResponders(requester: Subscriber, reply: string): void {
    const { psubs, qsubs } = this.subscriptions.match(reply);
    let msg: OutboundMessage | undefined;
    const send = (sub: Subscription): void => {
      msg ??= new OutboundMessage(reply, undefined, NO_RESPONDERS_HEADER, EMPTY);
      sub.owner.deliver(sub, msg);
    };
    for (const sub of psubs) if (!sub.closed && sub.owner === requester) send(sub);
    for (const group of qsubs) {
      const own = group.find((sub) => !sub.closed && sub.owner === requester);
      if (own !== undefined) send(own);
    }
  }
}
