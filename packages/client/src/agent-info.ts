import type { AgentEntry } from "@mq9/protocol";

/** What the broker adds to a registered body in a DISCOVER entry (`name` aside). */
const DISCOVER_EXTRAS = new Set(["agent_info", "_status", "_last_seen", "_score"]);

/**
 * An entry's `agent_info`: the broker's when the reply has it, else worked out the way the
 * broker does (the body's `payload` text, else its `agent_card` as JSON, else the body as
 * JSON). The same content as the broker's, not always the same text (JSON spacing, and a
 * `name` the broker derived counts as part of the body here).
 */
export function agentInfoOf(entry: AgentEntry): string {
  if (typeof entry.agent_info === "string") return entry.agent_info;
  if (typeof entry.payload === "string" && entry.payload !== "") return entry.payload;
  const card = entry.agent_card;
  if (typeof card === "object" && card !== null && !Array.isArray(card)) return JSON.stringify(card);
  const body: Record<string, unknown> = {};
  for (const key of Object.keys(entry)) if (!DISCOVER_EXTRAS.has(key)) body[key] = entry[key];
  return JSON.stringify(body);
}
