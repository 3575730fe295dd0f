import { describe, expect, it } from "vitest";
import { TASK_DEADLINE, TaskTimers } from "../src/scheduler/task-timers.js";

const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("task timers", () => {
  it("one timer per key: arming a key again replaces its timer", async () => {
    const timers = new TaskTimers(Date.now);
    const fired: string[] = [];
    const key = { kind: "attempt-deadline", work: { step: "a" } } as const;
    timers.arm(key, Date.now() + 5, () => fired.push("first"));
    timers.arm(key, Date.now() + 5, () => fired.push("second"));
    timers.arm(TASK_DEADLINE, Date.now() + 5, () => fired.push("task"));
    await tick(60);
    expect(fired.sort()).toEqual(["second", "task"]);
  });

  it("clearWork clears the deadline, retry and wait of one step and nothing else", async () => {
    const timers = new TaskTimers(Date.now);
    const fired: string[] = [];
    const at = Date.now() + 5;
    for (const kind of ["attempt-deadline", "retry", "wait"] as const) {
      timers.arm({ kind, work: { step: "a" } }, at, () => fired.push(`a ${kind}`));
      timers.arm({ kind, work: { step: "b" } }, at, () => fired.push(`b ${kind}`));
    }
    // A compensation's key never collides with a step's, whatever the step is called.
    timers.arm({ kind: "retry", work: { compensation: 0 } }, at, () => fired.push("comp 0 retry"));
    timers.arm({ kind: "retry", work: { step: "0" } }, at, () => fired.push("step 0 retry"));
    timers.clearWork({ step: "a" });
    await tick(60);
    expect(fired.sort()).toEqual(["b attempt-deadline", "b retry", "b wait", "comp 0 retry", "step 0 retry"]);
  });

  it("clearAll stops every timer", async () => {
    const timers = new TaskTimers(Date.now);
    let fired = 0;
    timers.arm(TASK_DEADLINE, Date.now() + 5, () => fired++);
    timers.arm({ kind: "wait", work: { compensation: 1 } }, Date.now() + 5, () => fired++);
    timers.clearAll();
    await tick(60);
    expect(fired).toBe(0);
  });
});
