import { OrchestratorError } from "../errors.js";
import type { TaskRecord } from "./task-record.js";
import { isTerminal } from "./task-state.js";

/** Finishes remembered to tell the pace at which places free up. */
const PACE_WINDOW = 16;
/** Retry-After bounds: never "now", and never so late that a client gives up on a busy but moving queue. */
const MIN_RETRY_AFTER_S = 1;
const MAX_RETRY_AFTER_S = 60;

/**
 * How many tasks run at once: up to `maxInFlight`, later ones wait in a queue (pending,
 * `queued`) of at most `capacity`, beyond which a submission is refused with QUEUE_FULL.
 */
export class TaskAdmission {
  /** Accepted tasks not started yet, oldest first. */
  private readonly queue: TaskRecord[] = [];
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
  restore(queued: TaskRecord[], running: number): void {
    this.queue.push(...[...queued].sort((a, b) => a.state.created_at - b.state.created_at));
    this.running = running;
  }

  enqueue(record: TaskRecord): void {
    this.queue.push(record);
  }

  /** A task starts without waiting. */
  started(): void {
    this.running++;
  }

  /** The next queued task that may start now (counted as running), if any. */
  next(): TaskRecord | undefined {
    while (this.running < this.maxInFlight && this.queue.length > 0) {
      const record = this.queue.shift()!;
      if (isTerminal(record.state.status)) continue;
      this.running++;
      record.state.queued = undefined;
      return record;
    }
    return undefined;
  }

  /** A task ended: it frees its place, running or queued. */
  finished(record: TaskRecord): void {
    this.finishes.push(this.now());
    if (this.finishes.length > PACE_WINDOW) this.finishes.shift();
    if (!record.state.queued) {
      this.running = Math.max(0, this.running - 1);
    } else {
      const at = this.queue.indexOf(record);
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
