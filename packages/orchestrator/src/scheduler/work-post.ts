import {
  cancelKey,
  controlMailbox,
  createEnvelope,
  type Envelope,
  queryKey,
  replyKey,
  sendEnvelope,
} from "@mq9/agent/internal";
import { type Mq9Client, Mq9Error, type Mq9Message } from "@mq9/client";
import type { Dispatch, TaskState } from "./task-state.js";
import { ORCHESTRATOR } from "./work-spec.js";

/**
 * The messages of tasks' work on the bus: each attempt goes to its agent's mailbox under a
 * key made of its msg_id, so a restarted scheduler can look it up instead of sending it
 * twice, and find its reply in the inbox by the same id.
 */
export class WorkPost {
  constructor(
    private readonly client: Mq9Client,
    /** The orchestrator's inbox, where replies come. */
    private readonly inbox: string,
    /** Seconds a message is kept in an agent's mailbox. */
    private readonly messageTtlS: number,
    private readonly report: (error: Error) => void,
  ) {}

  /** Sends one attempt to its agent's mailbox. */
  async send(mailbox: string, envelope: Envelope): Promise<void> {
    await sendEnvelope(this.client, mailbox, envelope, {
      key: queryKey(envelope.msg_id),
      ttl: this.messageTtlS,
    });
  }

  /**
   * Whether the attempt is in its agent's mailbox (not, when the mailbox is gone). Any other
   * failed look throws rather than answering "no": sending again on a guess could run a step twice.
   */
  async isPosted(dispatch: Dispatch): Promise<boolean> {
    try {
      const stored = await this.client.query(dispatch.mailbox, { key: queryKey(dispatch.msg_id) });
      return stored.length > 0;
    } catch (err) {
      if (err instanceof Mq9Error && err.code === "MAILBOX_NOT_FOUND") return false;
      throw err;
    }
  }

  /** The reply to an attempt waiting in the inbox, if any. */
  async storedReply(dispatch: Dispatch): Promise<Mq9Message | undefined> {
    const [reply] = await this.client.query(this.inbox, { key: replyKey(dispatch.msg_id) });
    return reply;
  }

  /** Tells the agent to drop an attempt that no longer counts; a failure is reported, not thrown. */
  cancel(task: TaskState, dispatch: Dispatch): void {
    const cancel = createEnvelope({
      msg_type: "cancel",
      source: ORCHESTRATOR,
      target: dispatch.agent,
      payload: { msg_id: dispatch.msg_id },
      trace_id: task.trace_id,
      priority: "critical",
      task_id: task.task_id,
    });
    // Keyed and kept as long as the work it cancels, so an agent that was down when it was
    // sent finds it when that work reaches it after a restart, and drops the work.
    sendEnvelope(this.client, controlMailbox(dispatch.mailbox), cancel, {
      key: cancelKey(dispatch.msg_id),
      ttl: this.messageTtlS,
    }).catch((err) => {
      // An agent without a control mailbox (not built on the Agent SDK) cannot be told; its answer is ignored.
      if (!(err instanceof Mq9Error) || err.code !== "MAILBOX_NOT_FOUND") {
        this.report(new Error(`could not tell ${dispatch.agent} to cancel: ${(err as Error).message}`));
      }
    });
  }
}
