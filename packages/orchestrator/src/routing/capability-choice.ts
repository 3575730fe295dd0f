import { type AgentView, isAlive } from "./agent-view.js";

/**
 * Picks who gets the next piece of work for a capability, among live agents that
 * declare it. While some have room (load below max_concurrency), a smooth weighted
 * round-robin among those: weights 3 and 1 give 3:1 whether work comes one at a time
 * or in a burst, with no randomness to drift. When all are full, the one with the least
 * work in progress per unit of weight, so backlogs grow in proportion to weight and a
 * slow agent, whose work stays in progress longer, gets less. `limit` (> 0) caps the
 * work in progress of each agent: when every candidate is at it, nobody is chosen.
 */
export function chooseForCapability(
  agents: readonly AgentView[],
  capability: string,
  nowMs: number,
  limit = 0,
): AgentView | undefined {
  // Passes over the list instead of filtered copies: this runs once per routed message.
  const eligible = (a: AgentView) =>
    a.capabilities.includes(capability) && isAlive(a, nowMs) && (limit <= 0 || a.load < limit);
  let total = 0;
  let best: AgentView | undefined;
  let leastPerWeight: AgentView | undefined;
  for (const a of agents) {
    if (!eligible(a)) continue;
    if (!leastPerWeight || (a.load + 1) / a.weight < (leastPerWeight.load + 1) / leastPerWeight.weight) {
      leastPerWeight = a;
    }
    if (a.load >= a.maxConcurrency) continue;
    a.credit = (a.credit ?? 0) + a.weight;
    total += a.weight;
    if (!best || a.credit > best.credit!) best = a;
  }
  if (!best) return leastPerWeight;
  best.credit! -= total;
  return best;
}
