import type { TaskInput } from "@mq9/bridge";
import { connect } from "@mq9/client";
import { type Command, InvalidArgumentError } from "commander";
import { type ConnectionFlags, clientCommand, integer, reportError } from "../../shared/client-command.js";
import { longRunningConnectOptions } from "../../shared/long-running-connection.js";
import { printJson, say } from "../../shared/output.js";

interface ServeFlags extends ConnectionFlags {
  card: string;
  exec: string;
  input: TaskInput;
  mailbox?: string;
  concurrency: number;
  taskTimeout: number;
  ttl: number;
}

function inputMode(raw: string): TaskInput {
  if (raw !== "stdin" && raw !== "arg")
    throw new InvalidArgumentError(`--input is stdin or arg, got '${raw}'`);
  return raw;
}

/** `mq9 agent serve`: a command-line agent as an A2A agent on a mailbox (the bridge). */
export function registerAgentServe(agent: Command): void {
  clientCommand(agent.command("serve"))
    .description("serve a command-line agent as an A2A agent: one process per task, output streamed back")
    .requiredOption("--card <file>", "the agent's A2A card (YAML or JSON): name, description, skills")
    .requiredOption("--exec <command>", "shell command run per task, e.g. 'hermes chat -q' or 'claude -p'")
    .option("--input <mode>", "how the task text reaches the command: stdin or arg", inputMode, "stdin")
    .option("--mailbox <mail_address>", "inbox (default: the card's name, lowercased, words joined by dots)")
    .option(
      "--concurrency <n>",
      "processes at once; more tasks wait in the mailbox",
      integer("--concurrency", 1),
      1,
    )
    .option(
      "--task-timeout <seconds>",
      "kill a task's process after this long",
      integer("--task-timeout", 1),
      600,
    )
    .option(
      "--ttl <seconds>",
      "registry entry expires this long after the last heartbeat",
      integer("--ttl", 0),
      90,
    )
    .addHelpText(
      "after",
      `
Examples:
  mq9 agent serve --card coder.yaml --exec 'hermes chat -q' --input arg
  mq9 agent serve --card reviewer.yaml --exec 'claude -p' --concurrency 2 --task-timeout 900
  mq9 agent serve --card echo.yaml --exec 'tr a-z A-Z'

stdout lines become artifact chunks; a non-zero exit fails the task with stderr; a last
line starting with [INPUT_REQUIRED] asks the caller a question. SIGTERM unregisters the
agent and lets running tasks finish; tasks sent while it is down wait in its mailbox.`,
    )
    .action(async (flags: ServeFlags) => {
      // The bridge (and the A2A SDK under it) loads when an agent is served, not for every agent command.
      const { readCardFile, startBridge } = await import("@mq9/bridge");
      let card: ReturnType<typeof readCardFile>;
      try {
        card = readCardFile(flags.card);
      } catch (err) {
        say((err as Error).message);
        process.exit(2);
      }
      try {
        const client = await connect(
          flags.server,
          longRunningConnectOptions(flags, `mq9-agent-${card.name}`),
        );
        const bridge = await startBridge(client, {
          card,
          command: flags.exec,
          input: flags.input,
          mailbox: flags.mailbox,
          concurrency: flags.concurrency,
          timeoutMs: flags.taskTimeout * 1000,
          ttl: flags.ttl,
          onError: (err) => say(err.message, "mq9 agent"),
        });
        const ready = { serving: card.name, mailbox: bridge.agent.mailbox, concurrency: flags.concurrency };
        if (flags.json) printJson(ready);
        else process.stdout.write(`serving ${card.name} on mailbox ${bridge.agent.mailbox}\n`);
        let stopping = false;
        const stop = (signal: string) => {
          if (stopping) process.exit(130);
          stopping = true;
          say(`${signal}: unregistering, letting running tasks finish`, "mq9 agent");
          void bridge
            .stop()
            .then(() => client.close())
            .then(() => process.exit(0));
        };
        process.on("SIGTERM", () => stop("SIGTERM"));
        process.on("SIGINT", () => stop("SIGINT"));
      } catch (err) {
        process.exit(reportError(err, flags.json));
      }
    });
}
