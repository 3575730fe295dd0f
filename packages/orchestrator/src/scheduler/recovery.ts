import { type Envelope, queryKey, readEnvelope, replyKey, sendEnvelope } from "@mq9/agent/internal";
import type { Mq9Client } from "@mq9/client";
import type { TaskTemplate } from "../templates/task-template.js";
import { parseTemplate } from "../templates/template-loader.js";
import type { TaskRecord } from "./task-record.js";
import { isTerminal, moveWork, type TaskState, type WorkState } from "./task-state.js";
import type { WorkSpec } from "./work-spec.js";

/** Where a restarted scheduler finds the templates its stored tasks started with. */
export interface TemplateSource {
  get(name: string): TaskTemplate | undefined;
}

/**
 * The version of a stored task's template it started with: the loaded one while it is
 * unchanged, else the text the task kept. So editing `depends_on` (or anything else) never
 * changes what the steps of a task already under way receive; new tasks use the new version.
 */
export function templateOf(templates: TemplateSource, state: TaskState): TaskTemplate | undefined {
  const current = templates.get(state.task_type);
  if (state.template_source === undefined || current?.source === state.template_source) return current;
  const parsed = parseTemplate(
    state.template_source,
    current?.file ?? `${state.task_type} (as the task started)`,
  );
  return parsed.template ?? current;
}

/** What recovery needs of the scheduler: the steps of its ordinary path, run in the task's chain. */
export interface RecoveryHost {
  client: Mq9Client;
  inbox: string;
  messageTtlS: number;
  now(): number;
  specs(record: TaskRecord, unfinished: boolean): { work: WorkState; spec: WorkSpec }[];
  endTask(record: TaskRecord, status: "failed", reason: string): void;
  settle(record: TaskRecord): Promise<void>;
  attemptFailed(record: TaskRecord, work: WorkState, spec: WorkSpec, outcome: "failed", reason: string): void;
  applyReply(record: TaskRecord, envelope: Envelope): boolean;
  track(work: WorkState, traceId: string, hops: number): void;
  armAttemptDeadline(record: TaskRecord, work: WorkState, spec: WorkSpec): void;
  armTaskDeadline(record: TaskRecord): void;
  report(error: Error): void;
}

/**
 * Picks a stored task up again. Work whose dispatch was written but maybe not sent
 * is looked up in the agent's mailbox by its key and sent only if it is not there;
 * work in flight looks for its reply in the inbox. Nothing runs twice.
 */
export async function resume(host: RecoveryHost, record: TaskRecord): Promise<void> {
  const { state } = record;
  const unfinished = !isTerminal(state.status);
  if (!unfinished && state.compensation_status !== "running") return;
  const problem = !record.template
    ? `its template '${state.task_type}' is not loaded any more`
    : record.template.order.some((id) => !state.steps[id])
      ? `template '${state.task_type}' changed its steps while the task ran`
      : undefined;
  if (problem) {
    if (unfinished) {
      record.template = undefined;
      host.endTask(record, "failed", problem);
    } else {
      state.compensation_status = "failed";
      state.error = `${state.error ?? ""}; compensation stopped: ${problem}`;
    }
    await host.settle(record);
    return;
  }
  for (const { work, spec } of host.specs(record, unfinished)) {
    if (work.dispatch && (work.status === "dispatching" || work.status === "running"))
      await recover(host, record, work, spec);
  }
  if (unfinished && state.deadline) host.armTaskDeadline(record);
  await host.settle(record);
}

/** One piece of work that was in flight when the scheduler stopped. */
async function recover(
  host: RecoveryHost,
  record: TaskRecord,
  work: WorkState,
  spec: WorkSpec,
): Promise<void> {
  const dispatch = work.dispatch!;
  if (work.status === "dispatching") {
    const stored = await host.client
      .query(dispatch.mailbox, { key: queryKey(dispatch.msg_id) })
      .catch(() => []);
    if (stored.length === 0) {
      const envelope = spec.envelope(dispatch.msg_id, dispatch.created_at, dispatch.agent);
      try {
        await sendEnvelope(host.client, dispatch.mailbox, envelope, {
          key: queryKey(dispatch.msg_id),
          ttl: host.messageTtlS,
        });
      } catch (err) {
        host.attemptFailed(record, work, spec, "failed", `could not send it: ${(err as Error).message}`);
        return;
      }
    }
    moveWork(work, "running", host.now(), spec.label);
  }
  host.track(work, record.state.trace_id, 0);
  const [reply] = await host.client.query(host.inbox, { key: replyKey(dispatch.msg_id) });
  if (reply) {
    try {
      if (host.applyReply(record, readEnvelope(reply))) return;
    } catch (err) {
      host.report(err as Error);
    }
  }
  host.armAttemptDeadline(record, work, spec);
}
