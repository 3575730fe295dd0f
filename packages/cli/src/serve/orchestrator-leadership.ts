import type { Logger } from "@mq9/broker";
import type { ClusterLock } from "@mq9/broker/internal";
import type { ServeOrchestrator } from "./orchestrator.js";

const TRY_EVERY_MS = 2_000;

/** What leadership needs of a lock: a cluster's PostgreSQL lock, or SOLE_BROKER's. */
export type LeadershipLock = Pick<ClusterLock, "held" | "onLost" | "close">;

/** A broker that shares its store with no other always leads. */
export const SOLE_BROKER: LeadershipLock = {
  held: async () => true,
  onLost: () => {},
  close: async () => {},
};

/**
 * In a cluster the orchestrator runs on one node at a time: the holder of its PostgreSQL lock.
 * The other nodes keep trying, and the first to get the lock after the holder dies starts it;
 * the orchestrator then loads every stored task and resumes the unfinished ones (task state is
 * written before each dispatch, so no step runs twice). A holder that loses the lock stops its
 * orchestrator at once. A start that fails (the broker slow to answer under load, say) is tried
 * again while this node holds the lock: otherwise the holder would run nothing, and keep others
 * out. So is one whose thread stops after a good start. A broker on a store of its own leads
 * alone (SOLE_BROKER), with the same retries.
 * The API routes exist on every node and answer 503 where it is not running.
 */
export class OrchestratorLeadership {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private stopped = false;
  private looking = false;

  constructor(
    private readonly lock: LeadershipLock,
    private readonly orchestrator: Pick<ServeOrchestrator, "close" | "onLost">,
    private readonly logger: Logger,
  ) {
    orchestrator.onLost((err) => {
      if (!this.running || this.stopped) return;
      this.logger.error(`${err.message}; starts it again in ${TRY_EVERY_MS / 1000} s`);
      this.running = undefined;
    });
    lock.onLost(() => {
      if (!this.running) return;
      this.logger.warn("orchestrator: lost its cluster lock; stopping it on this node");
      const stopping = this.running.then(() => this.orchestrator.close()).catch(() => {});
      this.running = undefined;
      void stopping;
    });
  }

  /** Starts trying for the lock; `start` runs the orchestrator once this node holds it. */
  begin(start: () => Promise<void>): void {
    const attempt = async () => {
      if (this.stopped || this.running || this.looking) return;
      // One look at a time: two starts would run two orchestrators on this node.
      this.looking = true;
      const held = await this.lock.held().finally(() => {
        this.looking = false;
      });
      if (!held || this.stopped || this.running) return;
      const running = start().catch((err: Error) => {
        this.logger.error(
          { err },
          `the orchestrator did not start: ${err.message}; tries again in ${TRY_EVERY_MS / 1000} s`,
        );
        if (this.running === running) this.running = undefined;
      });
      this.running = running;
    };
    void attempt();
    this.timer = setInterval(() => void attempt(), TRY_EVERY_MS);
    this.timer.unref();
  }

  /** Whether the orchestrator runs on this node now. */
  get leading(): boolean {
    return this.running !== undefined;
  }

  async close(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running?.catch(() => {});
    await this.orchestrator.close().catch(() => {});
    await this.lock.close();
  }
}
