/**
 * A2A wire JSON as it travels in mailboxes (v1.0 camelCase with enum names; v0.3
 * shapes with `kind` are read too). Plain objects: SDK objects are built only
 * where an SDK API is called.
 */

export type JsonObject = Record<string, unknown>;

/** An A2A v1.0 Task as wire JSON: the fields every task carries typed, the rest as sent. */
export type TaskJson = JsonObject & {
  id: string;
  contextId: string;
  status: { state: string; message?: JsonObject; timestamp?: string };
  artifacts?: JsonObject[];
  history?: JsonObject[];
};
export type RpcId = string | number | null;

export interface JsonRpcRequest {
  jsonrpc: "2.0";
  id: RpcId;
  method: string;
  params?: unknown;
}

export interface JsonRpcError {
  code: number;
  message: string;
  data?: unknown;
}

export interface JsonRpcResponse {
  jsonrpc: "2.0";
  id: RpcId;
  result?: unknown;
  error?: JsonRpcError;
}

/** JSON-RPC and A2A error codes (A2A v1 §5.4). */
export const RpcErrorCode = {
  parse: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  taskNotFound: -32001,
  taskNotCancelable: -32002,
  unsupportedOperation: -32004,
  versionNotSupported: -32009,
} as const;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function rpcError(id: RpcId, code: number, message: string): JsonRpcResponse {
  return { jsonrpc: "2.0", id, error: { code, message } };
}

/** v1 task states by their v0.3 spelling. */
const V1_STATE: Record<string, string> = {
  submitted: "TASK_STATE_SUBMITTED",
  working: "TASK_STATE_WORKING",
  completed: "TASK_STATE_COMPLETED",
  failed: "TASK_STATE_FAILED",
  canceled: "TASK_STATE_CANCELED",
  rejected: "TASK_STATE_REJECTED",
  "input-required": "TASK_STATE_INPUT_REQUIRED",
  "auth-required": "TASK_STATE_AUTH_REQUIRED",
  unknown: "TASK_STATE_UNSPECIFIED",
};

/** A task state in its v1 spelling, whichever version wrote it. */
export function v1State(state: unknown): string | undefined {
  if (typeof state !== "string") return undefined;
  return state.startsWith("TASK_STATE_") ? state : V1_STATE[state];
}

const TERMINAL = new Set([
  "TASK_STATE_COMPLETED",
  "TASK_STATE_FAILED",
  "TASK_STATE_CANCELED",
  "TASK_STATE_REJECTED",
]);

export function isTerminalState(state: string | undefined): boolean {
  return state !== undefined && TERMINAL.has(state);
}

/** A state after which a stream ends: terminal, or interrupted waiting for input. */
export function endsStream(state: string | undefined): boolean {
  return isTerminalState(state) || state === "TASK_STATE_INPUT_REQUIRED";
}

/** What one stream event (a JSON-RPC `result`) is, in either A2A version. */
export interface EventInfo {
  /** `Task`, `Message`, `TaskStatusUpdateEvent`, `TaskArtifactUpdateEvent`, or `Result` for anything else. */
  type: string;
  /** The event object itself (the v1 wrapper removed). */
  body: unknown;
  taskId?: string;
  contextId?: string;
  /** The v1 task state the event reports, if any. */
  state?: string;
}

const V1_WRAPPERS: Record<string, string> = {
  task: "Task",
  message: "Message",
  statusUpdate: "TaskStatusUpdateEvent",
  artifactUpdate: "TaskArtifactUpdateEvent",
};

const V03_KINDS: Record<string, string> = {
  task: "Task",
  message: "Message",
  "status-update": "TaskStatusUpdateEvent",
  "artifact-update": "TaskArtifactUpdateEvent",
};

function str(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

/** Reads a result: a v1 StreamResponse / SendMessageResponse (`{task}`, `{statusUpdate}` …), or a v0.3 object with `kind`. */
export function eventInfo(result: unknown): EventInfo {
  if (!isObject(result)) return { type: "Result", body: result };
  let type: string | undefined;
  let body: JsonObject = result;
  const keys = Object.keys(result);
  if (keys.length === 1 && V1_WRAPPERS[keys[0]] && isObject(result[keys[0]])) {
    type = V1_WRAPPERS[keys[0]];
    body = result[keys[0]] as JsonObject;
  } else if (typeof result.kind === "string" && V03_KINDS[result.kind]) {
    type = V03_KINDS[result.kind];
  } else if (isObject(result.status) && typeof result.id === "string") {
    type = "Task";
  }
  if (!type) return { type: "Result", body: result };
  const status = isObject(body.status) ? body.status : undefined;
  const taskId = type === "Task" ? str(body.id) : str(body.taskId);
  return { type, body, taskId, contextId: str(body.contextId), state: v1State(status?.state) };
}

/**
 * Whether a v0.3 stream closes after this event (other than a Message, which is a stream of its
 * own): a status-update marked `final`, or one at a state after which streams end.
 */
export function endsV03Stream(info: EventInfo): boolean {
  if (info.type !== "TaskStatusUpdateEvent") return false;
  return (info.body as JsonObject).final === true || endsStream(info.state);
}

/** The text of a list of parts (v1 `{text}` or v0.3 `{kind:"text", text}`), joined by newlines. */
export function partsText(parts: unknown): string {
  if (!Array.isArray(parts)) return "";
  return parts
    .map((part) => (isObject(part) && typeof part.text === "string" ? part.text : ""))
    .filter((text) => text !== "")
    .join("\n");
}

/** A v1 user message with one text part. */
export function textMessage(
  text: string,
  options: {
    messageId?: string;
    taskId?: string;
    contextId?: string;
    role?: "ROLE_USER" | "ROLE_AGENT";
  } = {},
): JsonObject {
  const message: JsonObject = {
    messageId: options.messageId ?? crypto.randomUUID(),
    role: options.role ?? "ROLE_USER",
    parts: [{ text }],
  };
  if (options.taskId) message.taskId = options.taskId;
  if (options.contextId) message.contextId = options.contextId;
  return message;
}
