import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Orchestrator } from "../src/index.js";
import { startWorld, type World } from "./harness.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("capability routing by weight and work in progress (real agents)", () => {
  let world: World;
  let orchestrator: Orchestrator;

  beforeAll(async () => {
    world = await startWorld({
      templates: {
        "w.yaml": "task_type: w\nsteps:\n  - id: work\n    capability: w.work\n    timeout: 60s\n",
        "s.yaml": "task_type: s\nsteps:\n  - id: work\n    capability: s.work\n    timeout: 60s\n",
      },
    });
    orchestrator = await world.startOrchestrator();
    const work = (ms: number) => async () => {
      await sleep(ms);
      return "done";
    };
    await world.agent({ name: "w-heavy", capabilities: ["w.work"], weight: 3, max_concurrency: 4 }, work(5));
    await world.agent({ name: "w-light", capabilities: ["w.work"], weight: 1, max_concurrency: 4 }, work(5));
    await world.agent({ name: "s-fast", capabilities: ["s.work"], max_concurrency: 2 }, work(5));
    await world.agent({ name: "s-slow", capabilities: ["s.work"], max_concurrency: 2 }, work(300));
  });
  afterAll(() => world.close());

  /** n tasks: all at once (a burst), one at a time, or from `clients` clients each waiting for its last. */
  async function run(type: string, n: number, burst: boolean, clients = 1): Promise<Record<string, number>> {
    const one = async () => {
      const task = await orchestrator.submit(type, {});
      const done = await orchestrator.wait(task.task_id, 60_000);
      expect(done.status).toBe("completed");
      return done.steps.work.agent!;
    };
    const names: string[] = [];
    if (burst) names.push(...(await Promise.all(Array.from({ length: n }, one))));
    else {
      await Promise.all(
        Array.from({ length: clients }, async () => {
          for (let i = 0; i < n / clients; i++) names.push(await one());
        }),
      );
    }
    const counts: Record<string, number> = {};
    for (const name of names) counts[name] = (counts[name] ?? 0) + 1;
    return counts;
  }

  it("weights 3 and 1 get 3:1 of 400 tasks one at a time and all at once; load is work in progress", async () => {
    for (const burst of [false, true]) {
      const counts = await run("w", 400, burst);
      expect(counts["w-heavy"]).toBeGreaterThanOrEqual(255);
      expect(counts["w-heavy"]).toBeLessThanOrEqual(345);
    }
    // Everything was answered: no work in progress is left counted.
    expect(
      orchestrator
        .agents()
        .filter((a) => a.name.startsWith("w-"))
        .map((a) => a.inFlight),
    ).toEqual([0, 0]);
  }, 120_000);

  it("under a steady load, a slow replica gets less work than a fast one", async () => {
    const counts = await run("s", 60, false, 4);
    expect(counts["s-fast"]).toBeGreaterThan(2 * (counts["s-slow"] ?? 0));
  }, 120_000);
});
