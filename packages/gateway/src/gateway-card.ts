import { createHash } from "node:crypto";
import type { AgentCardJson } from "@mq9/client/a2a";

/**
 * The card a plain A2A HTTP client sees: JSON-RPC at the gateway URL first (v1.0 and
 * v0.3), the mailbox interface after it, and the v0.3 top-level fields (`url`,
 * `preferredTransport`, `protocolVersion`) so that older clients find the endpoint too.
 * `capabilities.streaming` is always true: the gateway serves every agent's events as SSE.
 */
export function gatewayCard(card: AgentCardJson, url: string): AgentCardJson {
  const interfaces = Array.isArray(card.supportedInterfaces) ? card.supportedInterfaces : [];
  const capabilities = typeof card.capabilities === "object" && card.capabilities ? card.capabilities : {};
  return {
    ...card,
    capabilities: { ...capabilities, streaming: true },
    supportedInterfaces: [
      { url, protocolBinding: "JSONRPC", protocolVersion: "1.0" },
      { url, protocolBinding: "JSONRPC", protocolVersion: "0.3" },
      ...interfaces,
    ],
    url,
    preferredTransport: "JSONRPC",
    protocolVersion: "0.3.0",
  };
}

/** A weak ETag from the card's bytes (cards SHOULD carry one, A2A §8.6). */
export function cardEtag(json: string): string {
  return `W/"${createHash("sha256").update(json).digest("hex").slice(0, 16)}"`;
}
