import { runDocsExample, startBroker, type TestBroker } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

describe("docs/openai-agents.md", () => {
  let t: TestBroker;
  beforeAll(async () => {
    t = await startBroker({ registry: { embedder: "none" } });
  });
  afterAll(() => t.close());

  it("the quick start prints what the page says (run against the built packages)", async () => {
    const stdout = await runDocsExample(
      "docs/openai-agents.md",
      "openai-agents-quickstart",
      "openai-agents",
      {
        MQ9_SERVER: t.url,
      },
    );
    expect(stdout.trim()).toBe("completed Bonjour");
  });
});
