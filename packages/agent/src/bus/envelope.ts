import { randomUUID } from "node:crypto";
import { isPriority, type Priority } from "@mq9/protocol";

/** What an orchestrated message is for. */
export type MessageType = "query" | "result" | "error" | "heartbeat" | "cancel" | "compensate";
export const MESSAGE_TYPES: readonly MessageType[] = [
  "query",
  "result",
  "error",
  "heartbeat",
  "cancel",
  "compensate",
];

/**
 * The design's priorities are urgent, normal and deferred; mq9's are critical, urgent and
 * normal. Both are accepted: `deferred` is mq9's lowest, `normal`, so it never goes ahead
 * of anything (mq9 has no level below normal).
 */
export type TaskPriority = Priority | "deferred";

export function isTaskPriority(value: unknown): value is TaskPriority {
  return typeof value === "string" && (value === "deferred" || isPriority(value));
}

export function mq9Priority(priority: TaskPriority): Priority {
  return priority === "deferred" ? "normal" : priority;
}

export const PRIORITY_HELP = "priority must be critical, urgent, normal or deferred";

/** Every orchestrated message: traceable, routable, and bounded in how far it may travel. */
export interface Envelope {
  msg_id: string;
  trace_id: string;
  msg_type: MessageType;
  /** Agent (or "orchestrator") that sent it. */
  source: string;
  /** Agent name, or "*" to let the router choose. */
  target: string;
  priority: Priority;
  payload: unknown;
  /** Unix milliseconds. */
  created_at: number;
  hops: number;
  max_hops: number;
  /** Mailbox that wants the reply. */
  reply_to?: string;
  /** Agents this trace has passed through, oldest first (cycle detection). */
  path: string[];
  task_id?: string;
  step_id?: string;
  /** The msg_id this message answers. */
  in_reply_to?: string;
  /** With target "*": the capability the router must find an agent for. */
  capability?: string;
  /** With target "*" and no capability: what is asked, in words, for intent routing. */
  intent?: string;
  /** Deliver a copy to every live agent (with `capability`, when given) instead of one. */
  broadcast?: boolean;
  /** Unix ms at which the message was last put in a mailbox (per-hop latency). */
  sent_at?: number;
}

/** Header names that mirror the envelope, so plain mq9 tools can read it without parsing JSON. */
export const EnvelopeHeaders = {
  msgId: "mq9-msg-id",
  traceId: "mq9-trace-id",
  msgType: "mq9-msg-type",
  source: "mq9-source",
  target: "mq9-target",
  hops: "mq9-hops",
  maxHops: "mq9-max-hops",
} as const;

export interface NewEnvelope {
  msg_type: MessageType;
  source: string;
  target: string;
  payload: unknown;
  trace_id?: string;
  priority?: Priority | "deferred";
  max_hops?: number;
  reply_to?: string;
  task_id?: string;
  step_id?: string;
  capability?: string;
  intent?: string;
  broadcast?: boolean;
}

/**
 * A fresh id: 32 lowercase hex digits. Trace ids name mailboxes (memory), whose names
 * allow only lowercase letters, digits and dots, so ids avoid UUID dashes.
 */
export function newId(): string {
  return randomUUID().replaceAll("-", "");
}

/** Starts a message (a new trace unless one is given). */
export function createEnvelope(fields: NewEnvelope): Envelope {
  const envelope: Envelope = {
    msg_id: newId(),
    trace_id: fields.trace_id ?? newId(),
    msg_type: fields.msg_type,
    source: fields.source,
    target: fields.target,
    priority: mq9Priority(fields.priority ?? "normal"),
    payload: fields.payload,
    created_at: Date.now(),
    hops: 0,
    max_hops: fields.max_hops ?? 16,
    reply_to: fields.reply_to,
    path: [fields.source],
    task_id: fields.task_id,
    step_id: fields.step_id,
  };
  if (fields.capability !== undefined) envelope.capability = fields.capability;
  if (fields.intent !== undefined) envelope.intent = fields.intent;
  if (fields.broadcast) envelope.broadcast = true;
  return envelope;
}

/** The answer to `message`: same trace, one hop further, addressed back to whoever asked. */
export function replyTo(message: Envelope, source: string, type: MessageType, payload: unknown): Envelope {
  return {
    msg_id: newId(),
    trace_id: message.trace_id,
    msg_type: type,
    source,
    target: message.source,
    priority: message.priority,
    payload,
    created_at: Date.now(),
    hops: message.hops + 1,
    max_hops: message.max_hops,
    path: [...message.path, source],
    task_id: message.task_id,
    step_id: message.step_id,
    in_reply_to: message.msg_id,
  };
}

