import type {
  DeadLetter,
  StepState,
  TaskState,
  TaskSummary,
  TemplateProblem,
  TemplateSummary,
  TraceView,
} from "@mq9/orchestrator/api";
import { TASK_STATUSES } from "@mq9/orchestrator/api";
import { useState } from "preact/hooks";
import { type ApiFailure, api } from "../api";
import { Dag } from "../components/dag";
import { Failure, Loading } from "../components/notice";
import { duration, time } from "../format";
import { useLiveGet } from "../live";

const SINCE = [
  [0, "any time"],
  [15 * 60, "last 15 min"],
  [3600, "last hour"],
  [86_400, "last day"],
  [7 * 86_400, "last week"],
] as const;

/** Tasks with state, template and duration, filtered by template, state and time; dead letters with their reasons. */
export function Tasks() {
  const [status, setStatus] = useState("");
  const [template, setTemplate] = useState("");
  const [since, setSince] = useState(0);
  const tasks = useLiveGet<{ tasks: TaskSummary[] }>(
    `/api/v1/tasks?limit=1000${status ? `&status=${status}` : ""}`,
  );
  const dead = useLiveGet<{ dead_letters: DeadLetter[] }>("/api/v1/dead-letters?limit=50");
  const templates = [...new Set((tasks.data?.tasks ?? []).map((t) => t.task_type))].sort();
  const shown = (tasks.data?.tasks ?? []).filter(
    (t) =>
      (!template || t.task_type === template) && (since === 0 || t.created_at >= Date.now() - since * 1000),
  );
  return (
    <section>
      <h2>Tasks</h2>
      <div class="row filters" data-testid="task-filters">
        <select
          name="template"
          value={template}
          onChange={(e) => setTemplate((e.target as HTMLSelectElement).value)}
        >
          <option value="">any template</option>
          {templates.map((name) => (
            <option key={name}>{name}</option>
          ))}
        </select>
        <select
          name="status"
          value={status}
          onChange={(e) => setStatus((e.target as HTMLSelectElement).value)}
        >
          <option value="">any state</option>
          {TASK_STATUSES.map((state) => (
            <option key={state}>{state}</option>
          ))}
        </select>
        <select
          name="since"
          value={since}
          onChange={(e) => setSince(Number((e.target as HTMLSelectElement).value))}
        >
          {SINCE.map(([seconds, label]) => (
            <option key={seconds} value={seconds}>
              {label}
            </option>
          ))}
        </select>
      </div>
      <Failure error={tasks.error} />
      {!tasks.data && !tasks.error && <Loading />}
      {tasks.data && (
        <table data-testid="task-table">
          <thead>
            <tr>
              <th>task</th>
              <th>template</th>
              <th>state</th>
              <th>started</th>
              <th>duration</th>
              <th>error</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((t) => (
              <tr key={t.task_id} data-task={t.task_id}>
                <td>
                  <a href={`#/tasks/${encodeURIComponent(t.task_id)}`}>{t.task_id}</a>
                </td>
                <td>{t.task_type}</td>
                <td>
                  <span class={`pill status-${t.status}`}>{t.status}</span>
                </td>
                <td>{time(t.created_at)}</td>
                <td>{duration((t.finished_at ?? Date.now()) - t.created_at)}</td>
                <td class="clip">{t.error ?? ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {tasks.data && shown.length === 0 && (
        <div class="muted">no tasks{tasks.data.tasks.length > 0 && " match"}</div>
      )}
      <h3>Dead letters</h3>
      {dead.data && dead.data.dead_letters.length === 0 && <div class="muted">none</div>}
      {dead.data && dead.data.dead_letters.length > 0 && (
        <table data-testid="dead-letters">
          <tbody>
            {dead.data.dead_letters.map((d, i) => (
              <tr key={d.id ?? i}>
                <td>{time(d.at)}</td>
                <td>{d.reason}</td>
                <td class="muted">
                  {d.envelope ? `${d.envelope.msg_type} ${d.envelope.source} → ${d.envelope.target}` : d.raw}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** The trace as a timeline: one row per message, placed by its time since the first. */
function Timeline({ traceId }: { traceId: string }) {
  const trace = useLiveGet<TraceView>(`/api/v1/traces/${encodeURIComponent(traceId)}`);
  if (trace.error) return <Failure error={trace.error} />;
  if (!trace.data) return <Loading />;
  const span = Math.max(trace.data.duration_ms, 1);
  return (
    <div class="timeline" data-testid="timeline">
      <div class="muted">
        {trace.data.messages.length} messages over {duration(trace.data.duration_ms)}
      </div>
      {trace.data.messages.map((m) => (
        <div
          class={`lane ${m.dead_reason ? "dead" : ""}`}
          key={`${m.msg_id}-${m.mailbox}`}
          data-msg-type={m.msg_type}
        >
          <span class="when">+{duration(m.offset_ms)}</span>
          <span class="what">
            {m.msg_type} {m.step_id ? `[${m.step_id}]` : ""} {m.source} → {m.target}
            {m.hops > 0 ? ` · ${m.hops} hop${m.hops === 1 ? "" : "s"}` : ""}
            {m.dead_reason ? ` · dead: ${m.dead_reason}` : ""}
          </span>
          <span class="track">
            <span class="mark" style={{ left: `${(m.offset_ms / span) * 100}%` }} />
          </span>
        </div>
      ))}
    </div>
  );
}

type Attempt = {
  attempt: number;
  start: number;
  end?: number;
  outcome: string;
  error?: string;
  agent?: string;
};

/** A step's attempts: those finished (its history), then the one in flight. */
function attemptsOf(step: StepState, now: number): Attempt[] {
  const done: Attempt[] = step.history.map((h) => ({
    attempt: h.attempt,
    start: h.started_at,
    end: h.finished_at,
    outcome: h.outcome,
    error: h.error,
    agent: h.agent,
  }));
  if ((step.status === "running" || step.status === "dispatching") && step.attempt_started_at !== undefined) {
    done.push({
      attempt: step.attempts,
      start: step.attempt_started_at,
      end: now,
      outcome: "running",
      agent: step.agent,
    });
  }
  // A step done without dispatching (a merge, a skip) still gets its moment on the timeline.
  if (done.length === 0 && step.started_at !== undefined && step.finished_at !== undefined) {
    done.push({ attempt: 0, start: step.started_at, end: step.finished_at, outcome: step.status });
  }
  return done;
}

/** Each step as a row of bars, one per attempt, from its dispatch to its result, on the task's clock. */
function StepTimeline({ task, onPick }: { task: TaskState; onPick: (step: string) => void }) {
  const now = Date.now();
  const start = task.created_at;
  const end = Math.max(task.finished_at ?? now, start + 1);
  const span = end - start;
  return (
    <div class="timeline gantt" data-testid="step-timeline">
      <div class="muted">
        {task.order.length} steps over {duration(span)}
      </div>
      {task.order.map((id) => {
        const step = task.steps[id];
        if (!step) return null;
        const attempts = attemptsOf(step, now);
        return (
          <div class="lane step-row" key={id} data-step={id} data-status={step.status}>
            <span class="when">{step.status}</span>
            <span class="what">
              <button type="button" class="link" onClick={() => onPick(id)}>
                {id}
              </button>
              {step.agent ? ` · ${step.agent}` : ""}
              {attempts.length > 1 ? ` · ${attempts.length} attempts` : ""}
              {step.started_at !== undefined && step.finished_at !== undefined
                ? ` · ${duration(step.finished_at - step.started_at)}`
                : ""}
            </span>
            <span class="track">
              {attempts.map((a) => (
                <span
                  key={a.attempt}
                  class={`bar outcome-${a.outcome}`}
                  data-attempt={a.attempt}
                  data-outcome={a.outcome}
                  title={`attempt ${a.attempt}: ${a.outcome}${a.error ? ` (${a.error})` : ""}, ${duration((a.end ?? now) - a.start)}`}
                  style={{
                    left: `${((a.start - start) / span) * 100}%`,
                    width: `${Math.max((((a.end ?? now) - a.start) / span) * 100, 0.8)}%`,
                  }}
                />
              ))}
            </span>
          </div>
        );
      })}
    </div>
  );
}

function Json({ value, testId }: { value: unknown; testId?: string }) {
  return <pre data-testid={testId}>{value === undefined ? "—" : JSON.stringify(value, null, 2)}</pre>;
}

/** A step's input (what it read: the outputs of the steps it waits for, or the task's payload), output and last error. */
function StepDetail({ task, id, dependsOn }: { task: TaskState; id: string; dependsOn: string[] }) {
  const step = task.steps[id];
  if (!step) return null;
  const input =
    dependsOn.length === 0
      ? task.payload
      : Object.fromEntries(dependsOn.map((dep) => [dep, task.steps[dep]?.output]));
  const lastError = step.error ?? step.history.filter((h) => h.error).at(-1)?.error;
  return (
    <div class="card" data-testid="step-detail" data-step={id}>
      <h3>
        Step {id} <span class={`pill status-${step.status}`}>{step.status}</span>
      </h3>
      <dl class="facts wide">
        <dt>agent</dt>
        <dd>{step.agent ?? "—"}</dd>
        <dt>attempts</dt>
        <dd>{step.attempts}</dd>
        {step.waiting && (
          <>
            <dt>waiting</dt>
            <dd>{step.waiting}</dd>
          </>
        )}
        <dt>last error</dt>
        <dd data-testid="step-error">{lastError ?? "—"}</dd>
      </dl>
      <h4>
        input {dependsOn.length === 0 ? "(the task's payload)" : `(outputs of ${dependsOn.join(", ")})`}
      </h4>
      <Json value={input} testId="step-input" />
      <h4>output</h4>
      <Json value={step.output} testId="step-output" />
    </div>
  );
}

const FINISHED = new Set(["completed", "failed", "timeout", "canceled"]);

/** One task: its DAG colored by state (live), a timeline per step, a step's input and output, cancel and retry, its trace. */
export function Task({ id }: { id: string }) {
  const task = useLiveGet<TaskState>(`/api/v1/tasks/${encodeURIComponent(id)}`);
  const templates = useLiveGet<{ templates: TemplateSummary[] }>("/api/v1/templates");
  const [picked, setPicked] = useState<string>();
  const [notice, setNotice] = useState<string>();
  const t = task.data;
  const template = templates.data?.templates.find((x) => x.name === t?.task_type);
  // What a step waits for: depends_on (the loader adds what it merges and what its condition reads).
  const dependsOf = (stepId: string) => {
    const spec = template?.steps.find((s) => s.id === stepId) as
      | { depends_on?: string[]; merge?: string[] }
      | undefined;
    return [...new Set([...(spec?.depends_on ?? []), ...(spec?.merge ?? [])])];
  };
  const steps =
    t &&
    (template?.steps.map((s) => s.id) ?? t.order).map((stepId) => ({
      id: stepId,
      dependsOn: dependsOf(stepId),
      status: t.steps[stepId]?.status ?? "pending",
    }));
  const cancel = async () => {
    if (!window.confirm(`Cancel task ${id}? Its running steps are abandoned.`)) return;
    try {
      await api("POST", `/api/v1/tasks/${encodeURIComponent(id)}/cancel`);
      setNotice("canceled");
      task.reload();
    } catch (err) {
      setNotice((err as ApiFailure).message);
    }
  };
  const retry = async () => {
    if (!t || !window.confirm(`Run ${t.task_type} again with the same payload, as a new task?`)) return;
    try {
      const submitted = await api<{ task_id: string }>("POST", "/api/v1/tasks?async=true", {
        task_type: t.task_type,
        payload: t.payload,
      });
      location.hash = `#/tasks/${encodeURIComponent(submitted.task_id)}`;
    } catch (err) {
      setNotice((err as ApiFailure).message);
    }
  };
  return (
    <section>
      <h2>
        <a href="#/tasks">Tasks</a> / {id}
      </h2>
      <Failure error={task.error} />
      {!t && !task.error && <Loading />}
      {t && (
        <>
          <dl class="facts wide">
            <dt>template</dt>
            <dd>{t.task_type}</dd>
            <dt>state</dt>
            <dd data-testid="task-status">
              <span class={`pill status-${t.status}`}>{t.status}</span>
            </dd>
            <dt>duration</dt>
            <dd>{duration((t.finished_at ?? Date.now()) - t.created_at)}</dd>
            <dt>trace</dt>
            <dd>{t.trace_id}</dd>
            {t.error && (
              <>
                <dt>error</dt>
                <dd>{t.error}</dd>
              </>
            )}
            {t.compensation_status && (
              <>
                <dt>compensation</dt>
                <dd>{t.compensation_status}</dd>
              </>
            )}
          </dl>
          <div class="actions">
            {!FINISHED.has(t.status) && (
              <button type="button" class="danger" onClick={cancel} data-testid="cancel-task">
                cancel
              </button>
            )}
            {FINISHED.has(t.status) && (
              <button type="button" onClick={retry} data-testid="retry-task">
                retry (a new task, same payload)
              </button>
            )}
            {notice && <span class="muted">{notice}</span>}
          </div>
          {steps && <Dag steps={steps} testId="task-dag" onPick={setPicked} />}
          <h3>Steps</h3>
          <StepTimeline task={t} onPick={setPicked} />
          {picked && <StepDetail task={t} id={picked} dependsOn={dependsOf(picked)} />}
          <h3>Trace</h3>
          <Timeline traceId={t.trace_id} />
        </>
      )}
    </section>
  );
}

/** The loaded templates, each as its DAG, with load errors where they are. */
export function Templates() {
  const list = useLiveGet<{ templates: TemplateSummary[]; problems?: TemplateProblem[] }>(
    "/api/v1/templates",
  );
  return (
    <section>
      <h2>Templates</h2>
      <Failure error={list.error} />
      {!list.data && !list.error && <Loading />}
      {(list.data?.problems ?? []).map((p) => (
        <div
          class="notice"
          key={`${p.file}:${p.line}:${p.column}`}
          role="alert"
          data-testid="template-problem"
        >
          <span title={p.file}>{p.file.split("/").pop()}</span>:{p.line}:{p.column}: {p.message}
        </div>
      ))}
      {list.data?.templates.length === 0 && <div class="muted">no templates loaded</div>}
      {list.data?.templates.map((template) => (
        <div class="template" key={template.name} data-template={template.name}>
          <h3>{template.name}</h3>
          <div class="muted">
            {template.description}{" "}
            {template.file && <span title={template.file}>({template.file.split("/").pop()})</span>}
          </div>
          <Dag
            steps={template.steps.map((s) => ({
              id: s.id,
              dependsOn: s.depends_on ?? [],
              detail: s.agent ?? s.capability ?? (s.merge ? "merge" : ""),
            }))}
          />
        </div>
      ))}
    </section>
  );
}
