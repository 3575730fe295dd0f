import { isPriority, type Priority } from "@mq9/protocol";
import { type Command, InvalidArgumentError } from "commander";
import {
  type ConnectionFlags,
  clientCommand,
  integer,
  UsageError,
  usageExit,
  withClient,
} from "../shared/client-command.js";
import { messageRecord, printJson, printMessages } from "../shared/output.js";
import { printGroupTable, printMailboxFields, printMailboxTable } from "./inspect/inspection-output.js";

interface CreateFlags extends ConnectionFlags {
  ttl?: number;
  desc?: string;
  maxDeliver?: number;
  deadLetter?: string;
}

interface ListFlags extends ConnectionFlags {
  limit?: number;
}

interface PeekFlags extends ConnectionFlags {
  limit?: number;
  fromId?: number;
}

interface PurgeFlags extends ConnectionFlags {
  key?: string;
  tag?: string;
  priority?: Priority;
  olderThan?: number;
  yes?: boolean;
}

function priority(raw: string): Priority {
  if (!isPriority(raw))
    throw new InvalidArgumentError(`--priority must be critical, urgent or normal, got '${raw}'`);
  return raw;
}

/** `mq9 mailbox create|ls|info|peek|purge|rm`. */
export function registerMailbox(program: Command): void {
  const mailbox = program.command("mailbox").description("manage mailboxes").exitOverride(usageExit);
  clientCommand(mailbox.command("create"))
    .description("create a mailbox and print its mail address")
    .argument("[name]", "lowercase letters, digits and dots; omitted: the broker generates one")
    .option("--ttl <seconds>", "the mailbox and its messages expire after this; 0 = never", integer("--ttl"))
    .option("--desc <text>", "free text stored with the mailbox")
    .option(
      "--max-deliver <n>",
      "deliveries of a message before it goes to the dead-letter mailbox (its groups' default; 0 = no limit)",
      integer("--max-deliver"),
    )
    .option("--dead-letter <mailbox>", "where dead letters go (default <name>.dlq)")
    .addHelpText(
      "after",
      `
Examples:
  mq9 mailbox create agent.inbox                 # prints agent.inbox
  mq9 mailbox create jobs --max-deliver 5        # a job failing 5 times goes to jobs.dlq
  mq9 mailbox create --ttl 3600                  # a generated name that lives an hour
  BOX=$(mq9 mailbox create --json | jq -r .mail_address)`,
    )
    .action((name: string | undefined, flags: CreateFlags) =>
      withClient(flags, async (client) => {
        const address = await client.createMailbox({
          name,
          ttlSeconds: flags.ttl,
          desc: flags.desc,
          maxDeliver: flags.maxDeliver,
          deadLetter: flags.deadLetter,
        });
        if (flags.json) printJson({ mail_address: address });
        else process.stdout.write(`${address}\n`);
      }),
    );

  clientCommand(mailbox.command("ls"))
    .description("list mailboxes with their depth per priority, bytes, delayed messages and groups")
    .argument("[search]", "only addresses that contain this text")
    .option("-n, --limit <n>", "at most n mailboxes (default 200, max 1000)", integer("--limit", 1))
    .addHelpText(
      "after",
      `
Examples:
  mq9 mailbox ls
  mq9 mailbox ls agent. --json | jq -r .mail_address`,
    )
    .action((search: string | undefined, flags: ListFlags) =>
      withClient(flags, async (client) => {
        const mailboxes = await client.listMailboxes({ search, limit: flags.limit });
        if (flags.json) for (const m of mailboxes) printJson(m);
        else printMailboxTable(mailboxes);
      }),
    );

  clientCommand(mailbox.command("info"))
    .description("one mailbox: messages and bytes per priority, oldest and newest message, its groups")
    .argument("<mailbox>", "mail address or mq9://host/mail_address")
    .action((address: string, flags: ConnectionFlags) =>
      withClient(flags, async (client) => {
        const info = await client.mailboxInfo(address);
        if (flags.json) {
          printJson(info);
          return;
        }
        printMailboxFields(info.mailbox);
        process.stdout.write("\n");
        printGroupTable(info.groups);
      }),
    );

  clientCommand(mailbox.command("peek"))
    .description("the next messages in delivery order, without consuming or leasing them (a stateless FETCH)")
    .argument("<mailbox>", "mail address or mq9://host/mail_address")
    .option("-n, --limit <n>", "at most n messages (default 20)", integer("--limit", 1))
    .option("--from-id <msg_id>", "start at this msg_id (default: the oldest)", integer("--from-id"))
    .action((address: string, flags: PeekFlags) =>
      withClient(flags, async (client) => {
        const messages = await client.fetch(address, {
          deliver: flags.fromId === undefined ? "earliest" : "from_id",
          fromId: flags.fromId,
          batch: flags.limit ?? 20,
          maxWaitMs: 0,
        });
        if (flags.json) for (const m of messages) printJson(messageRecord(m));
        else printMessages(messages);
      }),
    );

  clientCommand(mailbox.command("purge"))
    .description("delete the messages that match every filter given (the mailbox and its groups stay)")
    .argument("<mailbox>", "mail address or mq9://host/mail_address")
    .option("-k, --key <key>", "only messages with this key")
    .option("-t, --tag <tag>", "only messages with this tag")
    .option("-p, --priority <priority>", "only messages of this priority", priority)
    .option("--older-than <seconds>", "only messages stored at least this long ago", integer("--older-than"))
    .option("-y, --yes", "needed without filters: every message goes, delayed ones too")
    .addHelpText(
      "after",
      `
Examples:
  mq9 mailbox purge agent.inbox --tag stale --older-than 3600
  mq9 mailbox purge agent.inbox --yes            # every message`,
    )
    .action((address: string, flags: PurgeFlags) =>
      withClient(flags, async (client) => {
        const filter = {
          key: flags.key,
          tag: flags.tag,
          priority: flags.priority,
          olderThanSeconds: flags.olderThan,
        };
        const filtered = Object.values(filter).some((value) => value !== undefined);
        if (!filtered && !flags.yes) {
          throw new UsageError(
            `this deletes every message of ${address}: add --yes, or a filter (--key, --tag, --priority, --older-than)`,
          );
        }
        const purged = await client.purgeMailbox(address, filter);
        if (flags.json) printJson({ purged });
        else process.stdout.write(`purged ${purged} message${purged === 1 ? "" : "s"} from ${address}\n`);
      }),
    );

  clientCommand(mailbox.command("rm"))
    .description("delete a mailbox with its messages and groups")
    .argument("<mailbox>", "mail address or mq9://host/mail_address")
    .option("-y, --yes", "needed: the mailbox, its messages and groups go")
    .action((address: string, flags: ConnectionFlags & { yes?: boolean }) =>
      withClient(flags, async (client) => {
        if (!flags.yes) {
          throw new UsageError(`this deletes ${address} with its messages and groups: add --yes`);
        }
        await client.deleteMailbox(address);
        if (flags.json) printJson({ deleted: address });
        else process.stdout.write(`deleted ${address}\n`);
      }),
    );
}
