/**
 * An AbortController made only when a handler reads its signal: most handlers
 * never do, and creating one (an EventTarget) costs more than routing a message.
 */
export class LazyAbort {
  private controller?: AbortController;
  private earlyReason?: unknown;
  private abortedEarly = false;

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortedEarly) this.controller.abort(this.earlyReason);
    }
    return this.controller.signal;
  }

  /** Why it was aborted; undefined while it was not. */
  get reason(): unknown {
    return this.controller ? this.controller.signal.reason : this.earlyReason;
  }

  get aborted(): boolean {
    return this.controller ? this.controller.signal.aborted : this.abortedEarly;
  }

  /** Aborts with `reason`; the first abort wins, as with an AbortController. */
  abort(reason: unknown): void {
    if (this.controller) {
      this.controller.abort(reason);
      return;
    }
    if (this.abortedEarly) return;
    this.abortedEarly = true;
    this.earlyReason = reason;
  }
}
