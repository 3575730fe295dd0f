import { type AgentView, isAlive } from "./agent-view.js";

/**
 * Picks who gets the next piece of work for a capability, among live agents that
 * declare it: a smooth weighted round-robin, so weights 3 and 1 give 3:1 whether work
 * comes one at a time or in a burst, with no randomness to drift. An agent is passed
 * over while it is behind: its work in progress per unit of weight exceeds the least
 * among them by a whole max_concurrency of its own. So a slow replica, whose work stays
 * in progress longer, gets less, and a stuck one only its window. `limit` (> 0) caps
 * the work in progress of each agent: when every candidate is at it, nobody is chosen.
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
  const keepsUp = (a: AgentView) => a.load / a.weight - least < Math.max(1, a.maxConcurrency) / a.weight;
  let total = 0;
  let best: AgentView | undefined;
  for (const a of agents) {
    if (!eligible(a) || !keepsUp(a)) continue;
    a.credit = (a.credit ?? 0) + a.weight;
    total += a.weight;
    if (!best || a.credit > best.credit!) best = a;
  }
  best!.credit! -= total;
  return best;
}
