import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { DEFAULT_NAMESPACE } from "@mq9/agent";
import { OrchestratorDefaults } from "@mq9/orchestrator/defaults";
import { describe, expect, it } from "vitest";
import { loadServeConfig } from "../src/serve/config.js";
import { optionsFor } from "../src/serve/settings/component-options.js";
import { SETTINGS } from "../src/serve/settings/serve-settings.js";
import { envOf } from "../src/serve/settings/setting.js";
import { settingsTable, TABLE_END, TABLE_START } from "../src/serve/settings/settings-doc.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));

describe("the settings of mq9 serve, declared once", () => {
  it("docs/configuration.md's table is the one the declarations make (npm run docs:settings)", () => {
    const page = readFileSync(`${root}docs/configuration.md`, "utf8");
    const shown = page.slice(page.indexOf(TABLE_START) + TABLE_START.length, page.indexOf(TABLE_END));
    expect(cells(shown)).toEqual(cells(settingsTable(SETTINGS)));
  });

  it("every flag and variable is one setting's; variables follow the flags but for a named few", () => {
    const flagged = SETTINGS.filter((s) => s.flag !== undefined);
    expect(new Set(flagged.map((s) => s.flag)).size).toBe(flagged.length);
    expect(new Set(flagged.map((s) => s.env)).size).toBe(flagged.length);
    expect(flagged.filter((s) => s.env !== envOf(s.flag as string)).map((s) => s.key)).toEqual([
      "storage.sync",
      // The registry's own name for it: the embedder reads it too when the broker is embedded.
      "registry.embedderApiKey",
    ]);
    // Only structured values (lists of objects) are the file's alone.
    expect(SETTINGS.filter((s) => s.flag === undefined).every((s) => s.type.kind === "structured")).toBe(
      true,
    );
  });

  it("a setting given by its flag, its variable or the file reaches its component's options, converted", () => {
    const config = loadServeConfig({
      env: { MQ9_PING_INTERVAL: "1.5", MQ9_REGISTRY_POOLING: "cls" },
      flags: {
        leaseMs: "1234",
        httpPort: "0",
        registryDefaultTtl: "60",
        traceBudget: "7",
        registryPreload: "off",
      },
    });
    expect(optionsFor("broker", config, SETTINGS)).toMatchObject({
      pingIntervalMs: 1500,
      leaseMs: 1234,
      http: { port: 0 },
      dataDir: "./mq9-data",
      defaultMailboxTtlSeconds: 0,
    });
    expect(optionsFor("registry", config, SETTINGS)).toMatchObject({
      defaultTtlS: 60,
      onnx: { pooling: "cls" },
      preloadEmbedder: false,
    });
    const orchestrator = optionsFor("orchestrator", config, SETTINGS);
    expect(orchestrator).toMatchObject({ traceBudget: 7, namespace: "orch" });
    // Serve itself reads these: they are not the orchestrator thread's options.
    for (const key of ["enabled", "templates", "webhooks"]) expect(orchestrator).not.toHaveProperty(key);
  });

  it("the openai embedder's settings reach the registry's openai options; its key is never echoed", () => {
    const config = loadServeConfig({
      env: { MQ9_EMBEDDER_API_KEY: "sk-from-env-123", MQ9_REGISTRY_EMBEDDER_TIMEOUT: "2.5" },
      flags: {
        registryEmbedder: "openai",
        registryEmbedderUrl: "http://127.0.0.1:8000/v1",
        registryEmbedderModel: "multilingual-e5-small",
        registryEmbedderDimensions: "384",
        registryQueryPrefix: "query: ",
        registryDocumentPrefix: "passage: ",
      },
    });
    expect(optionsFor("registry", config, SETTINGS)).toMatchObject({
      embedder: "openai",
      openai: {
        url: "http://127.0.0.1:8000/v1",
        model: "multilingual-e5-small",
        apiKey: "sk-from-env-123",
        dimensions: 384,
        batchSize: 64,
        timeoutMs: 2500,
        retries: 3,
      },
      queryPrefix: "query: ",
      documentPrefix: "passage: ",
    });
    const refused = (flags: Record<string, string>) => {
      try {
        loadServeConfig({ env: { MQ9_EMBEDDER_API_KEY: "sk-from-env-123" }, flags });
      } catch (err) {
        return (err as Error).message;
      }
      return "";
    };
    expect(refused({ registryEmbedder: "openai" })).toMatch(
      /registry\.embedderUrl: the openai embedder needs registry\.embedderUrl.*registry\.embedderModel: the openai embedder needs/,
    );
    const badKey = refused({ registryEmbedderUrl: "ftp://x" });
    expect(badKey).toMatch(/registry\.embedderUrl: must be an http:\/\/ or https:\/\/ URL/);
    expect(badKey).not.toContain("sk-from-env-123");
    expect(refused({ registryEmbedderApiKeyEnv: "not a name" })).toMatch(
      /registry\.embedderApiKeyEnv: must be the name of an environment variable/,
    );
  });

  it("--registry-model names a known model for the registry; an unknown one is refused with the names", () => {
    const config = loadServeConfig({
      flags: { registryModel: "multilingual-e5-small", registryModelsDir: "/srv/models" },
    });
    expect(optionsFor("registry", config, SETTINGS)).toMatchObject({
      embedder: "onnx",
      model: "multilingual-e5-small",
      modelsDir: "/srv/models",
    });
    expect(() => loadServeConfig({ flags: { registryModel: "no-such-model" } })).toThrow(
      /registry\.model: .*multilingual-e5-small/,
    );
  });

  it("the orchestrator's default namespace is the one agents address", () => {
    expect(OrchestratorDefaults.namespace).toBe(DEFAULT_NAMESPACE);
  });

  it("a misspelt key of the config file is named, with the setting it is closest to", () => {
    const problems = (file: object) => {
      try {
        loadServeConfig({ env: { MQ9_CONFIG: writeJson(file) } });
      } catch (err) {
        return (err as Error).message;
      }
      return "";
    };
    expect(problems({ registry: { embeder: "use" } })).toBe(
      "invalid configuration: registry: unknown key 'embeder'; did you mean 'embedder'?",
    );
    expect(problems({ orchestrater: {} })).toBe(
      "invalid configuration: config: unknown key 'orchestrater'; did you mean 'orchestrator'?",
    );
  });
});

/** A Markdown table's cells, row by row, whatever its padding (the formatter pads the page's). */
function cells(table: string): string[][] {
  return table
    .trim()
    .split("\n")
    .map((row) =>
      row
        .split(/(?<!\\)\|/)
        .slice(1, -1)
        .map((cell) => cell.trim().replace(/^-+$/, "---")),
    );
}

function writeJson(value: object): string {
  const file = join(mkdtempSync(join(tmpdir(), "mq9-settings-")), "mq9.json");
  writeFileSync(file, JSON.stringify(value));
  return file;
}
