import type { RetryPolicy, TaskTemplate } from "../templates/task-template.js";
import type { AttemptRecord, CompensationState, TaskState, WorkState } from "./task-state.js";

/** What an agent's `error` answer says went wrong, as one line of text. */
export function errorText(payload: unknown): string {
  if (typeof payload === "string") return payload;
  const error = (payload as { error?: unknown } | null)?.error;
  if (typeof error === "string") return error;
  return JSON.stringify(payload) ?? "the agent answered with an error";
}

/** Adds how the attempt in flight (or the last one) ended to the work's history. */
export function recordAttempt(
  work: WorkState,
  outcome: AttemptRecord["outcome"],
  nowMs: number,
  error?: string,
): void {
  work.history.push({
    attempt: work.attempts,
    agent: work.dispatch?.agent,
    msg_id: work.dispatch?.msg_id,
    outcome,
    error,
    started_at: work.attempt_started_at ?? nowMs,
    finished_at: nowMs,
  });
}

/** The pause before retry number `attempts` (1 = the first retry): doubling, at most `maxMs`. */
export function retryBackoffMs(retry: RetryPolicy, attempts: number, maxMs: number): number {
  return Math.min(maxMs, retry.backoffMs * 2 ** (attempts - 1));
}

/** The compensations a task that ended early owes: its completed steps that have one, newest first (a saga). */
export function compensationsOwed(state: TaskState, template: TaskTemplate | undefined): CompensationState[] {
  return [...state.completed_order]
    .reverse()
    .filter((id) => template?.steps.find((s) => s.id === id)?.compensate)
    .map((id) => ({ step_id: id, status: "pending", attempts: 0, history: [], output: undefined }));
}
