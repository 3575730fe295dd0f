import type { MetricsHistory, MetricsSample } from "@mq9/broker/api";
import type { TaskSummary } from "@mq9/orchestrator/api";
import { useEffect, useState } from "preact/hooks";
import { get } from "../api";
import { Chart } from "../components/chart";
import { ClusterNodes } from "../components/cluster-nodes";
import { Failure } from "../components/notice";
import { RangePicker } from "../components/range-picker";
import { bytes, rate } from "../format";
import { useLive, useLiveGet } from "../live";

function Figure({ label, value, id }: { label: string; value: string | number; id: string }) {
  return (
    <div class="figure" data-testid={`figure-${id}`}>
      <div class="value">{value}</div>
      <div class="label">{label}</div>
    </div>
  );
}

/**
 * Connections, rates, what is stored, agents, a cluster's nodes, tasks by state, and charts over a
 * chosen range: the broker's kept history at once, then the live samples.
 */
export function Overview() {
  const { sample } = useLive();
  const [range, setRange] = useState(900);
  const [samples, setSamples] = useState<MetricsSample[]>([]);
  useEffect(() => {
    const aborted = new AbortController();
    get<MetricsHistory>(`/api/v1/metrics/history?range=${range}`, aborted.signal).then(
      (history) => setSamples(history.samples),
      () => {},
    );
    return () => aborted.abort();
  }, [range]);
  useEffect(() => {
    if (!sample) return;
    const since = sample.at - range * 1000;
    setSamples((now) => [...now.filter((s) => s.at < sample.at && s.at >= since), sample]);
  }, [sample]);
  const tasks = useLiveGet<{ tasks: TaskSummary[] }>("/api/v1/tasks?limit=1000");
  const byState = new Map<string, number>();
  for (const task of tasks.data?.tasks ?? []) byState.set(task.status, (byState.get(task.status) ?? 0) + 1);
  const now = sample ?? samples[samples.length - 1];
  const times = samples.map((s) => s.at);
  return (
    <section>
      <h2>Overview</h2>
      {now ? (
        <div class="figures">
          <Figure id="connections" label="connections" value={now.connections} />
          <Figure id="sends" label="SENDs/s" value={rate(now.sends_per_s)} />
          <Figure id="fetches" label="FETCHes/s" value={rate(now.fetches_per_s)} />
          <Figure id="messages" label="stored messages" value={now.messages} />
          <Figure id="bytes" label="stored bytes" value={bytes(now.bytes)} />
          <Figure id="mailboxes" label="mailboxes" value={now.mailboxes} />
          <Figure
            id="agents"
            label="agents online / registered"
            value={now.agents === null ? "registry off" : `${now.agents_online} / ${now.agents}`}
          />
          <Figure id="errors" label="errors/s" value={rate(now.errors_per_s)} />
        </div>
      ) : (
        <div class="muted">waiting for the first sample…</div>
      )}
      <ClusterNodes />
      <h3>Tasks by state</h3>
      <Failure error={tasks.error} />
      {tasks.data && (
        <div class="figures small" data-testid="tasks-by-state">
          {byState.size === 0 && <span class="muted">no tasks yet</span>}
          {[...byState].map(([state, n]) => (
            <Figure key={state} id={`task-${state}`} label={state} value={n} />
          ))}
        </div>
      )}
      <RangePicker range={range} onChange={setRange} />
      <div class="charts">
        <Chart
          id="requests"
          title="requests per second"
          times={times}
          series={[
            { label: "SEND", color: "#3b82f6", values: samples.map((s) => s.sends_per_s) },
            { label: "FETCH", color: "#10b981", values: samples.map((s) => s.fetches_per_s) },
            { label: "errors", color: "#ef4444", values: samples.map((s) => s.errors_per_s) },
          ]}
        />
        <Chart
          id="messages"
          title="stored messages"
          times={times}
          series={[{ label: "messages", color: "#8b5cf6", values: samples.map((s) => s.messages) }]}
        />
        <Chart
          id="connections"
          title="connections"
          times={times}
          series={[{ label: "connections", color: "#f59e0b", values: samples.map((s) => s.connections) }]}
        />
      </div>
    </section>
  );
}
