import { describe, expect, it } from "vitest";
import { OrchestratorError } from "../src/errors.js";
import { type AdmittedTask, TaskAdmission } from "../src/scheduler/task-admission.js";

/** A task as far as admission reads it. */
const task = (): AdmittedTask => ({ state: { status: "running" } }) as unknown as AdmittedTask;

/** The Retry-After of the QUEUE_FULL a full admission throws. */
function refusal(admission: TaskAdmission): number | undefined {
  try {
    admission.mustQueue();
  } catch (err) {
    expect(err).toBeInstanceOf(OrchestratorError);
    const { code, message, retryAfterSeconds } = err as OrchestratorError;
    expect(code).toBe("QUEUE_FULL");
    expect(message).toMatch(new RegExp(`; try again in ${retryAfterSeconds} s$`));
    return retryAfterSeconds;
  }
  throw new Error("a full queue accepted a task");
}

describe("task admission", () => {
  it("refuses beyond the queue with a Retry-After at the pace tasks end", () => {
    let now = 0;
    const admission = new TaskAdmission(1, 1, () => now);
    const running = task();
    expect(admission.mustQueue()).toBe(false);
    admission.started();
    expect(admission.mustQueue()).toBe(true);
    admission.enqueue(task());
    // Nothing has ended since the start, 4.2 s ago: come back in 5 s, not every second.
    now = 4_200;
    expect(refusal(admission)).toBe(5);
    // Tasks end every 3 s: a place frees about that often.
    for (let i = 0; i < 4; i++) {
      now += 3_000;
      admission.finished(running);
      admission.started();
    }
    now += 500;
    expect(refusal(admission)).toBe(3);
    // A queue that stopped moving: the time since the last end, at most a minute.
    now += 20_000;
    expect(refusal(admission)).toBe(21);
    now += 600_000;
    expect(refusal(admission)).toBe(60);
  });

  it("a queue that moves fast says to come back in a second, never at once", () => {
    let now = 0;
    const admission = new TaskAdmission(1, 0, () => now);
    const running = task();
    admission.started();
    for (let i = 0; i < 20; i++) {
      now += 10;
      admission.finished(running);
      admission.started();
    }
    expect(refusal(admission)).toBe(1);
  });
});
