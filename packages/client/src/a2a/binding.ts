/**
 * The mq9 mailbox binding of A2A: JSON-RPC 2.0 envelopes carried as mailbox
 * messages. A request goes to the agent's inbox with the caller's reply mailbox
 * in `mq9-reply-to`; every response (one per stream event) goes to that mailbox,
 * correlated by `mq9-a2a-request-id`, the last one marked `mq9-a2a-last: true`.
 */

/** `AgentInterface.protocolBinding` of an agent reachable through its mq9 mailbox. */
export const MQ9_A2A_BINDING = "urn:mq9:a2a:mailbox:v1";

/** Header names of the binding (lowercase: the broker returns headers lowercased). */
export const A2AHeaders = {
  replyTo: "mq9-reply-to",
  method: "mq9-a2a-method",
  type: "mq9-a2a-type",
  last: "mq9-a2a-last",
  taskId: "mq9-a2a-task-id",
  requestId: "mq9-a2a-request-id",
  version: "a2a-version",
  extensions: "a2a-extensions",
  /** Marks a message that only wakes long-polls (see release-long-polls.ts). */
  noop: "mq9-a2a-noop",
} as const;

/** A2A versions the binding speaks; an absent version header means 1.0 for v1 method names, 0.3 for v0.3 ones. */
export const SUPPORTED_VERSIONS = ["1.0", "0.3"] as const;

const V1_SEND = new Set(["SendMessage", "SendStreamingMessage"]);
const LEGACY_SEND = new Set(["message/send", "message/stream"]);

/** Methods that start or continue a task: they run on the agent's task lane. */
export function isSendMethod(method: string): boolean {
  return V1_SEND.has(method) || LEGACY_SEND.has(method);
}

/** v0.2/v0.3 method names use slashes (`message/send`, `tasks/get`). */
export function isLegacyMethod(method: string): boolean {
  return method.includes("/");
}

/** The streaming counterpart of a send method (the agent always streams, see a2a-agent.ts). */
export function streamingMethod(method: string): string {
  if (method === "SendMessage") return "SendStreamingMessage";
  if (method === "message/send") return "message/stream";
  return method;
}

/** Whether a method's reply is a stream of events rather than one result. */
export function isStreamingMethod(method: string): boolean {
  return (
    method === "SendStreamingMessage" ||
    method === "message/stream" ||
    method === "SubscribeToTask" ||
    method === "tasks/resubscribe"
  );
}

/** The URL an mq9 interface carries: `mq9://<broker>/<mailbox>` (the connection decides the broker). */
export function mailboxUrl(server: string | undefined, mailbox: string): string {
  return `mq9://${server ?? "localhost"}/${mailbox}`;
}
