import type { Command } from "commander";
import {
  type ConnectionFlags,
  clientCommand,
  integer,
  usageExit,
  withClient,
} from "../shared/client-command.js";
import { printJson } from "../shared/output.js";

interface CreateFlags extends ConnectionFlags {
  ttl?: number;
  desc?: string;
}

/** `mq9 mailbox create`. */
export function registerMailbox(program: Command): void {
  const mailbox = program.command("mailbox").description("manage mailboxes").exitOverride(usageExit);
  clientCommand(mailbox.command("create"))
    .description("create a mailbox and print its mail address")
    .argument("[name]", "lowercase letters, digits and dots; omitted: the broker generates one")
    .option("--ttl <seconds>", "the mailbox and its messages expire after this; 0 = never", integer("--ttl"))
    .option("--desc <text>", "free text stored with the mailbox")
    .addHelpText(
      "after",
      `
Examples:
  mq9 mailbox create agent.inbox                 # prints agent.inbox
  mq9 mailbox create --ttl 3600                  # a generated name that lives an hour
  BOX=$(mq9 mailbox create --json | jq -r .mail_address)`,
    )
    .action((name: string | undefined, flags: CreateFlags) =>
      withClient(flags, async (client) => {
        const address = await client.createMailbox({ name, ttlSeconds: flags.ttl, desc: flags.desc });
        if (flags.json) printJson({ mail_address: address });
        else process.stdout.write(`${address}\n`);
      }),
    );
}
