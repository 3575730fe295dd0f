import type { Command } from "commander";
import { type ConnectionFlags, clientCommand, integer, withClient } from "../shared/client-command.js";
import { printJson } from "../shared/output.js";

/** `mq9 delete`. */
export function registerDelete(program: Command): void {
  clientCommand(program.command("delete"))
    .description("delete one message from a mailbox")
    .argument("<mailbox>", "mail address or mq9://host/mail_address")
    .argument("<msg_id>", "the message to delete", integer("msg_id"))
    .addHelpText(
      "after",
      `
Examples:
  mq9 delete agent.inbox 42`,
    )
    .action((mailbox: string, msgId: number, flags: ConnectionFlags) =>
      withClient(flags, async (client) => {
        const deleted = await client.delete(mailbox, msgId);
        if (flags.json) printJson({ deleted, msg_id: msgId });
        else process.stdout.write(`deleted msg_id ${msgId} from ${mailbox}\n`);
      }),
    );
}