/** The same message on its next hop, passing through `via`. */
export function forward(message: Envelope, via: string, target: string): Envelope {
  return { ...message, target, hops: message.hops + 1, path: [...message.path, via] };
}

/** What an agent's follow-up message may set; the rest comes from the message being handled. */
export interface ChildFields {
  msg_type?: MessageType;
  target: string;
  payload: unknown;
  capability?: string;
  intent?: string;
  /** A copy to every live agent (with `capability`, when given); see Router. */
  broadcast?: boolean;
  reply_to?: string;
  priority?: Priority | "deferred";
}

/**
 * A new message that `source` sends while handling `parent`: same trace, task and
 * hop budget, one hop further, with `source` added to the path (cycle detection).
 */
export function childOf(parent: Envelope, source: string, fields: ChildFields): Envelope {
  const child: Envelope = {
    msg_id: newId(),
    trace_id: parent.trace_id,
    msg_type: fields.msg_type ?? "query",
    source,
    target: fields.target,
    priority: fields.priority === undefined ? parent.priority : mq9Priority(fields.priority),
    payload: fields.payload,
    created_at: Date.now(),
    hops: parent.hops + 1,
    max_hops: parent.max_hops,
    path: parent.path.at(-1) === source ? [...parent.path] : [...parent.path, source],
    reply_to: fields.reply_to,
    task_id: parent.task_id,
    step_id: parent.step_id,
  };
  if (fields.capability !== undefined) child.capability = fields.capability;
  if (fields.intent !== undefined) child.intent = fields.intent;
  if (fields.broadcast) child.broadcast = true;
  return child;
}

/** Header block values for an envelope (JSON payload carries the rest). */
export function envelopeHeaders(envelope: Envelope): Record<string, string> {
  return {
    [EnvelopeHeaders.msgId]: envelope.msg_id,
    [EnvelopeHeaders.traceId]: envelope.trace_id,
    [EnvelopeHeaders.msgType]: envelope.msg_type,
    [EnvelopeHeaders.source]: envelope.source,
    [EnvelopeHeaders.target]: envelope.target,
    [EnvelopeHeaders.hops]: String(envelope.hops),
    [EnvelopeHeaders.maxHops]: String(envelope.max_hops),
  };
}

export class EnvelopeError extends Error {
  override name = "EnvelopeError";
}

/** Reads an envelope from a message body; throws EnvelopeError saying what is wrong. */
export function decodeEnvelope(body: unknown): Envelope {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new EnvelopeError("an orchestrated message must be a JSON object");
  }
  const e = body as Record<string, unknown>;
  for (const field of ["msg_id", "trace_id", "source", "target"]) {
    if (typeof e[field] !== "string" || e[field] === "")
      throw new EnvelopeError(`'${field}' must be a non-empty string`);
  }
  if (!MESSAGE_TYPES.includes(e.msg_type as MessageType)) {
    throw new EnvelopeError(`'msg_type' must be one of ${MESSAGE_TYPES.join(", ")}`);
  }
  for (const field of ["hops", "max_hops", "created_at"]) {
    if (!Number.isInteger(e[field]) || (e[field] as number) < 0) {
      throw new EnvelopeError(`'${field}' must be a whole number >= 0`);
    }
  }
  if (!isTaskPriority(e.priority)) {
    throw new EnvelopeError("'priority' must be critical, urgent, normal or deferred");
  }
  e.priority = mq9Priority(e.priority);
  if (e.broadcast !== undefined && typeof e.broadcast !== "boolean") {
    throw new EnvelopeError("'broadcast' must be true or false when present");
  }
  if (!Array.isArray(e.path) || e.path.some((p) => typeof p !== "string")) {
    throw new EnvelopeError("'path' must be a list of agent names");
  }
  for (const field of ["reply_to", "task_id", "step_id", "in_reply_to", "capability", "intent"]) {
    if (e[field] !== undefined && e[field] !== null && typeof e[field] !== "string") {
      throw new EnvelopeError(`'${field}' must be a string when present`);
    }
  }
  if (e.sent_at !== undefined && !Number.isFinite(e.sent_at)) {
    throw new EnvelopeError("'sent_at' must be a number of unix milliseconds when present");
  }
  return e as unknown as Envelope;
}
