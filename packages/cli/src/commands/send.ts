import { PRIORITIES, type Priority } from "@mq9/protocol";
import { type Command, InvalidArgumentError, Option } from "commander";
import { type ConnectionFlags, clientCommand, integer, withClient } from "../shared/client-command.js";
import { printJson } from "../shared/output.js";
import { readPayload } from "../shared/payload-input.js";

interface SendFlags extends ConnectionFlags {
  file?: string;
  priority?: Priority;
  key?: string;
  delay?: number;
  ttl?: number;
  tags?: string;
  header: Record<string, string>;
}

function collectHeader(raw: string, previous: Record<string, string>): Record<string, string> {
  const eq = raw.indexOf("=");
  if (eq <= 0) throw new InvalidArgumentError(`--header must be name=value, got '${raw}'`);
  return { ...previous, [raw.slice(0, eq).trim()]: raw.slice(eq + 1) };
}

/** `mq9 send`. */
export function registerSend(program: Command): void {
  clientCommand(program.command("send"))
    .description("send a message to a mailbox; prints its msg_id once the broker has stored it")
    .argument("<mailbox>", "mail address or mq9://host/mail_address")
    .argument("[payload]", "message text; omitted or '-': read stdin")
    .option("-f, --file <path>", "read the payload from a file ('-' = stdin)")
    .addOption(new Option("-p, --priority <priority>", "delivery class").choices(PRIORITIES))
    .option("-k, --key <key>", "compaction key: replaces the previous message with this key")
    .option("--delay <seconds>", "deliver after this many seconds", integer("--delay"))
    .option("--ttl <seconds>", "expire unread after this many seconds", integer("--ttl"))
    .option("-t, --tags <tags>", "comma-separated tags for query --tags")
    .option(
      "-H, --header <name=value>",
      "extra header, repeatable (e.g. mq9-reply-to=my.inbox)",
      collectHeader,
      {},
    )
    .addHelpText(
      "after",
      `
Examples:
  mq9 send agent.inbox "summarise the report"
  mq9 send agent.inbox '{"task":"translate","text":"hi"}' --priority urgent
  mq9 send status.board "green" --key status.build --ttl 600
  mq9 send agent.inbox --file task.json --tags billing,eu
  echo "ping" | mq9 send mq9://localhost/agent.inbox
  mq9 send agent.inbox "wake up" --delay 60        # msg_id -1: assigned when due`,
    )
    .action((mailbox: string, payload: string | undefined, flags: SendFlags) =>
      withClient(flags, async (client) => {
        const bytes = await readPayload(payload, flags.file);
        const headers = Object.keys(flags.header).length > 0 ? flags.header : undefined;
        const msgId = await client.send(mailbox, bytes, {
          priority: flags.priority,
          key: flags.key,
          delaySeconds: flags.delay,
          ttlSeconds: flags.ttl,
          tags: flags.tags
            ?.split(",")
            .map((t) => t.trim())
            .filter(Boolean),
          headers,
        });
        if (flags.json) printJson({ mail_address: mailbox, msg_id: msgId });
        else if (msgId === -1)
          process.stdout.write(`delayed: stored for ${mailbox}, msg_id assigned when due\n`);
        else process.stdout.write(`sent msg_id ${msgId} to ${mailbox}\n`);
      }),
    );
}
