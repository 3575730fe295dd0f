import type { Mq9Client } from "@mq9/client";
import { A2AAgent, type AgentCardJson } from "@mq9/client/a2a";
import { CommandExecutor, type CommandExecutorOptions } from "./command-executor.js";

/** Options of `startBridge`. */
export interface BridgeOptions extends CommandExecutorOptions {
  card: AgentCardJson;
  /** Inbox (default: from the card's name). */
  mailbox?: string;
  /** Processes at once (default 1); more tasks wait in the mailbox. */
  concurrency?: number;
  /** Registry ttl in seconds (default 90). */
  ttl?: number;
  onError?: (error: Error) => void;
}

/** A command-line agent served as an A2A agent. */
export interface Bridge {
  agent: A2AAgent;
  executor: CommandExecutor;
  /** Unregisters, stops taking tasks and waits for running ones. */
  stop(): Promise<void>;
}

/** Registers the card and serves tasks by running the command, one process per task. */
export async function startBridge(client: Mq9Client, options: BridgeOptions): Promise<Bridge> {
  const executor = new CommandExecutor(options);
  const concurrency = options.concurrency ?? 1;
  const agent = await A2AAgent.start(client, {
    card: options.card,
    executor,
    mailbox: options.mailbox,
    concurrency,
    ttlSeconds: options.ttl,
    // A task may hold its request until its process is killed, plus a margin.
    leaseMs: (options.timeoutMs ?? 600_000) + 60_000,
    onError: options.onError,
  });
  return { agent, executor, stop: () => agent.stop() };
}
