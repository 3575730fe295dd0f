import type { OutboundMessage } from "./outbound-message.js";
import type { SublistEntry } from "./sublist.js";

/** The connection side of a subscription, as the router sees it. */
export interface Subscriber {
  readonly id: number;
  /** False when the client asked (CONNECT echo:false) not to get its own publishes. */
  readonly echo: boolean;
  deliver(sub: Subscription, msg: OutboundMessage): void;
}

/** One SUB of one connection. */
export class Subscription implements SublistEntry {
  /** The sid as bytes, spliced into every MSG/HMSG line of this subscription. */
  readonly sidBytes: Buffer;
  /** Auto-unsubscribe after this many deliveries; 0 = never. */
  max = 0;
  delivered = 0;
  /** Set once removed, so a delivery loop over a cached match result skips it. */
  closed = false;
  /** The subject overlaps a subscribe deny pattern: each delivery is checked against it. */
  filtered = false;
  /** The reply inbox id this subscription holds a claim on (see InboxClaims). */
  inboxId: string | undefined;

  constructor(
    readonly owner: Subscriber,
    readonly subject: string,
    readonly queue: string | undefined,
    readonly sid: string,
  ) {
    this.sidBytes = Buffer.from(sid);
  }
}
