import { readFileSync } from "node:fs";
import {
  isTerminal,
  type StepState,
  TASK_STATUSES,
  type TaskState,
  type TaskSubmitted,
  type TaskSummary,
} from "@mq9/orchestrator/api";
import type { Command } from "commander";
import { ExitCode, integer, UsageError, usageExit } from "../shared/client-command.js";
import { exitAfterOutput } from "../shared/exit.js";
import {
  type ApiFlags,
  apiCommand,
  duration,
  type HttpApi,
  reportApiError,
  withApi,
} from "../shared/orchestrator-api.js";
import { cell, printJson, printTable, say } from "../shared/output.js";

interface RunFlags extends ApiFlags {
  payload?: string;
  payloadFile?: string;
  priority?: string;
  wait: boolean;
  timeout: number;
}

interface ListFlags extends ApiFlags {
  status?: string;
  limit?: number;
}

function readPayload(flags: RunFlags): unknown {
  if (flags.payload !== undefined && flags.payloadFile !== undefined) {
    throw new UsageError("give --payload or --payload-file, not both");
  }
  let text = flags.payload;
  if (flags.payloadFile !== undefined) {
    try {
      text = readFileSync(flags.payloadFile === "-" ? 0 : flags.payloadFile, "utf8");
    } catch (err) {
      throw new UsageError(`--payload-file: cannot read ${flags.payloadFile}: ${(err as Error).message}`);
    }
  }
  if (text === undefined) return null;
  try {
    return JSON.parse(text);
  } catch {
    // Plain words are a string payload; anything that looks like JSON must be JSON.
    if (/^\s*[[{"]/.test(text)) throw new UsageError(`the payload is not valid JSON: ${cell(text, 40)}`);
    return text;
  }
}

function stepLine(step: StepState): string {
  const who = step.agent ? ` by ${step.agent}` : "";
  const took =
    step.finished_at !== undefined && step.started_at !== undefined
      ? ` in ${duration(step.finished_at - step.started_at)}`
      : "";
  const tries = step.attempts > 1 ? ` (attempt ${step.attempts})` : "";
  const why = step.error && step.status !== "completed" ? `: ${step.error}` : "";
  // A step that waits for an agent says for what, as soon as it waits.
  const waits = step.status === "pending" && step.waiting ? `, waiting: ${step.waiting}` : "";
  const clashes = step.merge_clashes
    ? `; inputs clashed on ${Object.keys(step.merge_clashes).join(", ")} (the last kept)`
    : "";
  return `  ${step.id.padEnd(16)} ${step.status}${who}${took}${tries}${waits}${why}${clashes}`;
}

function exitFor(task: TaskState): number {
  return task.status === "completed" ? ExitCode.ok : ExitCode.brokerError;
}

function printTask(task: TaskState): void {
  const took = task.finished_at !== undefined ? ` in ${duration(task.finished_at - task.created_at)}` : "";
  process.stdout.write(`task ${task.task_id} (${task.task_type}) ${task.status}${took}\n`);
  process.stdout.write(`trace ${task.trace_id}\n`);
  if (task.error) process.stdout.write(`error: ${task.error}\n`);
  process.stdout.write("steps:\n");
  for (const id of task.order) process.stdout.write(`${stepLine(task.steps[id])}\n`);
  if (task.compensations.length > 0) {
    process.stdout.write(`compensation ${task.compensation_status ?? ""}:\n`);
    for (const c of task.compensations) {
      process.stdout.write(`  ${c.step_id.padEnd(16)} ${c.status}${c.agent ? ` by ${c.agent}` : ""}\n`);
    }
  }
  if (task.result !== undefined) process.stdout.write(`result: ${JSON.stringify(task.result, null, 2)}\n`);
}

/** Polls the task and prints each step as it changes, until the task ends or `timeoutMs` passes. */
async function follow(api: HttpApi, flags: RunFlags, taskId: string): Promise<TaskState> {
  const shown = new Map<string, string>();
  const deadline = Date.now() + flags.timeout;
  for (;;) {
    const task = await api.call<TaskState>("GET", `/api/tasks/${encodeURIComponent(taskId)}`);
    if (!flags.json) {
      for (const id of task.order) {
        const line = stepLine(task.steps[id]);
        if (shown.get(id) !== line) {
          shown.set(id, line);
          process.stdout.write(`${line}\n`);
        }
      }
    }
    if (isTerminal(task.status) || Date.now() > deadline) return task;
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
}

/**
 * Ctrl-C while `task run` waits stops the command, not the task: says so, and how to follow or
 * cancel it, then exits 130 as an interrupted command does.
 */
function stoppedFollowing(task: TaskSubmitted | undefined): never {
  if (task === undefined) {
    say("interrupted before the broker confirmed the task; it may have started: see mq9 task list");
  } else {
    say(
      `task ${task.task_id} is still running (Ctrl-C stopped following it, not the task); follow it with: mq9 task show ${task.task_id}, or mq9 trace ${task.trace_id}; stop it with: mq9 task cancel ${task.task_id}`,
    );
  }
  process.exit(130);
}

/** `mq9 task run|show|list|cancel`: tasks of the orchestrator, over its HTTP API. */
export function registerTask(program: Command): void {
  const task = program
    .command("task")
    .description("run and inspect orchestrated tasks (templates in the orchestrator's templates folder)")
    .exitOverride(usageExit);

  apiCommand(task.command("run"))
    .description("start a task from a template and follow its steps until it ends")
    .argument("<type>", "task type: the template's name")
    .option("-p, --payload <json>", "the task's input (JSON; plain words are taken as a string)")
    .option("--payload-file <file>", "read the input from a JSON file ('-' = stdin)")
    .option("--priority <p>", "critical, urgent, normal or deferred (sent as normal)")
    .option("--no-wait", "print the task id and return at once")
    .option(
      "--timeout <ms>",
      "stop following after this long (the task keeps running)",
      integer("--timeout", 1),
      600_000,
    )
    .addHelpText(
      "after",
      `
Examples:
  mq9 task run content-analysis --payload '{"text": "mq9 is a broker for agents"}'
  mq9 task run nightly-report --no-wait --json`,
    )
    .action(async (type: string, flags: RunFlags) => {
      // A bad payload is a usage error whether or not the broker is reachable.
      let payload: unknown;
      try {
        payload = readPayload(flags);
      } catch (err) {
        await exitAfterOutput(reportApiError(err, flags));
      }
      await withApi(flags, async (api) => {
        // Asynchronous: the command follows the steps itself (the API waits by default).
        const body: Record<string, unknown> = { task_type: type, payload, async: true };
        if (flags.priority !== undefined) body.priority = flags.priority;
        let submitted: TaskSubmitted | undefined;
        process.once("SIGINT", () => stoppedFollowing(submitted));
        const started = await api.call<TaskSubmitted>("POST", "/api/tasks", body);
        submitted = started;
        if (!flags.wait) {
          if (flags.json) printJson(started);
          else process.stdout.write(`started task ${started.task_id} (trace ${started.trace_id})\n`);
          return ExitCode.ok;
        }
        if (!flags.json) process.stdout.write(`task ${started.task_id} (${type}) started\n`);
        const done = await follow(api, flags, started.task_id);
        if (flags.json) {
          printJson(done);
        } else if (!isTerminal(done.status)) {
          process.stdout.write(`still ${done.status}; follow it with: mq9 task show ${done.task_id}\n`);
        } else {
          const took =
            done.finished_at !== undefined ? ` in ${duration(done.finished_at - done.created_at)}` : "";
          process.stdout.write(`task ${done.task_id} ${done.status}${took}\n`);
          if (done.error) process.stdout.write(`error: ${done.error}\n`);
          if (done.result !== undefined) process.stdout.write(`${JSON.stringify(done.result, null, 2)}\n`);
        }
        return isTerminal(done.status) ? exitFor(done) : ExitCode.ok;
      });
    });

  apiCommand(task.command("show"))
    .description("a task's state and each of its steps")
    .argument("<task_id>")
    .action((id: string, flags: ApiFlags) =>
      withApi(flags, async (api) => {
        const found = await api.call<TaskState>("GET", `/api/tasks/${encodeURIComponent(id)}`);
        if (flags.json) printJson(found);
        else printTask(found);
        return ExitCode.ok;
      }),
    );

  apiCommand(task.command("list"))
    .description("recent tasks, newest first")
    .option(
      "--status <status>",
      `only ${TASK_STATUSES.slice(0, -1).join(", ")} or ${TASK_STATUSES[TASK_STATUSES.length - 1]}`,
    )
    .option("-n, --limit <n>", "at most this many (default 100)", integer("--limit", 1))
    .action((flags: ListFlags) =>
      withApi(flags, async (api) => {
        const query = new URLSearchParams();
        if (flags.status) query.set("status", flags.status);
        if (flags.limit) query.set("limit", String(flags.limit));
        const { tasks } = await api.call<{ tasks: TaskSummary[] }>(
          "GET",
          `/api/tasks${query.size > 0 ? `?${query}` : ""}`,
        );
        if (flags.json) {
          for (const t of tasks) printJson(t);
        } else if (tasks.length === 0) {
          process.stdout.write("(no tasks)\n");
        } else {
          printTable(
            ["TASK", "TYPE", "STATUS", "STARTED", "TOOK", "STEPS"],
            tasks.map((t) => [
              t.task_id,
              t.task_type,
              t.status,
              new Date(t.created_at).toISOString().replace(/\.\d+Z$/, "Z"),
              t.finished_at ? duration(t.finished_at - t.created_at) : "-",
              cell(
                Object.entries(t.steps)
                  .map(([id, status]) => `${id}:${status}`)
                  .join(" "),
              ),
            ]),
          );
        }
        return ExitCode.ok;
      }),
    );

  apiCommand(task.command("cancel"))
    .description("cancel a pending or running task (its completed steps are compensated)")
    .argument("<task_id>")
    .action((id: string, flags: ApiFlags) =>
      withApi(flags, async (api) => {
        const canceled = await api.call<TaskState>("POST", `/api/tasks/${encodeURIComponent(id)}/cancel`);
        if (flags.json) printJson(canceled);
        else process.stdout.write(`canceled task ${canceled.task_id}\n`);
        return ExitCode.ok;
      }),
    );
}
