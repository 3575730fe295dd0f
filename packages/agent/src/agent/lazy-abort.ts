/**
 * An AbortController made only when a handler reads its signal: most handlers
 * never do, and creating one (an EventTarget) costs more than routing a message.
 */
export class LazyAbort {
  private controller?: AbortController;
  private reason?: unknown;
  private abortedEarly = false;

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortedEarly) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  get aborted(): boolean {
    return this.controller ? this.controller.signal.aborted : this.abortedEarly;
  }

  abort(reason: unknown): void {
    if (this.controller) {
      this.controller.abort(reason);
      return;
    }
    this.abortedEarly = true;
    this.reason = reason;
  }
}
