import type { TraceView } from "@mq9/orchestrator";
import type { Command } from "commander";
import { ExitCode } from "../shared/client-command.js";
import { type ApiFlags, apiCommand, clock, withApi } from "../shared/orchestrator-api.js";
import { cell, printJson } from "../shared/output.js";

/** One line of a trace's timeline: when, how far in, which way, what. */
function timelineLine(m: TraceView["messages"][number]): string {
  const offset = `+${m.offset_ms.toFixed(1)}ms`.padStart(11);
  const what = m.dead_reason
    ? `DEAD (${m.dead_reason})`
    : `${m.msg_type}${m.step_id ? ` [${m.step_id}]` : ""}`;
  const route = `${m.source} -> ${m.target}`;
  return `${clock(m.sent_at)} ${offset}  hop ${m.hops}  ${route.padEnd(34)} ${what.padEnd(22)} ${cell(
    JSON.stringify(m.payload) ?? "",
    50,
  )}`;
}

/** `mq9 trace <trace_id>`: every message of a trace as a readable timeline. */
export function registerTrace(program: Command): void {
  apiCommand(program.command("trace"))
    .description("every message of a trace, in order, with timings")
    .argument("<trace_id>")
    .addHelpText("after", "\nExamples:\n  mq9 trace 3f2c9d0e6b8a4c1f9e7d5b3a1c0e8f6d")
    .action((traceId: string, flags: ApiFlags) =>
      withApi(flags, async (api) => {
        const trace = await api.call<TraceView>("GET", `/api/traces/${encodeURIComponent(traceId)}`);
        if (flags.json) {
          printJson(trace);
          return ExitCode.ok;
        }
        process.stdout.write(
          `trace ${trace.trace_id}: ${trace.messages.length} messages over ${trace.duration_ms.toFixed(1)} ms\n`,
        );
        for (const m of trace.messages) process.stdout.write(`${timelineLine(m)}\n`);
        return ExitCode.ok;
      }),
    );
}
