import { runDocsExample, startBroker, type TestBroker } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

describe("docs/ai-sdk.md", () => {
  let t: TestBroker;
  beforeAll(async () => {
    t = await startBroker({ registry: { embedder: "none" } });
  });
  afterAll(() => t.close());

  it("the quick start prints what the page says (run against the built packages)", async () => {
    const stdout = await runDocsExample("docs/ai-sdk.md", "ai-sdk-quickstart", "ai-sdk", {
      MQ9_SERVER: t.url,
    });
    expect(stdout.trim()).toBe("completed Bonjour");
  });
});
