/** Which piece of a task's work something belongs to: a step by id, or a compensation by its index. */
export type WorkRef = { step: string } | { compensation: number };

/**
 * The timers a task can have: its own deadline, and per piece of work the deadline of the
 * attempt in flight, the end of a retry backoff, and the end of waiting for an agent.
 */
export type TimerKey =
  | { kind: "task-deadline" }
  | { kind: "attempt-deadline" | "retry" | "wait"; work: WorkRef };

export const TASK_DEADLINE: TimerKey = { kind: "task-deadline" };

/** The one place a timer key becomes a map key, so two spellings of one timer cannot drift apart. */
function slot(key: TimerKey): string {
  if (key.kind === "task-deadline") return key.kind;
  return "step" in key.work
    ? `${key.kind}:step:${key.work.step}`
    : `${key.kind}:comp:${key.work.compensation}`;
}

/** The pending timers of one task, at most one per key: arming a key again replaces its timer. */
export class TaskTimers {
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(private readonly now: () => number) {}

  /** Calls `fire` at unix ms `at` (at once if it has passed), unless cleared or re-armed before. */
  arm(key: TimerKey, at: number, fire: () => void): void {
    const name = slot(key);
    this.clearSlot(name);
    const timer = setTimeout(
      () => {
        this.timers.delete(name);
        fire();
      },
      Math.max(0, at - this.now()),
    );
    this.timers.set(name, timer);
  }

  clear(key: TimerKey): void {
    this.clearSlot(slot(key));
  }

  /** Clears every timer of one piece of work. */
  clearWork(work: WorkRef): void {
    for (const kind of ["attempt-deadline", "retry", "wait"] as const) this.clear({ kind, work });
  }

  clearAll(): void {
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  private clearSlot(name: string): void {
    const timer = this.timers.get(name);
    if (timer) {
      clearTimeout(timer);
      this.timers.delete(name);
    }
  }
}
