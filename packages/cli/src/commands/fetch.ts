import type { Command } from "commander";
import {
  type ConnectionFlags,
  clientCommand,
  integer,
  UsageError,
  withClient,
} from "../shared/client-command.js";
import { messageRecord, printJson, printMessages } from "../shared/output.js";
import { withStartOptions } from "../shared/start-options.js";

interface FetchFlags extends ConnectionFlags {
  group?: string;
  deliver?: "earliest" | "latest" | "from_time" | "from_id";
  fromId?: number;
  fromTime?: number;
  force?: boolean;
  batch?: number;
  waitMs?: number;
  leaseMs?: number;
  ack?: boolean;
}

/** `mq9 fetch`. */
export function registerFetch(program: Command): void {
  withStartOptions(
    clientCommand(program.command("fetch"))
      .description("fetch the next messages (critical, then urgent, then normal)")
      .argument("<mailbox>", "mail address or mq9://host/mail_address")
      .option("-g, --group <name>", "consumer group (stored position, leases); omitted: stateless"),
  )
    .option("--force", "restart an existing group from --deliver")
    .option("-n, --batch <n>", "most messages to return (broker default 100)", integer("--batch", 1))
    .option(
      "-w, --wait-ms <ms>",
      "wait this long for a first message (broker default 500)",
      integer("--wait-ms"),
    )
    .option("--lease-ms <ms>", "lease of the fetched messages in the group", integer("--lease-ms", 1))
    .option("--ack", "ACK the fetched batch (needs --group)")
    .addHelpText(
      "after",
      `
Examples:
  mq9 fetch agent.inbox --group workers --deliver earliest
  mq9 fetch agent.inbox --group workers --batch 1 --ack       # take one message
  mq9 fetch agent.inbox --deliver earliest --json | jq -r .payload`,
    )
    .action((mailbox: string, flags: FetchFlags) =>
      withClient(flags, async (client) => {
        if (flags.ack && !flags.group) throw new UsageError("--ack needs --group");
        let deliver = flags.deliver;
        if (flags.fromId !== undefined) deliver ??= "from_id";
        if (flags.fromTime !== undefined) deliver ??= "from_time";
        const messages = await client.fetch(mailbox, {
          group: flags.group,
          deliver,
          fromId: flags.fromId,
          fromTime: flags.fromTime,
          forceDeliver: flags.force,
          batch: flags.batch,
          maxWaitMs: flags.waitMs,
          leaseMs: flags.leaseMs,
        });
        if (flags.json) for (const m of messages) printJson(messageRecord(m));
        else printMessages(messages);
        // One ACK of the last message covers the whole batch.
        if (flags.ack && flags.group && messages.length > 0) {
          await client.ack(mailbox, flags.group, messages[messages.length - 1].msgId);
        }
      }),
    );
}
