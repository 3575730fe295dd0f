import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Broker } from "@mq9/broker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "./cli-harness.js";
import { run } from "./cli-run.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const doc = readFileSync(`${root}docs/registry.md`, "utf8");

/** The fenced block after `<!-- docs-example: NAME -->`. */
function example(name: string): string {
  const marker = doc.indexOf(`<!-- docs-example: ${name} -->`);
  if (marker < 0) throw new Error(`docs/registry.md has no example named ${name}`);
  const start = doc.indexOf("\n", doc.indexOf("```", marker)) + 1;
  return doc.slice(start, doc.indexOf("```", start));
}

function words(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]);
}

describe("docs/registry.md", () => {
  let broker: Broker;
  beforeAll(async () => {
    broker = await Broker.start({ port: 0, dataDir: tempDir() });
  });
  afterAll(() => broker.close());

  it("command line example: every line succeeds and finds the agents the page says", async () => {
    const lines = example("registry-cli")
      .split("\n")
      .filter((line) => line.startsWith("mq9 "));
    expect(lines).toHaveLength(5);
    const outputs: string[] = [];
    for (const line of lines) {
      const result = await run(words(line).slice(1), { MQ9_SERVER: `mq9://127.0.0.1:${broker.port}` });
      expect(result.code, `${line}\n${result.stderr}`).toBe(0);
      outputs.push(result.stdout);
    }
    const [fullText, semantic] = outputs.slice(3);
    expect(fullText).toContain("accountant");
    expect(fullText).not.toContain("translator");
    expect(semantic).toContain("translator");
    expect(semantic).not.toContain("accountant");
  });
});
