import { readFileSync } from "node:fs";
import { type AgentCardJson, normalizeCard } from "@mq9/client/a2a";
import { parse } from "yaml";

/** Reads an A2A card from a YAML or JSON file (JSON is YAML); says what is wrong and where. */
export function readCardFile(path: string): AgentCardJson {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new Error(`cannot read the card ${path}: ${(err as Error).message}`);
  }
  let value: unknown;
  try {
    value = parse(text);
  } catch (err) {
    throw new Error(`${path} is not valid YAML or JSON: ${(err as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new Error(`${path} must hold an A2A agent card (a mapping with name, description, skills)`);
  }
  try {
    return normalizeCard(value as Record<string, unknown>);
  } catch (err) {
    throw new Error(`${path}: ${(err as Error).message}`);
  }
}
