import { Message, Task } from "@a2a-js/sdk";
import type { AgentExecutor, ExecutionEventBus, RequestContext } from "@a2a-js/sdk/server";
import type { Mq9Client } from "@mq9/client";
import { A2AAgent, type AgentCardJson, partsText, TaskEvents } from "@mq9/client/a2a";

/** One turn of a task, as a function that answers in text sees it. */
export interface TextTurn {
  /** The text of the message that started this turn. */
  text: string;
  /** The task's messages before this one (empty for a new task), oldest first. */
  history: { role: "user" | "agent"; text: string }[];
  taskId: string;
  /** The conversation: tasks sent with the same context id share it (a LangGraph thread, …). */
  contextId: string;
  /** Aborted when the caller cancels the task or the agent stops. */
  signal: AbortSignal;
}

/** What an answer function returns: the answer, or a question that pauses the task (input-required). */
export type TextAnswer = string | { question: string };

/** Answers one turn; a throw fails the task with the error's message. */
export type AnswerFunction = (turn: TextTurn) => Promise<TextAnswer> | TextAnswer;

/** Options of `serveTextAgent`. */
export interface TextAgentOptions {
  /** The agent's A2A card: name, description, skills. */
  card: AgentCardJson | Record<string, unknown>;
  answer: AnswerFunction;
  /** Inbox (default: from the card's name, e.g. `Trip Planner` → trip.planner). */
  mailbox?: string;
  /** Tasks answered at once (default 1); more wait in the mailbox. */
  concurrency?: number;
  /** Registry ttl in seconds (default 90), kept alive by heartbeats while the process runs. */
  ttlSeconds?: number;
  /** How long one task may run before its request is handed out again (default 600 000 ms). */
  leaseMs?: number;
  onError?: (error: Error) => void;
}

const roleOf = (role: unknown): "user" | "agent" =>
  role === "ROLE_AGENT" || role === "agent" ? "agent" : "user";

/**
 * An @a2a-js/sdk AgentExecutor around a function that answers in text: the answer becomes
 * the artifact `result` of a completed task, a `{ question }` pauses it (input-required), a
 * throw fails it with the message, a cancel aborts the turn's signal.
 */
export class TextAgentExecutor implements AgentExecutor {
  private readonly running = new Map<string, AbortController>();

  constructor(private readonly answer: AnswerFunction) {}

  async execute(context: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const events = new TaskEvents(context, bus);
    events.start();
    events.working();
    const text = partsText((Message.toJSON(context.userMessage) as { parts?: unknown }).parts);
    const past = context.task
      ? ((Task.toJSON(context.task) as { history?: { role?: string; parts?: unknown }[] }).history ?? [])
      : [];
    const history = past.map((m) => ({ role: roleOf(m.role), text: partsText(m.parts) }));
    // The task's history ends with the message of this turn: it is `text`, not history.
    if (history.length > 0 && history.at(-1)?.role === "user" && history.at(-1)?.text === text) history.pop();
    const abort = new AbortController();
    this.running.set(context.taskId, abort);
    try {
      const answer = await this.answer({
        text,
        history,
        taskId: context.taskId,
        contextId: context.contextId,
        signal: abort.signal,
      });
      if (abort.signal.aborted) events.canceled("canceled");
      else if (typeof answer === "string") {
        events.artifact(answer);
        events.complete();
      } else events.inputRequired(answer.question);
    } catch (err) {
      if (abort.signal.aborted) events.canceled("canceled");
      else events.fail(err instanceof Error ? err.message : String(err));
    } finally {
      this.running.delete(context.taskId);
    }
    events.finished();
  }

  async cancelTask(taskId: string): Promise<void> {
    this.running.get(taskId)?.abort(new Error("the task was canceled"));
  }
}

/**
 * Serves a function that answers in text as an A2A agent on an mq9 mailbox: its card is
 * registered and heartbeated while the process runs; tasks sent while it is down wait in
 * the mailbox. `stop()` on the result unregisters and lets running tasks finish.
 */
export function serveTextAgent(client: Mq9Client, options: TextAgentOptions): Promise<A2AAgent> {
  return A2AAgent.start(client, {
    card: options.card as AgentCardJson,
    executor: new TextAgentExecutor(options.answer),
    mailbox: options.mailbox,
    concurrency: options.concurrency ?? 1,
    ttlSeconds: options.ttlSeconds,
    leaseMs: options.leaseMs,
    onError: options.onError,
  });
}
