import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { Message, Task } from "@a2a-js/sdk";
import type { AgentExecutor, ExecutionEventBus, RequestContext } from "@a2a-js/sdk/server";
import { partsText, TaskEvents } from "@mq9/client/a2a";

/** How the task text reaches the command. */
export type TaskInput = "stdin" | "arg";

/** Options of the command executor. */
export interface CommandExecutorOptions {
  /** A shell command line, e.g. `hermes chat -q` or `claude -p`. */
  command: string;
  /** stdin (default): the text is written to the process's stdin; arg: appended as the last argument. */
  input?: TaskInput;
  /** Kill the process after this long (default 600 000 ms); the task fails. */
  timeoutMs?: number;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
}

/** Output that starts a line like this asks the caller a question (the Hermes A2A convention). */
export const INPUT_REQUIRED_PREFIX = "[INPUT_REQUIRED]";
const STDERR_TAIL = 4_000;
const KILL_GRACE_MS = 2_000;

interface Running {
  child: ChildProcess;
  canceled: boolean;
}

/** The text to give the command: the message, or for a follow-up the conversation so far. */
function taskText(context: RequestContext): string {
  const current = partsText((Message.toJSON(context.userMessage) as { parts?: unknown }).parts);
  if (!context.task) return current;
  const task = Task.toJSON(context.task) as { history?: { role?: string; parts?: unknown }[] };
  const lines = (task.history ?? []).map(
    (m) => `${m.role === "ROLE_AGENT" ? "agent" : "user"}: ${partsText(m.parts)}`,
  );
  return lines.join("\n\n");
}

/**
 * An @a2a-js/sdk AgentExecutor that runs one process per task: the task text on stdin
 * or as an argument, each stdout line streamed as an artifact chunk, stderr reported
 * on a non-zero exit, killed on timeout or cancel.
 */
export class CommandExecutor implements AgentExecutor {
  private readonly running = new Map<string, Running>();
  private readonly timeoutMs: number;

  constructor(private readonly options: CommandExecutorOptions) {
    this.timeoutMs = options.timeoutMs ?? 600_000;
  }

  /** Processes running now. */
  get active(): number {
    return this.running.size;
  }

  async execute(context: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const events = new TaskEvents(context, bus);
    events.start();
    events.working();
    const text = taskText(context);
    const viaArg = this.options.input === "arg";
    const child = spawn(
      "/bin/sh",
      ["-c", viaArg ? `${this.options.command} "$@"` : this.options.command, "sh", ...(viaArg ? [text] : [])],
      {
        cwd: this.options.cwd,
        env: {
          ...process.env,
          ...this.options.env,
          MQ9_TASK_ID: context.taskId,
          MQ9_CONTEXT_ID: context.contextId,
        },
        stdio: [viaArg ? "ignore" : "pipe", "pipe", "pipe"],
        // Its own process group, so a timeout or cancel stops the children it started too.
        detached: true,
      },
    );
    const run: Running = { child, canceled: false };
    this.running.set(context.taskId, run);
    if (!viaArg) {
      child.stdin?.on("error", () => {});
      child.stdin?.end(text);
    }
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString("utf8")).slice(-STDERR_TAIL);
    });
    let chunks = 0;
    let lastLine = "";
    const lines = createInterface({ input: child.stdout! });
    lines.on("line", (line) => {
      if (line.trim() !== "") lastLine = line;
      events.artifact(`${line}\n`, { artifactId: "output", append: chunks > 0, lastChunk: false });
      chunks++;
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      this.kill(child);
    }, this.timeoutMs);
    const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: Error }>(
      (resolve) => {
        child.once("error", (error) => resolve({ code: null, signal: null, error }));
        child.once("close", (code, signal) => resolve({ code, signal }));
      },
    );
    clearTimeout(timer);
    this.running.delete(context.taskId);
    if (chunks > 0) events.artifact("", { artifactId: "output", append: true, lastChunk: true });
    if (run.canceled) events.canceled("canceled; the process was stopped");
    else if (exit.error) events.fail(`could not start '${this.options.command}': ${exit.error.message}`);
    else if (timedOut) events.fail(`timed out after ${this.timeoutMs / 1000} s; the process was killed`);
    else if (exit.code !== 0) {
      const why = exit.code === null ? `killed by ${exit.signal}` : `exited with code ${exit.code}`;
      events.fail(`'${this.options.command}' ${why}${stderr.trim() ? `: ${stderr.trim()}` : ""}`);
    } else if (lastLine.startsWith(INPUT_REQUIRED_PREFIX)) {
      events.inputRequired(lastLine.slice(INPUT_REQUIRED_PREFIX.length).trim());
    } else events.complete();
    events.finished();
  }

  async cancelTask(taskId: string): Promise<void> {
    const run = this.running.get(taskId);
    if (!run) return;
    run.canceled = true;
    this.kill(run.child);
  }

  private kill(child: ChildProcess): void {
    const signal = (name: NodeJS.Signals) => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, name);
      } catch {
        // already gone
      }
    };
    signal("SIGTERM");
    setTimeout(() => signal("SIGKILL"), KILL_GRACE_MS).unref();
  }
}
