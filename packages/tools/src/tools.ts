import type { FetchOptions, Mq9Client, Mq9Message, Priority } from "@mq9/client";
import { agentInfoOf } from "@mq9/client";
import type { A2AClient } from "@mq9/client/a2a";
import { mailboxFromName, partsText } from "@mq9/client/a2a";
import * as z from "zod";

/** What a tool runs against. */
export interface ToolContext {
  client: Mq9Client;
  a2a: A2AClient;
}

/** One MCP tool: name, what an LLM reads, its arguments and what it does. */
export interface ToolDefinition {
  name: string;
  title: string;
  description: string;
  input: z.ZodObject;
  annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean };
  run(
    args: Record<string, unknown>,
    context: ToolContext,
    signal: AbortSignal,
  ): Promise<Record<string, unknown>>;
}

// Optional arguments are nullish: strict hosts send null, others leave them out.
const optText = (description: string) => z.string().nullish().describe(description);
const optInt = (description: string, min = 0) => z.number().int().min(min).nullish().describe(description);
const mailAddress = z.string().min(1).describe("The mailbox's mail_address, e.g. agents.reviewer.inbox");

/** A message as an LLM wants to read it: text payload, no base64. */
function messageView(message: Mq9Message): Record<string, unknown> {
  const view: Record<string, unknown> = {
    msg_id: message.msgId,
    payload: message.text(),
    priority: message.priority,
    create_time: message.createTime,
  };
  if (message.key !== undefined) view.key = message.key;
  if (message.tags.length > 0) view.tags = message.tags;
  const replyTo = message.headers["mq9-reply-to"];
  if (replyTo) view.reply_to = replyTo;
  return view;
}

/** RobustMQ's `reset_to`: earliest | latest | time:<unix s> | id:<msg_id>; any of them restarts the group. */
function resetTo(value: string | null | undefined): FetchOptions {
  if (value === undefined || value === null || value === "") return { deliver: "earliest" as const };
  if (value === "earliest" || value === "latest") return { deliver: value, forceDeliver: true };
  const [kind, n] = value.split(":");
  const number = Number(n);
  if (kind === "time" && Number.isSafeInteger(number)) {
    return { deliver: "from_time" as const, fromTime: number, forceDeliver: true };
  }
  if (kind === "id" && Number.isSafeInteger(number))
    return { deliver: "from_id" as const, fromId: number, forceDeliver: true };
  throw new Error(`reset_to must be earliest, latest, time:<unix seconds> or id:<msg_id>, got '${value}'`);
}

function shortState(state: unknown): string {
  return typeof state === "string"
    ? state
        .replace(/^TASK_STATE_/, "")
        .toLowerCase()
        .replace(/_/g, "-")
    : "unknown";
}

// biome-ignore lint/suspicious/noExplicitAny: A2A wire JSON, read field by field
type Json = Record<string, any>;

