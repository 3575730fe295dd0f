import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestBroker, type TestBroker } from "./harness.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));

/** The fenced block that follows `<!-- readme-example: NAME -->` in the README. */
function readmeExample(name: string): string {
  const readme = readFileSync(`${root}README.md`, "utf8");
  const marker = readme.indexOf(`<!-- readme-example: ${name} -->`);
  if (marker < 0) throw new Error(`README has no example named ${name}`);
  const start = readme.indexOf("\n", readme.indexOf("```", marker)) + 1;
  return readme.slice(start, readme.indexOf("```", start));
}

describe("README", () => {
  let t: TestBroker;
  beforeAll(async () => {
    t = await startTestBroker();
  });
  afterAll(() => t.close());

  it("quick-start example runs against a real broker and prints what the README says", async () => {
    // Written under node_modules so that `import "nats"` resolves like in a user's project.
    const dir = `${root}node_modules/.cache/mq9-readme`;
    mkdirSync(dir, { recursive: true });
    writeFileSync(`${dir}/quickstart.mjs`, readmeExample("quickstart"));
    const { stdout } = await promisify(execFile)(process.execPath, [`${dir}/quickstart.mjs`], {
      env: { ...process.env, MQ9_SERVER: t.servers[0] },
    });
    expect(stdout.trim().split("\n")).toEqual(["urgent the build is red", "normal write the report"]);
  });
});
