import type { GroupResetPosition } from "@mq9/client";
import type { Command } from "commander";
import {
  type ConnectionFlags,
  clientCommand,
  integer,
  UsageError,
  usageExit,
  withClient,
} from "../shared/client-command.js";
import { printJson } from "../shared/output.js";
import { printGroupFields, printGroupTable } from "./inspect/inspection-output.js";

interface ResetFlags extends ConnectionFlags {
  earliest?: boolean;
  latest?: boolean;
  fromId?: number;
  fromTime?: number;
}

/** The one position a reset's flags give. */
function resetPosition(flags: ResetFlags): GroupResetPosition {
  const given: GroupResetPosition[] = [];
  if (flags.earliest) given.push({ deliver: "earliest" });
  if (flags.latest) given.push({ deliver: "latest" });
  if (flags.fromId !== undefined) given.push({ fromId: flags.fromId });
  if (flags.fromTime !== undefined) given.push({ fromTime: flags.fromTime });
  if (given.length !== 1) {
    throw new UsageError(
      "give exactly one of --earliest, --latest, --from-id <msg_id>, --from-time <unix_seconds>",
    );
  }
  return given[0];
}

/** `mq9 group ls|info|reset|release`. */
export function registerGroup(program: Command): void {
  const group = program
    .command("group")
    .description("inspect and reset the consumer groups of a mailbox")
    .exitOverride(usageExit);

  clientCommand(group.command("ls"))
    .description("the groups of a mailbox: pending, leased, lag in messages and seconds, position")
    .argument("<mailbox>", "mail address or mq9://host/mail_address")
    .action((mailbox: string, flags: ConnectionFlags) =>
      withClient(flags, async (client) => {
        const groups = await client.listGroups(mailbox);
        if (flags.json) for (const g of groups) printJson(g);
        else printGroupTable(groups);
      }),
    );

  clientCommand(group.command("info"))
    .description("one group of a mailbox")
    .argument("<mailbox>", "mail address or mq9://host/mail_address")
    .argument("<group>", "the group's name")
    .action((mailbox: string, name: string, flags: ConnectionFlags) =>
      withClient(flags, async (client) => {
        const info = await client.groupInfo(mailbox, name);
        if (flags.json) printJson(info);
        else printGroupFields(info);
      }),
    );

  clientCommand(group.command("release"))
    .description(
      "end a member's running leases now (every member's without --member): the others get the messages",
    )
    .argument("<mailbox>", "mail address or mq9://host/mail_address")
    .argument("<group>", "the group's name")
    .option("--member <name>", "only this member's leases (see `mq9 group info`)")
    .addHelpText(
      "after",
      `
Example:
  mq9 group release agent.inbox workers --member worker-3   # worker-3 hangs`,
    )
    .action((mailbox: string, name: string, flags: ConnectionFlags & { member?: string }) =>
      withClient(flags, async (client) => {
        const released = await client.releaseLeases(mailbox, name, flags.member);
        if (flags.json) printJson({ released });
        else process.stdout.write(`released ${released} lease${released === 1 ? "" : "s"}\n`);
      }),
    );

  clientCommand(group.command("reset"))
    .description("restart a group at a position; its leases are dropped and its next FETCH starts there")
    .argument("<mailbox>", "mail address or mq9://host/mail_address")
    .argument("<group>", "the group's name")
    .option("--earliest", "at the oldest live message")
    .option("--latest", "after the newest message (skip the backlog)")
    .option("--from-id <msg_id>", "at this msg_id", integer("--from-id"))
    .option(
      "--from-time <unix_seconds>",
      "at the first message stored at or after this time",
      integer("--from-time"),
    )
    .addHelpText(
      "after",
      `
Examples:
  mq9 group reset agent.inbox workers --earliest   # deliver everything again
  mq9 group reset agent.inbox workers --latest     # skip the backlog`,
    )
    .action((mailbox: string, name: string, flags: ResetFlags) =>
      withClient(flags, async (client) => {
        const info = await client.resetGroup(mailbox, name, resetPosition(flags));
        if (flags.json) printJson(info);
        else printGroupFields(info);
      }),
    );
}
