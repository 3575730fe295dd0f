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
  const candidates = agents.filter((a) => a.capabilities.includes(capability) && isAlive(a, nowMs));
  if (candidates.length === 0) return undefined;
  const scores = candidates.map((a) => a.weight * Math.max(0, 1 - a.load / Math.max(1, a.maxConcurrency)));
  const total = scores.reduce((sum, s) => sum + s, 0);
  if (total <= 0) {
    return candidates.reduce((best, a) =>
      a.load / Math.max(1, a.maxConcurrency) < best.load / Math.max(1, best.maxConcurrency) ? a : best,
    );
  }
  let pick = random() * total;
  for (let i = 0; i < candidates.length; i++) {
    pick -= scores[i];
    if (pick < 0) return candidates[i];
  }
  return candidates[candidates.length - 1];
}
