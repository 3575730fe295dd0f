import type { Command } from "commander";
import {
  type ConnectionFlags,
  clientCommand,
  integer,
  usageExit,
  withClient,
} from "../shared/client-command.js";
import { printJson } from "../shared/output.js";
import { printServerFields } from "./inspect/inspection-output.js";

interface PingFlags extends ConnectionFlags {
  count: number;
}

/** `mq9 server info|ping`. */
export function registerServer(program: Command): void {
  const server = program.command("server").description("ask the broker what it is").exitOverride(usageExit);

  clientCommand(server.command("info"))
    .description(
      "version, uptime, store, connections, subscriptions, memory, disk, cluster (admins, with users)",
    )
    .action((flags: ConnectionFlags) =>
      withClient(flags, async (client) => {
        const info = await client.serverInfo();
        if (flags.json) printJson(info);
        else printServerFields(info);
      }),
    );

  clientCommand(server.command("ping"))
    .description("round-trip time to the broker, like `nats rtt`: one NATS PING/PONG per round")
    .option("-c, --count <n>", "rounds", integer("--count", 1), 5)
    .action((flags: PingFlags) =>
      withClient(flags, async (client) => {
        const rtts: number[] = [];
        for (let i = 0; i < flags.count; i++) {
          const ms = await client.nats.rtt();
          rtts.push(ms);
          if (!flags.json) process.stdout.write(`${flags.server}: ${ms.toFixed(3)} ms\n`);
        }
        const min = Math.min(...rtts);
        const max = Math.max(...rtts);
        const avg = rtts.reduce((sum, ms) => sum + ms, 0) / rtts.length;
        if (flags.json)
          printJson({ server: flags.server, rtt_ms: rtts, min_ms: min, avg_ms: avg, max_ms: max });
        else
          process.stdout.write(
            `${rtts.length} rounds: min ${min.toFixed(3)} ms, avg ${avg.toFixed(3)} ms, max ${max.toFixed(3)} ms\n`,
          );
      }),
    );
}
