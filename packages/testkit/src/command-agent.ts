// A command-line agent served with `mq9 agent serve` in a process of its own, as a user runs it:
// the real A2A agent that the framework adapters' tool calls reach.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MQ9_CLI } from "./cli.js";
import { until } from "./eventually.js";

/** Options of `serveCommandAgent`. */
export interface CommandAgentOptions {
  /** The card's name and description. */
  name: string;
  description: string;
  /** The shell command run per task, the task text on its stdin (e.g. `tr a-z A-Z`). */
  exec: string;
}

/** A running `mq9 agent serve`. */
export interface CommandAgent {
  /** Everything the process wrote so far. */
  output(): string;
  /** SIGTERM (it unregisters), then waits for the process to end. */
  stop(): Promise<void>;
}

/** Runs `mq9 agent serve --card … --exec …` against `server`; resolves once it is serving. */
export async function serveCommandAgent(server: string, options: CommandAgentOptions): Promise<CommandAgent> {
  const dir = mkdtempSync(join(tmpdir(), "mq9-command-agent-"));
  const card = join(dir, "card.json");
  writeFileSync(card, JSON.stringify({ name: options.name, description: options.description }));
  const child = spawn(
    process.execPath,
    [MQ9_CLI, "agent", "serve", "--server", server, "--card", card, "--exec", options.exec, "--json"],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  child.stdout.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr.on("data", (chunk) => {
    output += chunk;
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await until("mq9 agent serve to serve", () => {
      if (child.exitCode !== null) throw new Error(`mq9 agent serve exited: ${output}`);
      return output.includes('"serving"');
    });
  } catch (err) {
    child.kill("SIGKILL");
    await stop();
    throw err;
  }
  return { output: () => output, stop };
}
