import { randomBytes } from "node:crypto";
import type { NatsConnection, Subscription } from "nats";
import type { Logger } from "../logger.js";
import { logRefusedSubscription } from "./refused-subscription.js";

/** Where a node asks which mq9 nodes are on the NATS account, and where they answer. */
export const ROLL_CALL_SUBJECT = "_mq9.cluster.roll-call";
const ANSWER_PREFIX = "_mq9.cluster.present";

/** How long a starting node listens for answers; a node of another cluster answers within it. */
const LISTEN_MS = 400;
/** Time for the answer subscription to reach the other servers of the NATS cluster. */
const INTEREST_MS = 100;

/** A node as it answers a roll call: its id and the name of its mq9 cluster (its schema's). */
export interface NodeCall {
  node: string;
  cluster: string;
}

/**
 * Keeps two mq9 clusters off one NATS account. NATS gives every queue group on `$mq9.AI.>` its
 * own copy of each request, so nodes of a second cluster (another database or schema) would store
 * every SEND too and answer as well, whatever their queue group. Each node answers the roll call
 * with its cluster's name; a starting node calls the roll before it serves and is told who
 * answered with another name. Best effort: two clusters' first nodes starting in the same
 * moment miss each other.
 */
export class RollCall {
  private readonly subscription: Subscription;

  constructor(
    private readonly connection: NatsConnection,
    private readonly self: NodeCall,
    logger: Logger,
  ) {
    this.subscription = connection.subscribe(ROLL_CALL_SUBJECT, {
      callback: (err, msg) => {
        if (err) {
          const consequence = "a second mq9 cluster on this NATS account is not found at its start";
          logRefusedSubscription(logger, ROLL_CALL_SUBJECT, err, consequence);
          return;
        }
        if (msg.reply) connection.publish(msg.reply, JSON.stringify(self));
      },
    });
  }

  /** The nodes of other mq9 clusters on this NATS account that answer the roll call. */
  async strangers(): Promise<NodeCall[]> {
    const answers: NodeCall[] = [];
    const inbox = `${ANSWER_PREFIX}.${randomBytes(6).toString("hex")}`;
    const listening = this.connection.subscribe(inbox, {
      callback: (err, msg) => {
        if (err) return;
        try {
          answers.push(JSON.parse(Buffer.from(msg.data).toString("utf8")) as NodeCall);
        } catch {
          // Not a node's answer.
        }
      },
    });
    try {
      await this.connection.flush();
      await sleep(INTEREST_MS);
      this.connection.publish(ROLL_CALL_SUBJECT, JSON.stringify(this.self), { reply: inbox });
      await sleep(LISTEN_MS);
    } finally {
      listening.unsubscribe();
    }
    return answers.filter((answer) => answer.cluster !== this.self.cluster);
  }

  close(): void {
    if (!this.subscription.isClosed()) this.subscription.unsubscribe();
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
