import type { ClusterRoster as Roster } from "@mq9/broker";
import type { Command } from "commander";
import { ExitCode, usageExit } from "../shared/client-command.js";
import { type ApiFlags, apiCommand, duration, withApi } from "../shared/orchestrator-api.js";
import { printJson, printTable } from "../shared/output.js";

/** `mq9 cluster status`: a cluster's nodes as one node hears them, over its HTTP API. */
export function registerCluster(program: Command): void {
  const cluster = program
    .command("cluster")
    .description("a cluster's nodes (mq9 serve --cluster), over a node's HTTP API")
    .exitOverride(usageExit);
  apiCommand(cluster.command("status"))
    .description("every node the given node hears: up or missing, its nats-server, HTTP port and duties")
    .addHelpText(
      "after",
      "\nA cluster's clients connect to nats-servers, which do not know mq9's HTTP port: give a node's\nHTTP server with --http (or MQ9_HTTP; npm run cluster:up's env file sets it).\n\nExamples:\n  mq9 cluster status --http http://n1:8080\n  mq9 cluster status --json",
    )
    .action((flags: ApiFlags) =>
      withApi(flags, async (api) => {
        const roster = await api.call<Roster>("GET", "/api/v1/cluster");
        if (flags.json) printJson(roster);
        else printRoster(roster);
        return ExitCode.ok;
      }),
    );
}

function printRoster(roster: Roster): void {
  if (!roster.clustered) {
    process.stdout.write(
      "this broker runs on its own (mq9 serve without --cluster): it has no cluster nodes\n",
    );
    return;
  }
  const missing = roster.nodes.filter((n) => n.state === "missing").length;
  const up = roster.nodes.length - missing;
  const now = Date.now();
  process.stdout.write(
    `cluster ${roster.cluster}: ${up} node${up === 1 ? "" : "s"} up, ${missing} missing, as node ${roster.node} hears them\n`,
  );
  printTable(
    ["NODE", "STATE", "NATS-SERVER", "HTTP", "RUNS", "UP FOR", "LAST HEARD"],
    roster.nodes.map((n) => [
      n.self ? `${n.node} (this one)` : n.node,
      n.state,
      n.nats_server ?? "-",
      n.http_url ?? "-",
      n.duties.join(",") || "-",
      duration(now - n.started_at),
      n.self ? "-" : `${duration(n.last_heard_ms)} ago`,
    ]),
  );
}
