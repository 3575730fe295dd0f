import { encodeReply, errorReplyOf, Mq9Error, type ReplyPayload } from "@mq9/protocol";
import type { Msg, NatsConnection, Subscription } from "nats";
import { AccountIdentity, type RequestSubject } from "../cluster/account-identity.js";
import { logRefusedSubscription } from "../cluster/refused-subscription.js";
import type { Logger } from "../logger.js";
import type { Mq9Request, Mq9RequestHandler } from "./mq9-request.js";
import { UndeliveredReplies } from "./undelivered-replies.js";

/** FETCHes are the requests whose reply hands something out (leases) that an absent requester would hold. */
const FETCH_SUBJECTS = "$mq9.AI.MSG.FETCH.";

/**
 * A cluster node's request path, the counterpart of the embedded listener's: serves `$mq9.AI.>`
 * from a NATS cluster in one queue group, so each request goes to one node and a node that dies
 * stops receiving them at once. Each message becomes an Mq9Request for the handler, its reply
 * goes back through NATS. The subscription survives reconnects (the client resubscribes). With an
 * identity (cluster/account-identity.ts) the requester is read from the subject's account prefix.
 */
export class QueueGroupRequests {
  private subscriptions: Subscription[] = [];
  private inFlight = 0;
  private idle?: () => void;
  private readonly undelivered: UndeliveredReplies;
  private refusal?: Error;

  constructor(
    private readonly connection: NatsConnection,
    private readonly queueGroup: string,
    private readonly logger: Logger,
    private readonly identity = new AccountIdentity(undefined),
  ) {
    this.undelivered = new UndeliveredReplies(connection, logger);
  }

  /** Starts taking requests; `handler` answers each. */
  serve(handler: Mq9RequestHandler): void {
    this.subscriptions = this.identity.subjects().map((on) => this.subscribe(on, handler));
  }

  private subscribe(on: RequestSubject, handler: Mq9RequestHandler): Subscription {
    return this.connection.subscribe(on.subject, {
      queue: this.queueGroup,
      callback: (err, msg) => {
        if (err) {
          this.refusal = err;
          logRefusedSubscription(this.logger, on.subject, err, "this node receives no request");
          return;
        }
        const { subject, principal, imported, refusal } = this.identity.identify(msg.subject, on.prefixed);
        if (refusal !== undefined) {
          try {
            if (msg.reply)
              msg.respond(replyBytes(encodeReply(errorReplyOf(new Mq9Error("PERMISSION_DENIED", refusal)))));
          } catch {
            // The connection is closing; the requester times out.
          }
          return;
        }
        this.inFlight++;
        let answered = false;
        // A reply that crossed into another account does not bring its no-responders status back.
        const watched =
          msg.reply && !imported && subject.startsWith(FETCH_SUBJECTS) ? new AbortController() : undefined;
        const request: Mq9Request = {
          subject,
          header: rawHeader(msg),
          payload: msg.data,
          undelivered: watched?.signal,
          principal,
        };
        handler.answer(request, (reply) => {
          if (answered) return;
          answered = true;
          if (msg.reply) {
            const data = replyBytes(reply);
            try {
              // A FETCH's reply asks for a status: a no-responders answer says no one took it.
              if (watched) {
                this.connection.publish(msg.reply, data, {
                  reply: this.undelivered.replySubjectFor(watched),
                });
              } else msg.respond(data);
            } catch {
              // The connection is closing; the requester times out.
            }
          }
          this.inFlight--;
          if (this.inFlight === 0) this.idle?.();
        });
      },
    });
  }

  /** Why the nats-servers refused to hand this node requests, when they did. */
  get refused(): string | undefined {
    return this.refusal?.message;
  }

  /** Stops taking new requests; those in hand are still answered. */
  async stopReceiving(): Promise<void> {
    const subs = this.subscriptions;
    this.subscriptions = [];
    await Promise.all(subs.filter((sub) => !sub.isClosed()).map((sub) => sub.drain().catch(() => {})));
  }

  /** Stops taking requests and waits (up to `timeoutMs`) for those in hand; the connection stays open. */
  async close(timeoutMs = 5_000): Promise<void> {
    await this.stopReceiving();
    if (this.inFlight > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        this.idle = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    this.undelivered.close();
  }
}

/** The request's NATS header block as bytes, as the embedded listener hands it over. */
function rawHeader(msg: Msg): Uint8Array | undefined {
  const headers = msg.headers as (Msg["headers"] & { encode?: () => Uint8Array }) | undefined;
  return headers?.encode?.();
}

/** A reply as one buffer: NATS publishes bytes, not the pieces the service builds it from. */
function replyBytes(reply: ReplyPayload): Uint8Array {
  if (typeof reply === "string") return Buffer.from(reply);
  return Buffer.concat(reply.map((piece) => (typeof piece === "string" ? Buffer.from(piece) : piece)));
}
