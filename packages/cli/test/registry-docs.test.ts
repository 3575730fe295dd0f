import { startBroker, type TestBroker } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { run } from "./cli-run.js";
import { docExample, shellWords } from "./doc-examples.js";

describe("docs/registry.md", () => {
  let broker: TestBroker;
  beforeAll(async () => {
    broker = await startBroker();
  });
  afterAll(() => broker.close());

  it("command line example: every line succeeds and finds the agents the page says", async () => {
    const lines = docExample("docs/registry.md", "registry-cli")
      .split("\n")
      .filter((line) => line.startsWith("mq9 "));
    expect(lines).toHaveLength(5);
    const outputs: string[] = [];
    for (const line of lines) {
      const result = await run(shellWords(line).slice(1), { MQ9_SERVER: broker.url });
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
