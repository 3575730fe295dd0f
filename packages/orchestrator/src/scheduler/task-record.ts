import type { TaskTemplate } from "../templates/task-template.js";
import { isTerminal, type TaskState } from "./task-state.js";
import { TaskTimers } from "./task-timers.js";

/** What the scheduler holds for one task besides its persisted state. */
export interface TaskRecord {
  state: TaskState;
  /** The template version the task runs (see templateOf); undefined when it is gone. */
  template?: TaskTemplate;
  timers: TaskTimers;
  /** Every change of a task runs in this chain, one at a time. */
  queue: Promise<void>;
  waiters: Set<() => void>;
  announced: boolean;
  /** Steps whose end was told to onStep. */
  stepsTold: Set<string>;
}

/** A fresh record for a task state (new, or read back from the store). */
export function newTaskRecord(
  state: TaskState,
  template: TaskTemplate | undefined,
  now: () => number,
): TaskRecord {
  return {
    state,
    template,
    timers: new TaskTimers(now),
    queue: Promise.resolve(),
    waiters: new Set(),
    announced: isTerminal(state.status),
    stepsTold: new Set(state.order.filter((id) => isTerminal(state.steps[id].status))),
  };
}

export const snapshot = (state: TaskState): TaskState => structuredClone(state);
