import { type AgentReportRequest, Mq9Error } from "@mq9/protocol";
import { type ClientLogger, stderrLogger } from "./logger.js";

/** Options of `Mq9Client.heartbeat`. */
export interface HeartbeatOptions {
  /** The agent's name, as registered. */
  name?: string;
  /** The agent's mailbox, as registered (name and/or mailbox identify it). */
  mailbox?: string;
  /** Time between REPORTs (default 30 000, what the A2A agents use). */
  intervalMs?: number;
  /** Status text sent as `report_info`, or a function that returns it at each beat. */
  reportInfo?: string | (() => string | Promise<string>);
  /** Further keys sent with every REPORT. */
  extra?: Record<string, unknown>;
  /** A failed REPORT; the heartbeat keeps going. Default: a line to the client's logger. */
  onError?: (error: Error) => void;
}

/** Sends AGENT.REPORT now and then every interval until `stop()`, so the registry sees the agent alive. */
export class Heartbeat {
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  private stopped = false;
  private sentCount = 0;
  private readonly intervalMs: number;

  constructor(
    private readonly report: (body: AgentReportRequest) => Promise<void>,
    private readonly options: HeartbeatOptions,
    private readonly onStopped: () => void = () => {},
    private readonly logger: ClientLogger = stderrLogger,
  ) {
    if (options.name === undefined && options.mailbox === undefined) {
      throw new Mq9Error("INVALID_REQUEST", "a heartbeat needs the agent's name or mailbox", {
        retryable: false,
      });
    }
    this.intervalMs = options.intervalMs ?? 30_000;
    this.beat();
  }

  /** REPORTs the broker has confirmed so far. */
  get sent(): number {
    return this.sentCount;
  }

  /** Stops the timer and waits for a REPORT that is in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.onStopped();
    await this.inFlight;
  }

  private beat(): void {
    // Chained timeouts, not setInterval: a slow broker never gets overlapping REPORTs.
    this.inFlight = this.sendOnce().finally(() => {
      this.inFlight = undefined;
      if (!this.stopped) this.timer = setTimeout(() => this.beat(), this.intervalMs);
    });
  }

  private async sendOnce(): Promise<void> {
    const { name, mailbox, reportInfo, extra, onError } = this.options;
    try {
      const body: AgentReportRequest = { ...extra };
      if (name !== undefined) body.name = name;
      if (mailbox !== undefined) body.mailbox = mailbox;
      if (reportInfo !== undefined) {
        body.report_info = typeof reportInfo === "function" ? await reportInfo() : reportInfo;
      }
      await this.report(body);
      this.sentCount++;
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      if (onError) onError(error);
      else this.logger.warn(`mq9 heartbeat of ${name ?? mailbox}: ${error.message}`);
    }
  }
}
