import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { say } from "../shared/output.js";

/** Sentence-embedding models the onnx embedder is known to run, with how they pool and prompt. */
export const KNOWN_MODELS: Record<
  string,
  { repo: string; files: string[]; pooling: "mean" | "cls"; queryPrefix?: string; dimensions: number }
> = {
  "bge-small-en-v1.5": {
    repo: "BAAI/bge-small-en-v1.5",
    files: ["onnx/model.onnx", "tokenizer.json", "vocab.txt", "config.json"],
    pooling: "cls",
    queryPrefix: "Represent this sentence for searching relevant passages: ",
    dimensions: 384,
  },
  "all-MiniLM-L6-v2": {
    repo: "sentence-transformers/all-MiniLM-L6-v2",
    files: ["onnx/model.onnx", "tokenizer.json", "vocab.txt", "config.json"],
    pooling: "mean",
    dimensions: 384,
  },
};

const DEFAULT_HUB = "https://huggingface.co";

interface FetchFlags {
  dir: string;
  hub: string;
  repo?: string;
  timeout: number;
}

async function download(url: string, target: string, timeoutMs: number): Promise<number> {
  const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), redirect: "follow" });
  if (!response.ok) throw new Error(`${url} answered HTTP ${response.status}`);
  const data = new Uint8Array(await response.arrayBuffer());
  mkdirSync(join(target, ".."), { recursive: true });
  writeFileSync(`${target}.part`, data);
  renameSync(`${target}.part`, target);
  return data.length;
}

/** `mq9 models fetch <name>`: downloads an ONNX sentence-embedding model for registry.embedder "onnx". */
export function registerModels(program: Command): void {
  const models = program.command("models").description("embedding models for the agent registry");
  models
    .command("list")
    .description("models 'mq9 models fetch' knows")
    .action(() => {
      for (const [name, m] of Object.entries(KNOWN_MODELS)) {
        process.stdout.write(`${name.padEnd(20)} ${m.dimensions} dims, ${m.pooling} pooling (${m.repo})\n`);
      }
    });
  models
    .command("fetch")
    .description("download a model's ONNX weights and tokenizer into a folder (needs network access)")
    .argument("<name>", `one of: ${Object.keys(KNOWN_MODELS).join(", ")}`)
    .option("--dir <folder>", "where models are kept", "./mq9-models")
    .option("--hub <url>", "model hub (or a mirror with the same layout)", DEFAULT_HUB)
    .option("--repo <owner/name>", "fetch from this repository instead of the model's usual one")
    .option("--timeout <ms>", "per-file download limit", (raw) => Number(raw), 600_000)
    .addHelpText(
      "after",
      `
Examples:
  mq9 models fetch bge-small-en-v1.5
  mq9 serve --registry-embedder onnx --registry-model-dir ./mq9-models/bge-small-en-v1.5`,
    )
    .action(async (name: string, flags: FetchFlags) => {
      const model = KNOWN_MODELS[name];
      if (!model) {
        say(`unknown model '${name}'; known: ${Object.keys(KNOWN_MODELS).join(", ")}`);
        process.exitCode = 2;
        return;
      }
      const target = resolve(flags.dir, name);
      const repo = flags.repo ?? model.repo;
      try {
        for (const file of model.files) {
          const url = `${flags.hub.replace(/\/+$/, "")}/${repo}/resolve/main/${file}`;
          const bytes = await download(url, join(target, file), flags.timeout);
          process.stdout.write(`fetched ${file} (${bytes.toLocaleString("en-US")} bytes)\n`);
        }
      } catch (err) {
        say(
          `could not fetch ${name}: ${(err as Error).message}; without network access, copy the files ${model.files.join(", ")} into ${target} by hand`,
        );
        process.exitCode = 1;
        return;
      }
      const config = {
        registry: {
          embedder: "onnx",
          modelDir: target,
          pooling: model.pooling,
          queryPrefix: model.queryPrefix,
        },
      };
      process.stdout.write(
        `model ready in ${target}; use it with this config section:\n${JSON.stringify(config, null, 2)}\n`,
      );
    });
}
