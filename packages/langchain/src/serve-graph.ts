import { serveTextAgent, type TextAgentOptions } from "@mq9/agent/a2a";
import type { Mq9Client } from "@mq9/client";
import type { A2AAgent } from "@mq9/client/a2a";

/** The part of a compiled LangGraph graph (or any LangChain runnable) that is served. */
export interface InvocableGraph {
  invoke(
    input: unknown,
    config?: { configurable?: Record<string, unknown>; signal?: AbortSignal },
  ): Promise<unknown>;
  /** Set when the graph was compiled with one: it keeps each thread's messages itself. */
  checkpointer?: unknown;
}

/** Options of `serveGraph`. */
export interface ServeGraphOptions extends Omit<TextAgentOptions, "answer"> {
  /** Its state key for the conversation (default `messages`, as `MessagesAnnotation`). */
  messagesKey?: string;
}

type Message = { role: "user" | "assistant"; content: string };

/** The text of a LangChain message's content: a string, or the text blocks of a list. */
function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((block) => (typeof block === "string" ? block : block?.type === "text" ? String(block.text) : ""))
    .join("");
}

/**
 * Serves a LangGraph graph whose state holds a message list as an A2A agent on an mq9
 * mailbox. Each task invokes the graph with the task's message (and, for a graph without a
 * checkpointer, the task's conversation so far); the text of the last message of the result
 * is the answer. The A2A context id is the graph's `thread_id`, so a checkpointer keeps a
 * conversation across tasks. An `interrupt(question)` in the graph pauses the task
 * (input-required); the caller's follow-up resumes it with `Command({ resume: answer })`,
 * which needs a checkpointer and `@langchain/langgraph`. A failure fails the task; a cancel
 * aborts the run. Registered and heartbeated while the process runs; tasks sent while it is
 * down wait in the mailbox.
 */
export function serveGraph(
  client: Mq9Client,
  graph: InvocableGraph,
  options: ServeGraphOptions,
): Promise<A2AAgent> {
  const key = options.messagesKey ?? "messages";
  return serveTextAgent(client, {
    ...options,
    answer: async ({ text, history, contextId, signal }) => {
      let input: unknown;
      if (graph.checkpointer && history.length > 0) {
        // A follow-up of an input-required task: the answer to the graph's interrupt().
        const { Command } = await import("@langchain/langgraph");
        input = new Command({ resume: text });
      } else {
        const earlier: Message[] = graph.checkpointer
          ? []
          : history.map((m) => ({ role: m.role === "agent" ? "assistant" : "user", content: m.text }));
        input = { [key]: [...earlier, { role: "user", content: text }] };
      }
      const state = (await graph.invoke(input, { configurable: { thread_id: contextId }, signal })) as Record<
        string,
        unknown
      >;
      const interrupts = state?.__interrupt__;
      if (Array.isArray(interrupts) && interrupts.length > 0) {
        const value = (interrupts[0] as { value?: unknown }).value;
        return { question: typeof value === "string" ? value : JSON.stringify(value) };
      }
      const messages = state?.[key];
      if (!Array.isArray(messages) || messages.length === 0) {
        throw new Error(`the graph's result has no '${key}' list; set messagesKey to its message list`);
      }
      return textOf((messages.at(-1) as { content?: unknown }).content);
    },
  });
}
