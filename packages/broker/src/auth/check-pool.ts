/** A costly check that was dropped from a full queue without running. */
export class CheckShed extends Error {
  readonly code = "AUTH_THROTTLED";
  constructor() {
    super("auth: too many credential checks waiting; this one was dropped unchecked, try again shortly");
  }
}

interface Waiting {
  rank: number;
  start: () => void;
  shed: () => void;
}

/**
 * Runs costly credential checks (bcrypt) a few at a time, so a flood of guesses cannot take the
 * process's CPU, and serves the queue by rank: names that signed in from the same address before
 * come first, failing names last, first come first served within a rank. A full queue drops its
 * worst-ranked check, which is a guesser's while one is waiting.
 */
export class CheckPool {
  private running = 0;
  private readonly queue: Waiting[] = [];

  constructor(
    private readonly concurrency = 2,
    private readonly maxQueued = 256,
  ) {}

  /** Checks waiting for their turn. */
  get queued(): number {
    return this.queue.length;
  }

  /** Runs `check` when its turn comes; rejects with CheckShed when it is dropped first. */
  run<T>(rank: number, check: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const start = (): void => {
        this.running++;
        check()
          .then(resolve, reject)
          .finally(() => {
            this.running--;
            this.queue.shift()?.start();
          });
      };
      if (this.running < this.concurrency) {
        start();
        return;
      }
      const waiting: Waiting = { rank, start, shed: () => reject(new CheckShed()) };
      let at = this.queue.length;
      while (at > 0 && this.queue[at - 1].rank > rank) at--;
      this.queue.splice(at, 0, waiting);
      if (this.queue.length > this.maxQueued) this.queue.pop()?.shed();
    });
  }
}
