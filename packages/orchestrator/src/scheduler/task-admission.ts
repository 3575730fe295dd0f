import { OrchestratorError } from "../errors.js";
import type { TaskRecord } from "./task-record.js";
import { isTerminal } from "./task-state.js";

/**
 * How many tasks run at once: up to `maxInFlight`, later ones wait in a queue (pending,
 * `queued`) of at most `capacity`, beyond which a submission is refused with QUEUE_FULL.
 */
export class TaskAdmission {
  /** Accepted tasks not started yet, oldest first. */
  private readonly queue: TaskRecord[] = [];
  /** Started and not finished. */
  private running = 0;

  constructor(
    private readonly maxInFlight: number,
    private readonly capacity: number,
  ) {}

  /** Whether a new task has to wait in the queue; throws QUEUE_FULL when the queue is full too. */
  mustQueue(): boolean {
    const full = this.running >= this.maxInFlight;
    if (full && this.queue.length >= this.capacity) {
      throw new OrchestratorError(
        "QUEUE_FULL",
        `the orchestrator runs ${this.running} tasks (maxTasksInFlight ${this.maxInFlight}) and ${this.queue.length} wait (queueCapacity ${this.capacity}); try again later`,
        { retryAfterSeconds: 1 },
      );
    }
    return full;
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
