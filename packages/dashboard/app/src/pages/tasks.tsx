import type {
  DeadLetter,
  TaskState,
  TaskSummary,
  TemplateProblem,
  TemplateSummary,
  TraceView,
} from "@mq9/orchestrator/api";
import { Dag } from "../components/dag";
import { Failure, Loading } from "../components/notice";
import { duration, time } from "../format";
import { useLiveGet } from "../live";

/** Tasks with state, template and duration; dead letters with their reasons. */
export function Tasks() {
  const tasks = useLiveGet<{ tasks: TaskSummary[] }>("/api/v1/tasks?limit=200");
  const dead = useLiveGet<{ dead_letters: DeadLetter[] }>("/api/v1/dead-letters?limit=50");
  return (
    <section>
      <h2>Tasks</h2>
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
            {tasks.data.tasks.map((t) => (
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
      {tasks.data?.tasks.length === 0 && <div class="muted">no tasks yet</div>}
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

/** One task: its template's DAG colored by each step's state (live), and its trace. */
export function Task({ id }: { id: string }) {
  const task = useLiveGet<TaskState>(`/api/v1/tasks/${encodeURIComponent(id)}`);
  const templates = useLiveGet<{ templates: TemplateSummary[] }>("/api/v1/templates");
  const t = task.data;
  const template = templates.data?.templates.find((x) => x.name === t?.task_type);
  const steps =
    t &&
    (template?.steps.map((s) => s.id) ?? t.order).map((stepId) => ({
      id: stepId,
      dependsOn: template?.steps.find((s) => s.id === stepId)?.depends_on ?? [],
      status: t.steps[stepId]?.status ?? "pending",
    }));
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
          {steps && <Dag steps={steps} testId="task-dag" />}
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
