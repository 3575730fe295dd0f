import { Broker } from "@mq9/broker";
import { registryFactory } from "@mq9/registry";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "./cli-harness.js";
import { run } from "./cli-run.js";
import { docExample, shellWords } from "./doc-examples.js";

describe("docs/registry.md", () => {
  let broker: Broker;
  beforeAll(async () => {
    broker = await Broker.start({ port: 0, dataDir: tempDir(), registry: registryFactory() });
  });
  afterAll(() => broker.close());

  it("command line example: every line succeeds and finds the agents the page says", async () => {
    const lines = docExample("docs/registry.md", "registry-cli")
      .split("\n")
      .filter((line) => line.startsWith("mq9 "));
    expect(lines).toHaveLength(5);
    const outputs: string[] = [];
    for (const line of lines) {
      const result = await run(shellWords(line).slice(1), { MQ9_SERVER: `mq9://127.0.0.1:${broker.port}` });
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
