import type { Router } from "../routing/router.js";
import type { WorkState } from "./task-state.js";

/**
 * Dispatches counted into an agent's work in progress, by msg_id: counted once when sent
 * (or found in flight after a restart) and released once when they end, however they end,
 * so the router's load is work in progress and its latency samples are whole round trips.
 */
export class WorkInProgress {
  private readonly tracked = new Map<string, { agent: string; sentAtMs: number; ahead: number }>();

  constructor(
    private readonly router: Router,
    private readonly now: () => number,
  ) {}

  /** Counts the dispatch of `work` (already set) into its agent's load. */
  track(work: WorkState, traceId: string, hops: number): void {
    const dispatch = work.dispatch!;
    if (this.tracked.has(dispatch.msg_id)) return;
    const ahead = this.router.loadOf(dispatch.agent);
    this.tracked.set(dispatch.msg_id, { agent: dispatch.agent, sentAtMs: this.now(), ahead });
    this.router.noteSent(dispatch.agent, traceId, hops);
  }

  /** The dispatch of `work` ended; true when it was counted (its agent's load dropped). */
  release(work: WorkState): boolean {
    const msgId = work.dispatch?.msg_id;
    if (msgId === undefined) return false;
    const sent = this.tracked.get(msgId);
    if (sent === undefined) return false;
    this.tracked.delete(msgId);
    this.router.answered(sent.agent, this.now() - sent.sentAtMs, sent.ahead);
    return true;
  }
}
