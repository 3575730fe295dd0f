/** What the router knows of an agent: its manifest plus what its heartbeats say. */
export interface AgentView {
  name: string;
  mailbox: string;
  capabilities: string[];
  description: string;
  tags: string[];
  /** Relative share of work among agents with the same capability. */
  weight: number;
  maxConcurrency: number;
  /** Work in progress: dispatched to it and not answered yet (see AgentDirectory). */
  load: number;
  /** Unix ms of the last REGISTER or heartbeat. */
  lastSeenMs: number;
  /** Seconds without a heartbeat after which the agent counts as dead. */
  ttlSeconds: number;
  /** Smooth weighted round-robin credit (the balancer's state; kept across registry reads). */
  credit?: number;
}

export function isAlive(agent: AgentView, nowMs: number): boolean {
  return agent.ttlSeconds <= 0 || nowMs - agent.lastSeenMs < agent.ttlSeconds * 1000;
}
