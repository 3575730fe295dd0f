import { OrchestratorError } from "../errors.js";
import { isTerminal, type TaskState } from "./task-state.js";

/** Finishes remembered to tell the pace at which places free up. */
const PACE_WINDOW = 16;
/** Retry-After bounds: never "now", and never so late that a client gives up on a busy but moving queue. */
const MIN_RETRY_AFTER_S = 1;
const MAX_RETRY_AFTER_S = 60;

/** A task as admission reads it. */
export interface AdmittedTask {
  readonly state: TaskState;
}

/**
 * How many tasks run at once: up to `maxInFlight`, later ones wait in a queue (pending,
 * `queued`) of at most `capacity`, beyond which a submission is refused with QUEUE_FULL.
 */
export class TaskAdmission<T extends AdmittedTask = AdmittedTask> {
  /** Accepted tasks not started yet, oldest first. */
  private readonly queue: T[] = [];
  /** Started and not finished. */
  private running = 0;
  /** When the last few tasks ended, oldest first. */
  private readonly finishes: number[] = [];
  private readonly since: number;

  constructor(
    private readonly maxInFlight: number,
    private readonly capacity: number,
    private readonly now: () => number = Date.now,
  ) {
    this.since = now();
  }

  /** Whether a new task has to wait in the queue; throws QUEUE_FULL when the queue is full too. */
  mustQueue(): boolean {
    const full = this.running >= this.maxInFlight;
    if (full && this.queue.length >= this.capacity) {
      const retryAfterSeconds = this.retryAfterSeconds();
      throw new OrchestratorError(
        "QUEUE_FULL",
        `the orchestrator runs ${this.running} tasks (maxTasksInFlight ${this.maxInFlight}) and ${this.queue.length} wait (queueCapacity ${this.capacity}); try again in ${retryAfterSeconds} s`,
        { retryAfterSeconds },
      );
    }
    return full;
  }

  /**
   * When a refused submission may find room: a place frees when a task ends, so the mean
   * gap between recent ends, or the time since the last one when that is longer (a queue
   * that stopped moving should not be hammered every second).
   */
  retryAfterSeconds(): number {
    const now = this.now();
    const last = this.finishes.at(-1) ?? this.since;
    let gapMs = now - last;
    if (this.finishes.length >= 2) {
      const mean = (last - this.finishes[0]) / (this.finishes.length - 1);
      gapMs = Math.max(gapMs, mean);
    }
    const seconds = Math.ceil(gapMs / 1000);
    return Math.min(MAX_RETRY_AFTER_S, Math.max(MIN_RETRY_AFTER_S, seconds));
  }

  /** Takes back what was stored: the queued tasks (oldest first) and the count of those running. */
  restore(queued: T[], running: number): void {
    this.queue.push(...[...queued].sort((a, b) => a.state.created_at - b.state.created_at));
    this.running = running;
  }

  enqueue(task: T): void {
    this.queue.push(task);
  }

  /** A task starts without waiting. */
  started(): void {
    this.running++;
  }

  /** The next queued task that may start now (counted as running), if any. */
  next(): T | undefined {
    while (this.running < this.maxInFlight && this.queue.length > 0) {
      const task = this.queue.shift()!;
      if (isTerminal(task.state.status)) continue;
      this.running++;
      task.state.queued = undefined;
      return task;
    }
    return undefined;
  }

  /** A task ended: it frees its place, running or queued. */
  finished(task: T): void {
    this.finishes.push(this.now());
    if (this.finishes.length > PACE_WINDOW) this.finishes.shift();
    if (!task.state.queued) {
      this.running = Math.max(0, this.running - 1);
    } else {
      const at = this.queue.indexOf(task);
      if (at >= 0) this.queue.splice(at, 1);
    }
  }

  get queued(): number {
    return this.queue.length;
  }

  get inFlight(): number {
    return this.running;
  }
}
