import { describe, expect, it } from "vitest";
import { TraceLedger } from "../src/routing/trace-ledger.js";

describe("trace ledger", () => {
  it("counts a trace's routed messages against its budget; a finished trace starts again", () => {
    const ledger = new TraceLedger(3);
    for (let i = 0; i < 3; i++) ledger.spend("t1");
    ledger.spend("t2");
    expect(ledger.used("t1")).toBe(3);
    expect(ledger.used("t2")).toBe(1);
    expect(ledger.used("t3")).toBe(0);
    ledger.forgetBudget("t1");
    expect(ledger.used("t1")).toBe(0);
  });

  it("keeps the hops last delivered to each agent of a trace, also across a forgotten budget", () => {
    const ledger = new TraceLedger(10);
    ledger.delivered("t", "a", 1);
    ledger.delivered("t", "b", 2);
    ledger.delivered("t", "c", 3);
    ledger.delivered("t", "a", 4);
    ledger.delivered("u", "a", 9);
    expect(["a", "b", "c", "d"].map((agent) => ledger.hopsDelivered("t", agent))).toEqual([
      4,
      2,
      3,
      undefined,
    ]);
    expect(ledger.hopsDelivered("u", "a")).toBe(9);
    ledger.forgetBudget("t");
    expect(ledger.hopsDelivered("t", "b")).toBe(2);
  });

  it("forgets the least recently active traces beyond its capacity", () => {
    const ledger = new TraceLedger(10, 4);
    for (let i = 0; i < 10; i++) ledger.delivered(`t${i}`, "a", i);
    expect(ledger.hopsDelivered("t0", "a")).toBeUndefined();
    expect(ledger.hopsDelivered("t9", "a")).toBe(9);
  });
});
