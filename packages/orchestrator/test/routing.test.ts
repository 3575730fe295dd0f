import { describe, expect, it } from "vitest";
import type { AgentView } from "../src/routing/agent-view.js";
import { chooseForCapability } from "../src/routing/capability-choice.js";

const NOW = 1_800_000_000_000;
const agent = (name: string, extra: Partial<AgentView> = {}): AgentView => ({
  name,
  mailbox: `${name}.inbox`,
  capabilities: ["summarize"],
  description: "",
  tags: [],
  weight: 1,
  maxConcurrency: 4,
  load: 0,
  lastSeenMs: NOW,
  ttlSeconds: 30,
  ...extra,
});

/** Counts picks over a fixed, evenly spread sequence of random numbers. */
function shares(agents: AgentView[], n = 1000): Record<string, number> {
  const counts: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    const chosen = chooseForCapability(agents, "summarize", NOW, () => (i + 0.5) / n);
    counts[chosen!.name] = (counts[chosen!.name] ?? 0) + 1;
  }
  return counts;
}

describe("capability routing", () => {
  it("shares work in proportion to weight", () => {
    expect(shares([agent("a", { weight: 3 }), agent("b", { weight: 1 })])).toEqual({ a: 750, b: 250 });
  });

  it("gives a loaded agent less and a full one nothing while others have room", () => {
    expect(shares([agent("a", { load: 2 }), agent("b")])).toEqual({ a: 333, b: 667 });
    expect(shares([agent("a", { load: 4 }), agent("b", { load: 3 })])).toEqual({ b: 1000 });
  });

  it("when everyone is full, picks the least loaded relative to capacity", () => {
    const full = [agent("a", { load: 9, maxConcurrency: 4 }), agent("b", { load: 5, maxConcurrency: 4 })];
    expect(chooseForCapability(full, "summarize", NOW)?.name).toBe("b");
  });

  it("skips agents that stopped heartbeating and agents without the capability", () => {
    const agents = [
      agent("dead", { lastSeenMs: NOW - 31_000 }),
      agent("other", { capabilities: ["translate"] }),
      agent("alive", { lastSeenMs: NOW - 29_000 }),
    ];
    expect(shares(agents)).toEqual({ alive: 1000 });
    expect(chooseForCapability([agents[0], agents[1]], "summarize", NOW)).toBeUndefined();
  });
});