export const TOOLS: ToolDefinition[] = [
  {
    name: "mq9_create_mailbox",
    title: "Create mailbox",
    description:
      "Create a mailbox other agents can send to. Returns its mail_address. Omit name to get a generated one.",
    input: z.strictObject({
      name: optText("Lowercase letters, digits and dots, e.g. team.alice.inbox"),
      ttl: optInt("Seconds until the mailbox expires; 0 or null = never"),
      desc: optText("What the mailbox is for"),
    }),
    async run(args, { client }) {
      const address = await client.createMailbox({
        name: (args.name as string | null) ?? undefined,
        ttlSeconds: (args.ttl as number | null) ?? 0,
        desc: (args.desc as string | null) ?? undefined,
      });
      return { mail_address: address, created: true };
    },
  },
  {
    name: "mq9_send_message",
    title: "Send message",
    description:
      "Send a message to a mailbox; it is stored until read, even if the owner is offline. Returns the msg_id.",
    input: z.strictObject({
      mail_address: mailAddress,
      payload: z.string().describe("The message text (JSON is fine)"),
      priority: z
        .enum(["normal", "urgent", "critical"])
        .nullish()
        .describe("Default normal; critical is read first"),
      key: optText("Compaction key: replaces the previous message with the same key"),
      tags: optText("Comma-separated tags for mq9_query_mailbox"),
      delay: optInt("Seconds before the message becomes visible"),
      ttl: optInt("Seconds until the message expires unread"),
    }),
    async run(args, { client }) {
      const msgId = await client.send(args.mail_address as string, args.payload as string, {
        priority: (args.priority as Priority | null) ?? undefined,
        key: (args.key as string | null) ?? undefined,
        tags:
          typeof args.tags === "string"
            ? args.tags
                .split(",")
                .map((t) => t.trim())
                .filter(Boolean)
            : undefined,
        delaySeconds: (args.delay as number | null) ?? undefined,
        ttlSeconds: (args.ttl as number | null) ?? undefined,
      });
      return { msg_id: msgId, mail_address: args.mail_address };
    },
  },
  {
    name: "mq9_fetch_messages",
    title: "Fetch messages",
    description:
      "Read the next messages of a mailbox (critical first). With group_name the group remembers what it read; ack with mq9_ack_message.",
    input: z.strictObject({
      mail_address: mailAddress,
      group_name: optText("Consumer group; null = read without a group"),
      reset_to: optText("Restart the group: earliest, latest, time:<unix seconds> or id:<msg_id>"),
      max_messages: optInt("At most this many (default 10)", 1),
      max_wait_ms: optInt("Wait this long when there is nothing (default 0)"),
    }),
    annotations: { readOnlyHint: false },
    async run(args, { client }) {
      const messages = await client.fetch(args.mail_address as string, {
        group: (args.group_name as string | null) ?? undefined,
        ...resetTo(args.reset_to as string | null | undefined),
        batch: (args.max_messages as number | null) ?? 10,
        maxWaitMs: (args.max_wait_ms as number | null) ?? 0,
      });
      return { messages: messages.map(messageView) };
    },
  },
  {
    name: "mq9_ack_message",
    title: "Acknowledge message",
    description:
      "Mark a fetched message (and those fetched before it in the same batch) as done for a group.",
    input: z.strictObject({
      mail_address: mailAddress,
      group_name: z.string().min(1).describe("The group that fetched it"),
      msg_id: z.number().int().min(0).describe("The msg_id to acknowledge"),
    }),
    async run(args, { client }) {
      await client.ack(args.mail_address as string, args.group_name as string, args.msg_id as number);
      return { msg_id: args.msg_id, acked: true };
    },
  },
  {
    name: "mq9_query_mailbox",
    title: "Query mailbox",
    description: "Look at messages without consuming them: by key, tags or time. Oldest first.",
    input: z.strictObject({
      mail_address: mailAddress,
      key: optText("The latest message with this key"),
      tags: z.array(z.string()).nullish().describe("Messages carrying any of these tags"),
      since: optInt("Only messages after this unix time (seconds)"),
      limit: optInt("At most this many (default 20, max 100)", 1),
    }),
    annotations: { readOnlyHint: true },
    async run(args, { client }) {
      const messages = await client.query(args.mail_address as string, {
        key: (args.key as string | null) ?? undefined,
        tags: (args.tags as string[] | null) ?? undefined,
        since: (args.since as number | null) ?? undefined,
        limit: (args.limit as number | null) ?? 20,
      });
      return { messages: messages.map(messageView) };
    },
  },
  {
    name: "mq9_delete_message",
    title: "Delete message",
    description: "Delete one message from a mailbox by msg_id.",
    input: z.strictObject({
      mail_address: mailAddress,
      msg_id: z.number().int().min(0).describe("The msg_id"),
    }),
    annotations: { destructiveHint: true, idempotentHint: true },
    async run(args, { client }) {
      const deleted = await client.delete(args.mail_address as string, args.msg_id as number);
      return { msg_id: args.msg_id, deleted };
    },
  },
  {
    name: "mq9_register_agent",
    title: "Register agent",
    description:
      "Put an agent in the registry so others can discover it. payload says what it does, in prose or as an A2A card JSON.",
    input: z.strictObject({
      name: z.string().min(1).describe("Agent name"),
      payload: z.string().min(1).describe("What the agent does (prose), or its A2A AgentCard as JSON"),
      mail_address: optText(
        "Where it reads its mail (default: made from the name, e.g. 'Python Coder' → python.coder)",
      ),
      ttl: optInt("Seconds it stays discoverable without a heartbeat; 0 or null = forever"),
    }),
    async run(args, { client }) {
      const body: Record<string, unknown> = {
        name: args.name,
        // The broker accepts only mail addresses as mailbox: a name like "Python Coder" becomes one.
        mailbox: (args.mail_address as string | null) ?? mailboxFromName(args.name as string),
        payload: args.payload,
      };
      if (typeof args.ttl === "number") body.ttl = args.ttl;
      await client.register(body);
      return { name: args.name, registered: true };
    },
  },
  {
    name: "mq9_discover_agents",
    title: "Discover agents",
    description:
      "Find agents: by meaning (semantic, e.g. 'an agent that can write Python'), by keywords (text), or all of them.",
    input: z.strictObject({
      text: optText("Keywords"),
      semantic: optText("What you need, in plain language"),
      limit: optInt("At most this many (default 20)", 1),
      page: optInt("Page, from 1", 1),
      kind: z
        .enum(["agent", "mcp-server", "all"])
        .nullish()
        .describe("What to find: agents (default), MCP servers (reached by url, not by mail), or all"),
    }),
    annotations: { readOnlyHint: true },
    async run(args, { client }) {
      const query: Record<string, unknown> = {};
      for (const field of ["text", "semantic", "limit", "page"]) {
        if (args[field] !== undefined && args[field] !== null) query[field] = args[field];
      }
      if (args.kind === "all") query.kind = ["agent", "mcp-server"];
      else if (typeof args.kind === "string") query.kind = args.kind;
      const agents = await client.discover(query);
      return {
        agents: agents.map((agent) => {
          if (agent.kind === "mcp-server") {
            // An MCP server: connect to its url; its tools say what it offers.
            const card = (agent.server_card ?? undefined) as Json | undefined;
            const tools = Array.isArray(card?.tools) ? card.tools : [];
            return {
              name: agent.name,
              kind: "mcp-server",
              url: agent.url,
              description: agent.description ?? card?.description,
              tools: tools.map((tool: Json) => ({ name: tool.name, description: tool.description })),
            };
          }
          const card = (agent.agent_card ?? undefined) as Json | undefined;
          const view: Record<string, unknown> = {
            name: agent.name,
            mailbox: agent.mailbox,
            description: card?.description ?? agent.payload ?? agent.description ?? agentInfoOf(agent),
            a2a: card !== undefined,
          };
          if (Array.isArray(card?.skills)) {
            view.skills = card.skills.map((s: Json) => ({
              name: s.name,
              description: s.description,
              tags: s.tags,
            }));
          }
          return view;
        }),
      };
    },
  },
  {
    name: "mq9_unregister_agent",
    title: "Unregister agent",
    description: "Remove an agent from the registry by name.",
    input: z.strictObject({ name: z.string().min(1).describe("Agent name") }),
    annotations: { destructiveHint: true, idempotentHint: true },
    async run(args, { client }) {
      await client.unregister({ name: args.name as string });
      return { name: args.name, unregistered: true };
    },
  },
  {
    name: "mq9_call_agent",
    title: "Call agent (A2A)",
    description:
      "Give a task to an A2A agent found with mq9_discover_agents and wait for its answer (text and artifacts). If it asks a question (state input-required), answer by calling again with task_id.",
    input: z.strictObject({
      agent: z.string().min(1).describe("The agent's name or mailbox"),
      message: z.string().min(1).describe("The task, in plain language"),
      task_id: optText("Continue this task (answer the agent's question)"),
      context_id: optText("Conversation the task belongs to"),
      timeout_seconds: optInt("Wait at most this long (default 120, max 900)", 1),
    }),
    async run(args, { a2a }, signal) {
      const timeoutMs = Math.min((args.timeout_seconds as number | null) ?? 120, 900) * 1000;
      let task: Json | undefined;
      let message: Json | undefined;
      try {
        for await (const event of a2a.stream(args.agent as string, args.message as string, {
          taskId: (args.task_id as string | null) ?? undefined,
          contextId: (args.context_id as string | null) ?? undefined,
          timeoutMs,
          signal,
        })) {
          if (event.task) task = event.task as Json;
          if (event.message) message = event.message as Json;
          if (event.statusUpdate && task) task = { ...task, status: (event.statusUpdate as Json).status };
        }
      } catch (err) {
        if (task && (err as { code?: string }).code === "TIMEOUT") {
          throw new Error(
            `${args.agent} is still working on task ${task.id} after ${timeoutMs / 1000} s; call mq9_call_agent later with task_id to check, or raise timeout_seconds`,
          );
        }
        throw err;
      }
      if (message)
        return { agent: args.agent, state: "completed", text: partsText(message.parts), artifacts: [] };
      if (!task) throw new Error(`${args.agent} returned no task`);
      return {
        agent: args.agent,
        task_id: task.id,
        context_id: task.contextId,
        state: shortState(task.status?.state),
        text: partsText(task.status?.message?.parts),
        artifacts: ((task.artifacts ?? []) as Json[]).map((artifact) => ({
          name: artifact.name || artifact.artifactId,
          text: ((artifact.parts ?? []) as Json[])
            .map((p) => (typeof p.text === "string" ? p.text : ""))
            .join(""),
        })),
      };
    },
  },
  {
    name: "mq9_wait",
    title: "Wait for messages",
    description:
      "Block until a mailbox has new messages or the timeout passes, then return them. Use it to wait for replies.",
    input: z.strictObject({
      mail_address: mailAddress,
      group_name: optText("Consumer group (default mcp.wait); it remembers what was already returned"),
      timeout_seconds: optInt("Wait at most this long (default 30, max 300)", 1),
      max_messages: optInt("At most this many (default 10)", 1),
    }),
    async run(args, { client }, signal) {
      const deadline = Date.now() + Math.min((args.timeout_seconds as number | null) ?? 30, 300) * 1000;
      const group = (args.group_name as string | null) ?? "mcp.wait";
      for (;;) {
        const remaining = deadline - Date.now();
        const messages = await client.fetch(args.mail_address as string, {
          group,
          deliver: "earliest",
          batch: (args.max_messages as number | null) ?? 10,
          maxWaitMs: Math.max(0, Math.min(remaining, 25_000)),
        });
        if (messages.length > 0) {
          // Returned to the model means handled: the group moves past them.
          await client.ack(args.mail_address as string, group, messages[messages.length - 1].msgId);
          return { messages: messages.map(messageView), timed_out: false };
        }
        if (Date.now() >= deadline || signal.aborted) return { messages: [], timed_out: true };
      }
    },
  },
];
