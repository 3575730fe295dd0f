import { type AgentView, isAlive } from "./agent-view.js";

/**
 * Picks who gets the next piece of work for a capability: among live agents
 * that declare it, weighted random choice by weight x free capacity, so a
 * loaded agent gets less and a full one gets nothing while others have room.
 * When every candidate is full, the least loaded (relative to its capacity) is
 * chosen, since its mailbox holds the backlog anyway.
 */
export function chooseForCapability(
  agents: readonly AgentView[],
  capability: string,
  nowMs: number,
  random: () => number = Math.random,
): AgentView | undefined {
  // Two passes over the list instead of filtered copies: this runs once per routed message.
  const eligible = (a: AgentView) => a.capabilities.includes(capability) && isAlive(a, nowMs);
  const score = (a: AgentView) => a.weight * Math.max(0, 1 - a.load / Math.max(1, a.maxConcurrency));
  const fullness = (a: AgentView) => a.load / Math.max(1, a.maxConcurrency);
  let total = 0;
  let leastLoaded: AgentView | undefined;
  for (const a of agents) {
    if (!eligible(a)) continue;
    total += score(a);
    if (!leastLoaded || fullness(a) < fullness(leastLoaded)) leastLoaded = a;
  }
  if (!leastLoaded || total <= 0) return leastLoaded;
  let pick = random() * total;
  let last: AgentView | undefined;
  for (const a of agents) {
    if (!eligible(a)) continue;
    last = a;
    pick -= score(a);
    if (pick < 0) return a;
  }
  return last;
}
