import type { Logger } from "@mq9/broker";
import type { ClusterLock } from "@mq9/broker/internal";
import type { ServeOrchestrator } from "./orchestrator.js";

const TRY_EVERY_MS = 2_000;

/**
 * In a cluster the orchestrator runs on one node at a time: the holder of its PostgreSQL lock.
 * The other nodes keep trying, and the first to get the lock after the holder dies starts it;
 * the orchestrator then loads every stored task and resumes the unfinished ones (task state is
 * written before each dispatch, so no step runs twice). A holder that loses the lock stops its
 * orchestrator at once. The API routes exist on every node and answer 503 where it is not running.
 */
export class OrchestratorLeadership {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private stopped = false;

  constructor(
    private readonly lock: ClusterLock,
    private readonly orchestrator: ServeOrchestrator,
    private readonly logger: Logger,
  ) {
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
      if (this.stopped || this.running) return;
      if (!(await this.lock.held()) || this.stopped) return;
      this.running = start().catch((err: Error) => {
        this.logger.error({ err }, `the orchestrator did not start: ${err.message}`);
      });
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
