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

/** A node as it calls and answers the roll: its id, its process and its mq9 cluster (its schema's name). */
export interface NodeCall {
  node: string;
  instance: string;
  cluster: string;
}

/**
 * Keeps two mq9 clusters off one NATS account. NATS gives every queue group on `$mq9.AI.>` its
 * own copy of each request, so nodes of a second cluster (another database or schema) would store
 * every SEND too and answer as well, whatever their queue group. Each node answers the roll call
 * with its cluster's name; a starting node calls the roll before it serves and hears who answers.
 * A node that hears the call of another cluster's node, or of a namesake in its own, says so in
 * its log: two nodes starting in the same moment may miss each other's answers, not their calls
 * (and ClusterMembers hears their presence news afterwards).
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
        const caller = parseCall(msg.data);
        if (caller && caller.instance !== self.instance) {
          if (caller.cluster !== self.cluster) {
            logger.error(
              `node ${caller.node} of another mq9 cluster (another database or schema) is starting on this NATS account: both would store and answer every request; give each mq9 cluster a NATS account or cluster of its own (docs/cluster.md)`,
            );
          } else if (caller.node === self.node) {
            logger.warn(sharedIdWarning(self.node));
          }
        }
        if (msg.reply) connection.publish(msg.reply, JSON.stringify(self));
      },
    });
  }

  /** Every other node on this NATS account that answers the roll call. */
  async call(): Promise<NodeCall[]> {
    const answers: NodeCall[] = [];
    const inbox = `${ANSWER_PREFIX}.${randomBytes(6).toString("hex")}`;
    const listening = this.connection.subscribe(inbox, {
      callback: (err, msg) => {
        const answer = err ? undefined : parseCall(msg.data);
        if (answer && answer.instance !== this.self.instance) answers.push(answer);
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
    return answers;
  }

  close(): void {
    if (!this.subscription.isClosed()) this.subscription.unsubscribe();
  }
}

/** What to tell the operator of two nodes of one cluster under one id. */
export function sharedIdWarning(node: string): string {
  return `another node of this mq9 cluster runs under the node id ${node}: give each node its own --node-id (logs, /healthz and the NATS connection names tell nodes apart by it)`;
}

function parseCall(data: Uint8Array): NodeCall | undefined {
  try {
    const call = JSON.parse(Buffer.from(data).toString("utf8")) as Partial<NodeCall>;
    if (
      typeof call.node !== "string" ||
      typeof call.instance !== "string" ||
      typeof call.cluster !== "string"
    ) {
      return undefined;
    }
    return call as NodeCall;
  } catch {
    return undefined;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
