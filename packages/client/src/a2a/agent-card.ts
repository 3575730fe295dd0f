import type { AgentEntry } from "@mq9/protocol";
import { MQ9_A2A_BINDING, mailboxUrl } from "./binding.js";
import { isObject, type JsonObject } from "./wire.js";

/** An A2A AgentCard as wire JSON (v1.0; v0.3 cards are accepted and converted). */
export type AgentCardJson = JsonObject & { name: string; description?: string };

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

function skill(value: unknown, index: number): JsonObject | undefined {
  if (typeof value === "string") return { id: value, name: value, description: value, tags: [] };
  if (!isObject(value)) return undefined;
  const name = typeof value.name === "string" ? value.name : typeof value.id === "string" ? value.id : "";
  const out: JsonObject = {
    ...value,
    id: typeof value.id === "string" ? value.id : name || `skill-${index + 1}`,
    name: name || `skill ${index + 1}`,
    description: typeof value.description === "string" ? value.description : name,
    tags: strings(value.tags),
  };
  if (value.examples !== undefined) out.examples = strings(value.examples);
  return out;
}

/**
 * A v1.0 card from a v1.0 or v0.3 card (or a sparse one written by hand): defaults filled
 * in, v0.3 `url`/`preferredTransport`/`additionalInterfaces` turned into `supportedInterfaces`.
 */
export function normalizeCard(input: JsonObject): AgentCardJson {
  if (typeof input.name !== "string" || input.name.trim() === "") {
    throw new TypeError("an agent card needs a 'name'");
  }
  const { url, preferredTransport, additionalInterfaces, protocolVersion, kind: _kind, ...rest } = input;
  let interfaces: JsonObject[] = Array.isArray(input.supportedInterfaces)
    ? input.supportedInterfaces.filter(isObject)
    : [];
  if (interfaces.length === 0 && typeof url === "string") {
    const version =
      typeof protocolVersion === "string" ? protocolVersion.split(".").slice(0, 2).join(".") : "0.3";
    interfaces = [{ url, protocolBinding: preferredTransport ?? "JSONRPC", protocolVersion: version }];
    for (const extra of Array.isArray(additionalInterfaces) ? additionalInterfaces.filter(isObject) : []) {
      if (extra.url === url && extra.transport === (preferredTransport ?? "JSONRPC")) continue;
      interfaces.push({ url: extra.url, protocolBinding: extra.transport, protocolVersion: version });
    }
  }
  const capabilities = isObject(input.capabilities) ? input.capabilities : {};
  return {
    ...rest,
    name: input.name.trim(),
    description: typeof input.description === "string" ? input.description : "",
    version: typeof input.version === "string" ? input.version : "1.0.0",
    supportedInterfaces: interfaces,
    capabilities: { streaming: true, ...capabilities },
    defaultInputModes: strings(input.defaultInputModes).length
      ? strings(input.defaultInputModes)
      : ["text/plain"],
    defaultOutputModes: strings(input.defaultOutputModes).length
      ? strings(input.defaultOutputModes)
      : ["text/plain"],
    skills: (Array.isArray(input.skills) ? input.skills : [])
      .map(skill)
      .filter((s): s is JsonObject => s !== undefined),
  };
}

/** Puts the mailbox interface first (v1.0 and v0.3 on the same binding), replacing any older one. */
export function withMailboxInterface(card: AgentCardJson, url: string): AgentCardJson {
  const others = (Array.isArray(card.supportedInterfaces) ? card.supportedInterfaces : []).filter(
    (i) => !(isObject(i) && i.protocolBinding === MQ9_A2A_BINDING),
  );
  return {
    ...card,
    supportedInterfaces: [
      { url, protocolBinding: MQ9_A2A_BINDING, protocolVersion: "1.0" },
      { url, protocolBinding: MQ9_A2A_BINDING, protocolVersion: "0.3" },
      ...others,
    ],
  };
}

/** The card inside a DISCOVER entry (`agent_card`, `agentCard`, or a JSON card in `payload`), if any. */
export function cardOfEntry(entry: AgentEntry, server?: string): AgentCardJson | undefined {
  let raw: unknown = entry.agent_card ?? entry.agentCard;
  if (!isObject(raw) && typeof entry.payload === "string" && entry.payload.trimStart().startsWith("{")) {
    try {
      raw = JSON.parse(entry.payload);
    } catch {
      raw = undefined;
    }
  }
  if (!isObject(raw) || typeof raw.name !== "string") return undefined;
  const card = normalizeCard(raw);
  // The registered mailbox is where the agent reads; trust it over a card written elsewhere.
  return typeof entry.mailbox === "string"
    ? withMailboxInterface(card, mailboxUrl(server, entry.mailbox))
    : card;
}
