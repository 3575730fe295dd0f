import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { startBroker, type TestBroker } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const doc = readFileSync(`${root}docs/a2a.md`, "utf8");

function example(name: string): string {
  const marker = doc.indexOf(`<!-- docs-example: ${name} -->`);
  if (marker < 0) throw new Error(`docs/a2a.md has no example named ${name}`);
  const start = doc.indexOf("\n", doc.indexOf("```", marker)) + 1;
  return doc.slice(start, doc.indexOf("```", start));
}

describe("docs/a2a.md", () => {
  let t: TestBroker;
  beforeAll(async () => {
    t = await startBroker();
  });
  afterAll(() => t.close());

  it("the quick start prints what the page says (run against the built packages)", async () => {
    // Under node_modules so that `import "@mq9/client/a2a"` resolves as in a user's project.
    const dir = `${root}node_modules/.cache/mq9-docs`;
    mkdirSync(dir, { recursive: true });
    writeFileSync(`${dir}/a2a-quickstart.mjs`, example("a2a-quickstart"));
    const { stdout } = await promisify(execFile)(process.execPath, [`${dir}/a2a-quickstart.mjs`], {
      env: { ...process.env, MQ9_SERVER: t.url },
    });
    expect(stdout.trim()).toBe("TASK_STATE_COMPLETED Bonjour");
  });
});
