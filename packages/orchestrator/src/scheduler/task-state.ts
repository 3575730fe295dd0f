// The light entry @mq9/orchestrator/api loads this file: it imports nothing at run time.
import type { Priority } from "@mq9/protocol";

/** Where a task is: `pending → dispatching → running → completed | failed | timeout | canceled`. */
export const TASK_STATUSES = [
  "pending",
  "dispatching",
  "running",
  "completed",
  "failed",
  "timeout",
  "canceled",
] as const;

export type TaskStatus = (typeof TASK_STATUSES)[number];

/** Where a step is: the task's states, plus `skipped` (its `when` was false). */
export type StepStatus = TaskStatus | "skipped";

const TERMINAL = new Set<StepStatus>(["completed", "failed", "timeout", "canceled", "skipped"]);

export function isTerminal(status: StepStatus): boolean {
  return TERMINAL.has(status);
}

/** The message that carries one attempt of a step (or compensation) to its agent. */
export interface Dispatch {
  msg_id: string;
  agent: string;
  mailbox: string;
  /** Unix ms: the envelope's created_at, kept so a re-send after a restart is the same message. */
  created_at: number;
}

/** How one attempt ended. */
export interface AttemptRecord {
  attempt: number;
  agent?: string;
  msg_id?: string;
  outcome: "completed" | "failed" | "timeout" | "canceled";
  error?: string;
  started_at: number;
  finished_at: number;
}

/** One piece of work of a task: a step or a compensation. */
export interface WorkState {
  status: StepStatus;
  /** Attempts dispatched so far. */
  attempts: number;
  /** The attempt in flight (dispatching or running). */
  dispatch?: Dispatch;
  /** Pending after a failed attempt: not dispatched again before this unix ms (backoff). */
  retry_at?: number;
  /** Running: the attempt times out at this unix ms. */
  deadline?: number;
  /** Pending because nobody can take it right now (no live agent, or all at their limit): why. */
  waiting?: string;
  /** Unix ms since which it waits; it gives up after its timeout from then. */
  waiting_since?: number;
  started_at?: number;
  attempt_started_at?: number;
  finished_at?: number;
  error?: string;
  history: AttemptRecord[];
}

export interface StepState extends WorkState {
  id: string;
  /** Who did (or does) the work. */
  agent?: string;
  output?: unknown;
  /** A `mode: merge` step: fields its inputs both gave -> those steps (the last one's value is kept). */
  merge_clashes?: Record<string, string[]>;
}

export interface CompensationState extends WorkState {
  /** The completed step this undoes. */
  step_id: string;
  agent?: string;
  output?: unknown;
}

/** A task's whole state: what is persisted, and what the API shows. */
export interface TaskState {
  task_id: string;
  task_type: string;
  trace_id: string;
  status: TaskStatus;
  priority: Priority;
  payload: unknown;
  result?: unknown;
  error?: string;
  created_at: number;
  updated_at: number;
  finished_at?: number;
  /** Unix ms at which the whole task times out (template `timeout`). */
  deadline?: number;
  /** Step ids in the order the template runs them. */
  order: string[];
  steps: Record<string, StepState>;
  /** Step ids in the order they completed; compensation runs the reverse. */
  completed_order: string[];
  /** Saga: the compensations to run after a failure, newest completed step first. */
  compensations: CompensationState[];
  compensation_status?: "running" | "completed" | "failed";
  /** Increases with every persisted change. */
  revision: number;
  /** Accepted but not started: the scheduler runs at most maxTasksInFlight tasks at once. */
  queued?: boolean;
  /** The template's text as the task started: it runs to its end on that version (reloads and restarts included). */
  template_source?: string;
}

const TASK_MOVES: Record<TaskStatus, readonly TaskStatus[]> = {
  pending: ["dispatching", "running", "completed", "failed", "timeout", "canceled"],
  dispatching: ["running", "completed", "failed", "timeout", "canceled"],
  running: ["completed", "failed", "timeout", "canceled"],
  completed: [],
  failed: [],
  timeout: [],
  canceled: [],
};

const STEP_MOVES: Record<StepStatus, readonly StepStatus[]> = {
  pending: ["dispatching", "skipped", "completed", "failed", "timeout", "canceled"],
  // Back to pending: the attempt failed and a retry waits for its backoff.
  dispatching: ["running", "pending", "failed", "timeout", "canceled"],
  running: ["completed", "pending", "failed", "timeout", "canceled"],
  completed: [],
  failed: [],
  timeout: [],
  canceled: [],
  skipped: [],
};

export class IllegalTransition extends Error {
  override name = "IllegalTransition";
}

/** Moves a task to `to`, refusing moves the state machine does not have. */
export function moveTask(task: TaskState, to: TaskStatus, now: number): void {
  if (task.status === to) return;
  if (!TASK_MOVES[task.status].includes(to)) {
    throw new IllegalTransition(`task ${task.task_id} cannot go from ${task.status} to ${to}`);
  }
  task.status = to;
  task.updated_at = now;
  if (isTerminal(to)) task.finished_at = now;
}

/** Moves a step or compensation to `to`, refusing moves the state machine does not have. */
export function moveWork(work: WorkState, to: StepStatus, now: number, label: string): void {
  if (work.status === to) return;
  if (!STEP_MOVES[work.status].includes(to)) {
    throw new IllegalTransition(`${label} cannot go from ${work.status} to ${to}`);
  }
  work.status = to;
  if (isTerminal(to)) {
    work.finished_at = now;
    work.deadline = undefined;
    work.retry_at = undefined;
  }
}

/** A copy of a task's state that later changes do not reach (what the API and listeners get). */
export const snapshot = (state: TaskState): TaskState => structuredClone(state);
