import type { MetricsSnapshot } from "@mq9/orchestrator";
import { Counter, Gauge, type Registry } from "prom-client";

export type PromRegistry = Registry;

/** Keeps one snapshot for the collectors of one scrape (they run together). */
function shared(
  read: () => MetricsSnapshot | Promise<MetricsSnapshot> | undefined,
): () => Promise<MetricsSnapshot | undefined> {
  let last: { at: number; value: Promise<MetricsSnapshot | undefined> } | undefined;
  return () => {
    const now = Date.now();
    if (!last || now - last.at > 250) {
      last = { at: now, value: Promise.resolve(read()).catch(() => undefined) };
    }
    return last.value;
  };
}

/**
 * Puts the orchestrator's numbers on the broker's /metrics: tasks by state, step
 * durations, dispatches by route layer, dead letters by reason, loop stops and the queue.
 * They are read from the orchestrator's thread at each scrape.
 */
export function exportOrchestratorMetrics(
  registry: Registry,
  read: () => MetricsSnapshot | Promise<MetricsSnapshot> | undefined,
): void {
  const snapshot = shared(read);
  const labelled = (
    kind: "gauge" | "counter",
    name: string,
    help: string,
    label: string,
    pick: (m: MetricsSnapshot) => Record<string, number>,
  ) => {
    const Type = kind === "gauge" ? Gauge : Counter;
    new Type({
      name,
      help,
      labelNames: [label],
      registers: [registry],
      async collect() {
        const m = await snapshot();
        this.reset();
        if (!m) return;
        for (const [key, value] of Object.entries(pick(m))) {
          if (this instanceof Gauge) this.set({ [label]: key }, value);
          else (this as Counter).inc({ [label]: key }, value);
        }
      },
    });
  };
  labelled(
    "gauge",
    "mq9_orchestrator_tasks",
    "tasks held now, by state (queued: accepted, not started)",
    "state",
    (m) => m.tasks,
  );
  labelled(
    "counter",
    "mq9_orchestrator_tasks_finished_total",
    "tasks that ended, by final state",
    "state",
    (m) => m.tasksFinished,
  );
  labelled(
    "counter",
    "mq9_orchestrator_steps_finished_total",
    "steps that ended, by state",
    "state",
    (m) => m.stepsFinished,
  );
  labelled(
    "counter",
    "mq9_orchestrator_dispatches_total",
    "messages handed to agents, by route layer",
    "layer",
    (m) => m.dispatches,
  );
  labelled(
    "counter",
    "mq9_orchestrator_dead_letters_total",
    "messages nobody could take, by reason",
    "reason",
    (m) => m.deadLetters,
  );
  labelled(
    "counter",
    "mq9_orchestrator_loop_stops_total",
    "messages stopped by a loop guard, by guard",
    "guard",
    (m) => m.loopStops,
  );
  labelled(
    "gauge",
    "mq9_orchestrator_step_duration_ms",
    "duration of recent finished steps (ms), by quantile",
    "quantile",
    (m) => ({
      "0.5": m.stepLatency.p50,
      "0.9": m.stepLatency.p90,
      "0.99": m.stepLatency.p99,
    }),
  );
  const single = (name: string, help: string, pick: (m: MetricsSnapshot) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      async collect() {
        const m = await snapshot();
        this.set(m ? pick(m) : 0);
      },
    });
  single("mq9_orchestrator_queue_depth", "tasks accepted and waiting to start", (m) => m.queueDepth);
  single(
    "mq9_orchestrator_tasks_waiting_for_agent",
    "tasks with a step waiting for an agent",
    (m) => m.waiting,
  );
  single(
    "mq9_orchestrator_step_duration_ms_count",
    "finished steps with a duration",
    (m) => m.stepLatency.count,
  );
  single(
    "mq9_orchestrator_step_duration_ms_sum",
    "sum of finished steps' durations (ms)",
    (m) => m.stepLatency.sumMs,
  );
}
