import type { Command } from "commander";
import { type ConnectionFlags, clientCommand, integer, withClient } from "../shared/client-command.js";
import { printJson } from "../shared/output.js";

interface AckFlags extends ConnectionFlags {
  group: string;
}

/** `mq9 ack`. */
export function registerAck(program: Command): void {
  clientCommand(program.command("ack"))
    .description("acknowledge a message for a group, and those fetched before it in the same batch")
    .argument("<mailbox>", "mail address or mq9://host/mail_address")
    .argument("<msg_id>", "the message to acknowledge", integer("msg_id"))
    .requiredOption("-g, --group <name>", "consumer group that fetched it")
    .addHelpText(
      "after",
      `
Examples:
  mq9 ack agent.inbox 42 --group workers     # also ACKs what came before 42 in its batch`,
    )
    .action((mailbox: string, msgId: number, flags: AckFlags) =>
      withClient(flags, async (client) => {
        await client.ack(mailbox, flags.group, msgId);
        if (flags.json) printJson({ acked: true, msg_id: msgId, group: flags.group });
        else process.stdout.write(`acked msg_id ${msgId} for group ${flags.group}\n`);
      }),
    );
}
