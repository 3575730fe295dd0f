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
    .description(
      "every node the given node hears: up, missing or down, its nats-server, HTTP port and duties",
    )
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
  apiCommand(cluster.command("forget").argument("<node>", "the node id to forget"))
    .description("drop a node that is down or missing from every node's roster (one that is up stays)")
    .addHelpText(
      "after",
      "\nA node that died without saying goodbye stays in the roster as down, so that anyone who looks\nlater sees it is gone; forget it once it is not coming back (retired, or renamed). A node that\ncomes back under its node id replaces its own down entry by itself.\n\nExamples:\n  mq9 cluster forget n3 --http http://n1:8080",
    )
    .action((node: string, flags: ApiFlags) =>
      withApi(flags, async (api) => {
        const answer = await api.call<{ forgotten: string }>(
          "DELETE",
          `/api/v1/cluster/nodes/${encodeURIComponent(node)}`,
        );
        if (flags.json) printJson(answer);
        else process.stdout.write(`node ${answer.forgotten} forgotten: no node lists it any more\n`);
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
  const count = (state: string) => roster.nodes.filter((n) => n.state === state).length;
  const up = count("up");
  const now = Date.now();
  process.stdout.write(
    `cluster ${roster.cluster}: ${up} node${up === 1 ? "" : "s"} up, ${count("missing")} missing, ${count("down")} down, as node ${roster.node} hears them\n`,
  );
  printTable(
    ["NODE", "STATE", "NATS-SERVER", "HTTP", "RUNS", "UP FOR", "LAST HEARD"],
    roster.nodes.map((n) => [
      n.self ? `${n.node} (this one)` : n.node,
      n.since === undefined ? n.state : `${n.state} since ${new Date(n.since).toISOString()}`,
      n.nats_server ?? "-",
      n.http_url ?? "-",
      n.duties.join(",") || "-",
      duration(now - n.started_at),
      n.self ? "-" : `${duration(n.last_heard_ms)} ago`,
    ]),
  );
}
