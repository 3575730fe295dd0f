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

/** Picks n times; `hold` keeps what was picked in progress (a burst), else it is done at once (a trickle). */
function shares(agents: AgentView[], n: number, hold: boolean, limit = 0): Record<string, number> {
  const counts: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    const chosen = chooseForCapability(agents, "summarize", NOW, limit);
    if (!chosen) break;
    counts[chosen.name] = (counts[chosen.name] ?? 0) + 1;
    if (hold) chosen.load++;
  }
  return counts;
}

describe("capability routing", () => {
  it("shares work by weight one at a time (a trickle) and all at once (a burst)", () => {
    expect(shares([agent("a", { weight: 3 }), agent("b", { weight: 1 })], 400, false)).toEqual({
      a: 300,
      b: 100,
    });
    expect(shares([agent("a", { weight: 3 }), agent("b", { weight: 1 })], 400, true)).toEqual({
      a: 300,
      b: 100,
    });
  });

  it("passes over an agent a whole max_concurrency behind the others", () => {
    expect(shares([agent("a", { load: 7 }), agent("b", { load: 3 })], 1, true)).toEqual({ b: 1 });
    expect(shares([agent("a", { load: 6 }), agent("b", { load: 3 })], 2, true)).toEqual({ a: 1, b: 1 });
    // A slow agent keeps its work in progress longer: the fast one gets the rest.
    const slow = agent("slow", { load: 4 });
    expect(shares([slow, agent("fast")], 4, false)).toEqual({ fast: 4 });
  });

  it("measures being behind per unit of weight", () => {
    const busy = [agent("a", { load: 9, weight: 2 }), agent("b", { load: 9 })];
    expect(chooseForCapability(busy, "summarize", NOW)?.name).toBe("a");
  });

  it("a per-agent limit leaves work unrouted when every agent is at it", () => {
    expect(shares([agent("a"), agent("b")], 10, true, 2)).toEqual({ a: 2, b: 2 });
  });

  it("skips agents that stopped heartbeating and agents without the capability", () => {
    const agents = [
      agent("dead", { lastSeenMs: NOW - 31_000 }),
      agent("other", { capabilities: ["translate"] }),
      agent("alive", { lastSeenMs: NOW - 29_000 }),
    ];
    expect(shares(agents, 10, false)).toEqual({ alive: 10 });
    expect(chooseForCapability([agents[0], agents[1]], "summarize", NOW)).toBeUndefined();
  });
});
