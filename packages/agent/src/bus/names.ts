import { createHash } from "node:crypto";
import { isValidMailAddress } from "@mq9/protocol";

/** The default namespace of the orchestrator's mailboxes. */
export const DEFAULT_NAMESPACE = "orch";

/** Where orchestrated traffic lives: every name is derived from one namespace. */
export class BusNames {
  /** Replies to the orchestrator (results, errors of steps and compensations). */
  readonly inbox: string;
  /** Messages agents hand to the router (target "*" or another agent). */
  readonly router: string;
  /** Task state, one message per task under key `task.<id>` (compaction keeps the latest). */
  readonly tasks: string;
  /** Messages nobody could take, with the reason. */
  readonly deadLetters: string;

  constructor(readonly namespace: string = DEFAULT_NAMESPACE) {
    if (!isValidMailAddress(`${namespace}.inbox`)) {
      throw new Error(
        `namespace '${namespace}' cannot prefix a mailbox name: use lowercase letters, digits and single dots`,
      );
    }
    this.inbox = `${namespace}.inbox`;
    this.router = `${namespace}.router`;
    this.tasks = `${namespace}.tasks`;
    this.deadLetters = `${namespace}.dead`;
  }

  /** The memory mailbox of a trace. */
  memory(traceId: string): string {
    return `${this.namespace}.mem.${mailboxSafe(traceId)}`;
  }
}

/** An id as a mailbox name segment: itself when it is safe, else a hash of it. */
export function mailboxSafe(id: string): string {
  if (/^[a-z0-9]{1,64}$/.test(id)) return id;
  return createHash("sha256").update(id).digest("hex").slice(0, 32);
}

/** The default inbox of an agent, from its name. */
export function agentMailbox(name: string): string {
  const segment = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, ".")
    .replace(/^\.+|\.+$/g, "");
  return `agent.${segment}`;
}

/** An agent's control mailbox (cancels), read by every instance apart from the work, so a busy agent still hears it. */
export const controlMailbox = (mailbox: string) => `${mailbox}.ctl`;

/**
 * Where an agent notes the msg_ids it handled that left no answer to find (no `reply_to`, or
 * nothing returned), so a restarted instance does not handle them again within its dedup window.
 */
export const handledMailbox = (mailbox: string) => `${mailbox}.seen`;

/** The tag every message of a trace carries, so a trace is found with QUERY by tag. */
export const traceTag = (traceId: string) => `trace.${traceId}`;
/** Compaction key of a query: one per msg_id, so a sent query is found again after a crash. */
export const queryKey = (msgId: string) => `q.${msgId}`;
/**
 * Compaction key of a cancel in an agent's control mailbox: one per canceled msg_id, so an
 * instance that was down when it was sent still finds it when the message reaches it.
 */
export const cancelKey = (msgId: string) => `c.${msgId}`;
/** Compaction key of a reply: a duplicate reply to one query replaces the first. */
export const replyKey = (inReplyTo: string) => `r.${inReplyTo}`;
/** Compaction key of a task's state in the tasks mailbox. */
export const taskKey = (taskId: string) => `task.${taskId}`;
/** Compaction key of a memory entry. */
export const memoryKey = (key: string) => `mem.${key}`;
