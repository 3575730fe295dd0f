import { type Command, Option } from "commander";
import { integer } from "./client-command.js";

/** Adds where a new group (or a stateless read) starts: --deliver, --from-id, --from-time. */
export function withStartOptions(command: Command): Command {
  return command
    .addOption(
      new Option("-d, --deliver <policy>", "where a new group starts (default latest)").choices([
        "earliest",
        "latest",
        "from_time",
        "from_id",
      ]),
    )
    .option("--from-id <msg_id>", "first msg_id (implies --deliver from_id)", integer("--from-id"))
    .option(
      "--from-time <unix_seconds>",
      "first create time (implies --deliver from_time)",
      integer("--from-time"),
    );
}
