import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, type ServeProcess, spawnServe, tempDir } from "./cli-harness.js";

type Json = Record<string, unknown>;

const card = {
  name: "Invoice Checker",
  description: "Validates invoices against purchase orders.",
  version: "1.0.0",
  supportedInterfaces: [
    { url: "https://agent.test/a2a", protocolBinding: "JSONRPC", protocolVersion: "1.0" },
  ],
  capabilities: {},
  defaultInputModes: ["text/plain"],
  defaultOutputModes: ["text/plain"],
  skills: [
    {
      id: "check",
      name: "Check invoice",
      description: "Compare an invoice with its PO.",
      tags: ["finance"],
      examples: ["does invoice 42 match its order", "check this invoice"],
    },
  ],
};

describe("mq9 serve speaks ARD", () => {
  const data = tempDir();
  let serve: ServeProcess;
  let base: string;
  beforeAll(async () => {
    serve = await spawnServe([
      "--data",
      join(data, "broker"),
      "--registry-embedder",
      "none",
      "--ard-publisher",
      "agents.example.com",
    ]);
    base = `http://127.0.0.1:${serve.httpPort}`;
  });
  afterAll(async () => {
    serve.child.kill("SIGTERM");
    await serve.exited;
    rmSync(data, { recursive: true, force: true });
  });

  it("an A2A card's entry points at the card the A2A gateway serves; the dashboard links the manifest", async () => {
    const file = join(data, "card.json");
    const { writeFileSync } = await import("node:fs");
    // The A2A SDKs' form: the card under agent_card, which the A2A gateway serves.
    writeFileSync(file, JSON.stringify({ mailbox: "agents.invoice", agent_card: card }));
    const imported = await runCli(["agent", "register", file, "--server", `mq9://127.0.0.1:${serve.port}`]);
    expect(imported.code, imported.stderr).toBe(0);
    const manifest = (await (await fetch(`${base}/.well-known/ard.json`)).json()) as { entries: Json[] };
    const entry = manifest.entries.find((e) => e.displayName === "Invoice Checker")!;
    expect(entry).toMatchObject({
      identifier: "urn:air:agents.example.com:agent:agents.invoice",
      type: "application/a2a-agent-card+json",
      url: `${base}/a2a/agents.invoice/.well-known/agent-card.json`,
      representativeQueries: card.skills[0].examples,
    });
    expect(entry.data).toBeUndefined();
    const served = (await (await fetch(String(entry.url))).json()) as Json;
    expect(served.name).toBe("Invoice Checker");
    const page = await (await fetch(`${base}/`)).text();
    if (!page.startsWith("the mq9 dashboard is not built")) {
      expect(page).toContain('<link rel="ai-catalog" href="/.well-known/ard.json"');
    }
  });

  it("a publisher that is not a domain name is refused at start", async () => {
    const result = await runCli([
      "serve",
      "--ard-publisher",
      "not a domain",
      "--port",
      "0",
      "--http-port",
      "0",
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/ard\.publisher: must be a domain name.*--ard-publisher/s);
  });
});
