import { type AgentView, isAlive } from "./agent-view.js";

/**
 * Picks who gets the next piece of work for a capability, among live agents that
 * declare it: the one with the least work in progress per unit of weight, ties broken
 * by a smooth weighted round-robin. One at a time (nothing in progress) that is the
 * round-robin, so weights 3 and 1 give exactly 3:1; in a burst, work in progress is kept
 * in proportion to weight, so again 3:1; and since work stays in progress longer at a
 * slow agent, a slow replica gets less than a fast one. `limit` (> 0) caps the work in
 * progress of each agent: when every candidate is at it, nobody is chosen.
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
  let least = Number.POSITIVE_INFINITY;
  for (const a of agents) {
    if (eligible(a)) least = Math.min(least, a.load / a.weight);
  }
  if (least === Number.POSITIVE_INFINITY) return undefined;
  const tied = (a: AgentView) => eligible(a) && a.load / a.weight <= least + 1e-9;
  let total = 0;
  let best: AgentView | undefined;
  for (const a of agents) {
    if (!tied(a)) continue;
    a.credit = (a.credit ?? 0) + a.weight;
    total += a.weight;
    if (!best || a.credit > best.credit!) best = a;
  }
  best!.credit! -= total;
  return best;
}
