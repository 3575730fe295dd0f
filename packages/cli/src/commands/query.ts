import type { Command } from "commander";
import { type ConnectionFlags, clientCommand, integer, withClient } from "../shared/client-command.js";
import { messageRecord, printJson, printMessages } from "../shared/output.js";

interface QueryFlags extends ConnectionFlags {
  key?: string;
  tags?: string;
  since?: number;
  limit?: number;
}

/** `mq9 query`. */
export function registerQuery(program: Command): void {
  clientCommand(program.command("query"))
    .description("read messages without consuming them (filters intersect)")
    .argument("<mailbox>", "mail address or mq9://host/mail_address")
    .option("-k, --key <key>", "the latest message with this compaction key")
    .option("-t, --tags <tags>", "messages carrying any of these comma-separated tags")
    .option("--since <unix_seconds>", "messages stored after this time", integer("--since"))
    .option("-n, --limit <n>", "the most recent n (default and max 100)", integer("--limit"))
    .addHelpText(
      "after",
      `
Examples:
  mq9 query status.board --key status.build
  mq9 query agent.inbox --tags billing --limit 10 --json`,
    )
    .action((mailbox: string, flags: QueryFlags) =>
      withClient(flags, async (client) => {
        const messages = await client.query(mailbox, {
          key: flags.key,
          tags: flags.tags
            ?.split(",")
            .map((t) => t.trim())
            .filter(Boolean),
          since: flags.since,
          limit: flags.limit,
        });
        if (flags.json) for (const m of messages) printJson(messageRecord(m));
        else printMessages(messages);
      }),
    );
}
