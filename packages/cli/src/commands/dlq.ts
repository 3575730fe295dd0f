import { type Mq9Client, Mq9Error, type Mq9Message } from "@mq9/client";
import { Headers } from "@mq9/protocol";
import type { Command } from "commander";
import {
  type ConnectionFlags,
  clientCommand,
  integer,
  UsageError,
  usageExit,
  withClient,
} from "../shared/client-command.js";
import { cell, messageRecord, payloadCell, printJson, printTable } from "../shared/output.js";
import { timeCell } from "./inspect/inspection-output.js";

/** The mailbox a mailbox's dead letters go to: what MAILBOX.INFO says, else `<mailbox>.dlq`. */
async function deadLetterMailbox(client: Mq9Client, mailbox: string): Promise<string> {
  try {
    return (await client.mailboxInfo(mailbox)).mailbox.dead_letter ?? `${mailbox}.dlq`;
  } catch (err) {
    // A broker without MAILBOX.INFO: the default name.
    if (err instanceof Mq9Error && err.code === "UNKNOWN_SUBJECT") return `${mailbox}.dlq`;
    throw err;
  }
}

/** The dead letters of a mailbox, oldest first; none when its dead-letter mailbox was never made. */
async function deadLetters(client: Mq9Client, dlq: string, limit: number): Promise<Mq9Message[]> {
  try {
    return await client.query(dlq, { limit });
  } catch (err) {
    if (err instanceof Mq9Error && err.code === "MAILBOX_NOT_FOUND") return [];
    throw err;
  }
}

function letterRecord(letter: Mq9Message): Record<string, unknown> {
  const h = letter.headers;
  return {
    ...messageRecord(letter),
    from_mailbox: h[Headers.dlqMailbox] ?? null,
    from_group: h[Headers.dlqGroup] ?? null,
    from_msg_id: h[Headers.dlqMsgId] === undefined ? null : Number(h[Headers.dlqMsgId]),
    delivery_count: h[Headers.dlqDeliveryCount] === undefined ? null : Number(h[Headers.dlqDeliveryCount]),
    // A letter the orchestrator's bus wrote itself says why in its own header.
    reason: h[Headers.dlqReason] ?? h["mq9-dead-reason"] ?? null,
    dead_at: h[Headers.dlqTime] === undefined ? null : Number(h[Headers.dlqTime]) * 1000,
  };
}

/** `mq9 dlq ls|retry|purge`: a mailbox's dead letters. */
export function registerDlq(program: Command): void {
  const dlq = program
    .command("dlq")
    .description(
      "the dead letters of a mailbox: messages its groups gave up on (max_deliver, or a terminal NAK)",
    )
    .exitOverride(usageExit);

  clientCommand(dlq.command("ls"))
    .description("list a mailbox's dead letters: where each failed, how often, and why")
    .argument("<mailbox>", "the mailbox whose dead letters to list")
    .option("-n, --limit <n>", "the most recent n (default and max 100)", integer("--limit", 1), 100)
    .addHelpText(
      "after",
      `
Examples:
  mq9 dlq ls jobs
  mq9 dlq ls jobs --json | jq -r .reason`,
    )
    .action((mailbox: string, flags: ConnectionFlags & { limit: number }) =>
      withClient(flags, async (client) => {
        const letters = await deadLetters(client, await deadLetterMailbox(client, mailbox), flags.limit);
        if (flags.json) {
          for (const letter of letters) printJson(letterRecord(letter));
          return;
        }
        if (letters.length === 0) {
          process.stdout.write("(no dead letters)\n");
          return;
        }
        printTable(
          ["MSG_ID", "FROM", "GROUP", "DELIVERIES", "DEAD AT", "REASON", "PAYLOAD"],
          letters.map((letter) => {
            const r = letterRecord(letter);
            return [
              String(letter.msgId),
              `${r.from_mailbox ?? "?"}#${r.from_msg_id ?? "?"}`,
              String(r.from_group ?? "-"),
              String(r.delivery_count ?? "-"),
              timeCell(r.dead_at as number | null),
              cell(String(r.reason ?? "-"), 40),
              payloadCell(letter),
            ];
          }),
        );
      }),
    );

  clientCommand(dlq.command("retry"))
    .description("send dead letters back to their mailbox, as new messages: one (--id) or all (--all)")
    .argument("<mailbox>", "the mailbox whose dead letters to send back")
    .option("--id <msg_id>", "this dead letter (its MSG_ID in `mq9 dlq ls`)", integer("--id"))
    .option("--all", "every dead letter")
    .addHelpText(
      "after",
      `
Examples:
  mq9 dlq retry jobs --id 4
  mq9 dlq retry jobs --all`,
    )
    .action((mailbox: string, flags: ConnectionFlags & { id?: number; all?: boolean }) =>
      withClient(flags, async (client) => {
        if ((flags.id === undefined) === !flags.all)
          throw new UsageError("give exactly one of --id <msg_id> and --all");
        const target = await deadLetterMailbox(client, mailbox);
        let retried = 0;
        try {
          retried = await client.retryDeadLetters(target, flags.id);
        } catch (err) {
          // No dead-letter mailbox yet: nothing to send back, unless one was named.
          if (!(flags.all && err instanceof Mq9Error && err.code === "MAILBOX_NOT_FOUND")) throw err;
        }
        if (flags.json) printJson({ retried });
        else
          process.stdout.write(`sent ${retried} dead letter${retried === 1 ? "" : "s"} back to ${mailbox}\n`);
      }),
    );

  clientCommand(dlq.command("purge"))
    .description("delete every dead letter of a mailbox")
    .argument("<mailbox>", "the mailbox whose dead letters to delete")
    .option("-y, --yes", "needed: every dead letter goes")
    .action((mailbox: string, flags: ConnectionFlags & { yes?: boolean }) =>
      withClient(flags, async (client) => {
        if (!flags.yes) throw new UsageError(`this deletes every dead letter of ${mailbox}: add --yes`);
        const target = await deadLetterMailbox(client, mailbox);
        let purged = 0;
        try {
          purged = await client.purgeMailbox(target);
        } catch (err) {
          if (!(err instanceof Mq9Error && err.code === "MAILBOX_NOT_FOUND")) throw err;
        }
        if (flags.json) printJson({ purged });
        else process.stdout.write(`deleted ${purged} dead letter${purged === 1 ? "" : "s"} of ${mailbox}\n`);
      }),
    );
}
