import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { promisify } from "node:util";
import { startBroker, type TestBroker } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jsonLines, run } from "./cli-run.js";
import { docExample, REPO_ROOT, shellWords } from "./doc-examples.js";

const root = REPO_ROOT;
const doc = readFileSync(`${root}docs/client.md`, "utf8");

const example = (name: string) => docExample("docs/client.md", name);

describe("docs/client.md", () => {
  it("describes every export of @mq9/client", () => {
    const index = readFileSync(`${root}packages/client/src/index.ts`, "utf8");
    const exported = [...index.matchAll(/export (?:type )?\{([^}]*)\}/g)]
      .flatMap((m) => m[1].split(","))
      .map((name) => name.replace(/^\s*type\s+/, "").trim())
      .filter(Boolean);
    expect(exported.length).toBeGreaterThan(20);
    const headings = new Set([...doc.matchAll(/^### (\S+)$/gm)].map((m) => m[1]));
    expect(exported.filter((name) => !headings.has(name))).toEqual([]);
  });

  it("describes every public method of Mq9Client", () => {
    const source = readFileSync(`${root}packages/client/src/client.ts`, "utf8");
    const methods = [...source.matchAll(/^ {2}(?:async )?([a-z]\w*)\(/gm)]
      .map((m) => m[1])
      .filter((name) => name !== "constructor");
    expect(methods).toContain("send");
    expect(methods.filter((name) => !doc.includes(`client.${name}`))).toEqual([]);
  });

  describe("quick starts run against a real broker", () => {
    let broker: TestBroker;
    let server: string;
    beforeAll(async () => {
      broker = await startBroker();
      server = broker.url;
    });
    afterAll(() => broker.close());

    it("SDK: prints what the page says", async () => {
      // Under node_modules so that `import "@mq9/client"` resolves as in a user's project.
      const dir = `${root}node_modules/.cache/mq9-docs`;
      mkdirSync(dir, { recursive: true });
      writeFileSync(`${dir}/sdk-quickstart.mjs`, example("sdk-quickstart"));
      const { stdout } = await promisify(execFile)(process.execPath, [`${dir}/sdk-quickstart.mjs`], {
        env: { ...process.env, MQ9_SERVER: server },
        timeout: 20_000,
      });
      expect(stdout.trim().split("\n")).toEqual([
        'urgent {"alert":"the build is red"}',
        "normal write the report",
      ]);
    });

    it("inspection: prints what the page says", async () => {
      const dir = `${root}node_modules/.cache/mq9-docs`;
      mkdirSync(dir, { recursive: true });
      writeFileSync(`${dir}/sdk-inspection.mjs`, example("sdk-inspection"));
      const { stdout } = await promisify(execFile)(process.execPath, [`${dir}/sdk-inspection.mjs`], {
        env: { ...process.env, MQ9_SERVER: server },
        timeout: 20_000,
      });
      expect(stdout.trim().split("\n")).toEqual(["true 2", "workers 1 1", "1", "1", "SQLite"]);
      expect(doc).toContain("It prints `true 2`, `workers 1 1`, `1`, `1` and `SQLite`.");
    });

    it("command line: every line succeeds and the messages end up where the page says", async () => {
      const lines = example("cli-quickstart")
        .split("\n")
        .filter((line) => line.startsWith("mq9 "));
      expect(lines.length).toBeGreaterThanOrEqual(5);
      let last = "";
      for (const line of lines) {
        const result = await run(shellWords(line).slice(1), { MQ9_SERVER: server });
        expect(result.code, `${line}\n${result.stderr}`).toBe(0);
        last = result.stdout;
      }
      expect(jsonLines(last).map((m) => m.payload)).toEqual([
        "write the report",
        '{"alert":"the build is red"}',
      ]);
    });
  });
});
