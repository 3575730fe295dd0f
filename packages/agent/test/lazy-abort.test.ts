import { describe, expect, it } from "vitest";
import { LazyAbort } from "../src/agent/lazy-abort.js";

describe("LazyAbort", () => {
  it("a signal read after the abort is already aborted, with the reason", () => {
    const cancel = new LazyAbort();
    expect(cancel.aborted).toBe(false);
    const reason = new Error("canceled");
    cancel.abort(reason);
    expect(cancel.aborted).toBe(true);
    expect(cancel.signal.aborted).toBe(true);
    expect(cancel.signal.reason).toBe(reason);
  });

  it("a signal read before the abort hears it", () => {
    const cancel = new LazyAbort();
    const signal = cancel.signal;
    let heard: unknown;
    signal.addEventListener("abort", () => {
      heard = signal.reason;
    });
    cancel.abort("stop");
    expect(heard).toBe("stop");
    expect(cancel.aborted).toBe(true);
    expect(cancel.signal).toBe(signal);
  });

  it("the first abort's reason stays, whether or not the signal was read before", () => {
    const early = new LazyAbort();
    early.abort("canceled");
    early.abort("stopped");
    expect(early.reason).toBe("canceled");
    expect(early.signal.reason).toBe("canceled");
    const read = new LazyAbort();
    expect(read.signal.aborted).toBe(false);
    read.abort("canceled");
    read.abort("stopped");
    expect(read.reason).toBe("canceled");
  });
});
