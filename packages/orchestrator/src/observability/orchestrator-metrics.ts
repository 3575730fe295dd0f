import type { DeadKind, RouteLayer } from "../routing/router.js";
import { LatencySample } from "../routing/router.js";
import type { TaskState } from "../scheduler/task-state.js";

/** The orchestrator's numbers at one moment, as `/metrics` shows them (see prometheusText). */
export interface MetricsSnapshot {
  /** Tasks held now, by state (`queued` = accepted, not started). */
  tasks: Record<string, number>;
  /** Tasks that ended since the start, by final state. */
  tasksFinished: Record<string, number>;
  /** Steps that ended since the start, by state. */
  stepsFinished: Record<string, number>;
  /** Duration of finished steps (ms): count, sum and percentiles of the recent ones. */
  stepLatency: { count: number; sumMs: number; p50: number; p90: number; p99: number };
  /** Messages handed to agents since the start, by route layer. */
  dispatches: Record<string, number>;
  deadLetters: Record<string, number>;
  loopStops: Record<string, number>;
  queueDepth: number;
  /** Tasks with a step waiting for an agent. */
  waiting: number;
}

/** Counters kept by the orchestrator; plain numbers, so any exporter can read them. */
export class OrchestratorMetrics {
  private readonly finished: Record<string, number> = {};
  private readonly steps: Record<string, number> = {};
  private readonly layers: Record<string, number> = {};
  private readonly dead: Record<string, number> = {};
  private readonly loops: Record<string, number> = {};
  private readonly latency = new LatencySample(10_000);
  private stepCount = 0;
  private stepSumMs = 0;

  taskFinished(task: TaskState): void {
    bump(this.finished, task.status);
  }

  stepFinished(status: string, durationMs: number | undefined): void {
    bump(this.steps, status);
    if (durationMs === undefined) return;
    this.stepCount++;
    this.stepSumMs += durationMs;
    this.latency.add(durationMs);
  }

  dispatched(layer: RouteLayer): void {
    bump(this.layers, layer);
  }

  deadLetter(kind: DeadKind): void {
    bump(this.dead, kind);
  }

  loopStopped(kind: DeadKind): void {
    bump(this.loops, kind);
  }

  snapshot(live: { tasks: Record<string, number>; queueDepth: number; waiting: number }): MetricsSnapshot {
    const p = (q: number) => (this.latency.count === 0 ? 0 : this.latency.percentile(q));
    return {
      tasks: live.tasks,
      tasksFinished: { ...this.finished },
      stepsFinished: { ...this.steps },
      stepLatency: { count: this.stepCount, sumMs: this.stepSumMs, p50: p(50), p90: p(90), p99: p(99) },
      dispatches: { ...this.layers },
      deadLetters: { ...this.dead },
      loopStops: { ...this.loops },
      queueDepth: live.queueDepth,
      waiting: live.waiting,
    };
  }
}

function bump(counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1;
}

/** A snapshot in the Prometheus text format (metric names start with `mq9_orchestrator_`). */
export function prometheusText(m: MetricsSnapshot): string {
  const out: string[] = [];
  const family = (
    name: string,
    type: string,
    help: string,
    label: string,
    values: Record<string, number>,
  ) => {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const [key, value] of Object.entries(values)) out.push(`${name}{${label}="${key}"} ${value}`);
  };
  const single = (name: string, type: string, help: string, value: number) => {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, `${name} ${value}`);
  };
  family("mq9_orchestrator_tasks", "gauge", "tasks held now, by state", "state", m.tasks);
  family(
    "mq9_orchestrator_tasks_finished_total",
    "counter",
    "tasks that ended, by final state",
    "state",
    m.tasksFinished,
  );
  family(
    "mq9_orchestrator_steps_finished_total",
    "counter",
    "steps that ended, by state",
    "state",
    m.stepsFinished,
  );
  out.push(
    "# HELP mq9_orchestrator_step_duration_ms duration of finished steps (recent ones for the quantiles)",
    "# TYPE mq9_orchestrator_step_duration_ms summary",
    `mq9_orchestrator_step_duration_ms{quantile="0.5"} ${m.stepLatency.p50}`,
    `mq9_orchestrator_step_duration_ms{quantile="0.9"} ${m.stepLatency.p90}`,
    `mq9_orchestrator_step_duration_ms{quantile="0.99"} ${m.stepLatency.p99}`,
    `mq9_orchestrator_step_duration_ms_sum ${m.stepLatency.sumMs}`,
    `mq9_orchestrator_step_duration_ms_count ${m.stepLatency.count}`,
  );
  family(
    "mq9_orchestrator_dispatches_total",
    "counter",
    "messages handed to agents, by route layer",
    "layer",
    m.dispatches,
  );
  family(
    "mq9_orchestrator_dead_letters_total",
    "counter",
    "messages nobody could take, by reason",
    "reason",
    m.deadLetters,
  );
  family(
    "mq9_orchestrator_loop_stops_total",
    "counter",
    "messages stopped by a loop guard, by guard",
    "guard",
    m.loopStops,
  );
  single("mq9_orchestrator_queue_depth", "gauge", "tasks accepted and waiting to start", m.queueDepth);
  single(
    "mq9_orchestrator_tasks_waiting_for_agent",
    "gauge",
    "tasks with a step waiting for an agent",
    m.waiting,
  );
  return `${out.join("\n")}\n`;
}
