import type { ConsumedMessage } from "@mq9/client";
import type { Command } from "commander";
import { type ConnectionFlags, clientCommand, integer, withClient } from "../shared/client-command.js";
import { isoTime, messageRecord, payloadCell, printJson, say } from "../shared/output.js";
import { withStartOptions } from "../shared/start-options.js";

interface ConsumeFlags extends ConnectionFlags {
  group?: string;
  deliver?: "earliest" | "latest" | "from_time" | "from_id";
  fromId?: number;
  fromTime?: number;
  batch?: number;
  waitMs?: number;
  leaseMs?: number;
  ack: boolean;
  count?: number;
}

function printLine(message: ConsumedMessage): void {
  const key = message.key === undefined ? "" : ` key=${message.key}`;
  const tags = message.tags.length === 0 ? "" : ` tags=${message.tags.join(",")}`;
  process.stdout.write(
    `${isoTime(message.createTime)}  #${message.msgId}  ${message.priority}${key}${tags}  ${payloadCell(message)}\n`,
  );
}

/** `mq9 consume`. */
export function registerConsume(program: Command): void {
  withStartOptions(
    clientCommand(program.command("consume"))
      .description("print messages as they arrive (long-poll), ACKing each after it is printed")
      .argument("<mailbox>", "mail address or mq9://host/mail_address")
      .option("-g, --group <name>", "consumer group (shares work, ACKs); omitted: a stateless tail"),
  )
    .option("-n, --batch <n>", "messages per FETCH (default 10)", integer("--batch", 1))
    .option("-w, --wait-ms <ms>", "long-poll of each FETCH (default 2000)", integer("--wait-ms"))
    .option("--lease-ms <ms>", "lease of fetched messages in the group", integer("--lease-ms", 1))
    .option("--no-ack", "do not ACK (messages come back after their lease)")
    .option("-c, --count <n>", "exit after n messages", integer("--count", 1))
    .addHelpText(
      "after",
      `
Runs until Ctrl-C (or --count messages), reconnecting if the broker goes away.

Examples:
  mq9 consume agent.inbox --group workers --deliver earliest
  mq9 consume agent.inbox --group workers --count 1 --json | jq -r .payload
  mq9 consume agent.inbox                       # watch new messages, no group, no ACK`,
    )
    .action((mailbox: string, flags: ConsumeFlags) =>
      withClient(
        flags,
        async (client) => {
          let deliver = flags.deliver;
          if (flags.fromId !== undefined) deliver ??= "from_id";
          if (flags.fromTime !== undefined) deliver ??= "from_time";
          let printed = 0;
          const consumer = client.consume(
            mailbox,
            (message) => {
              if (flags.json) printJson(messageRecord(message));
              else printLine(message);
              printed++;
              if (flags.count !== undefined && printed >= flags.count) void consumer.stop();
            },
            {
              group: flags.group,
              deliver,
              fromId: flags.fromId,
              fromTime: flags.fromTime,
              // With --count, fetch one at a time so that no extra message is left leased.
              batch: flags.count === undefined ? flags.batch : 1,
              maxWaitMs: flags.waitMs,
              leaseMs: flags.leaseMs,
              autoAck: flags.ack,
              onError: (error) => say(error.message),
            },
          );
          const stop = () => void consumer.stop();
          process.once("SIGINT", stop);
          process.once("SIGTERM", stop);
          const failure = await consumer.closed();
          process.off("SIGINT", stop);
          process.off("SIGTERM", stop);
          if (failure) throw failure;
        },
        { reconnect: true },
      ),
    );
}
