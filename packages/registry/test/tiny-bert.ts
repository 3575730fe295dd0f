// Writes a tiny BERT-shaped ONNX model (random weights, 32 dimensions) and its WordPiece vocabulary,
// so the ONNX embedder's real loading and inference path is tested without downloading a model.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { seededRandom } from "./vector-store-conformance.js";

/** Just enough of the protobuf wire format to write an ONNX ModelProto. */
class ProtoWriter {
  private readonly bytes: number[] = [];

  private varint(value: number): void {
    let v = BigInt(value);
    if (v < 0n) v += 1n << 64n;
    do {
      let byte = Number(v & 0x7fn);
      v >>= 7n;
      if (v > 0n) byte |= 0x80;
      this.bytes.push(byte);
    } while (v > 0n);
  }

  int(field: number, value: number): this {
    this.varint((field << 3) | 0);
    this.varint(value);
    return this;
  }

  raw(field: number, data: Uint8Array): this {
    this.varint((field << 3) | 2);
    this.varint(data.length);
    for (const b of data) this.bytes.push(b);
    return this;
  }

  str(field: number, text: string): this {
    return this.raw(field, new TextEncoder().encode(text));
  }

  msg(field: number, inner: ProtoWriter): this {
    return this.raw(field, inner.finish());
  }

  finish(): Uint8Array {
    return Uint8Array.from(this.bytes);
  }
}

const FLOAT = 1;
const INT64 = 7;

function floatTensor(name: string, dims: number[], values: Float32Array): ProtoWriter {
  const t = new ProtoWriter();
  for (const d of dims) t.int(1, d);
  t.int(2, FLOAT).str(8, name);
  return t.raw(9, new Uint8Array(values.buffer));
}

function int64Tensor(name: string, values: number[]): ProtoWriter {
  const t = new ProtoWriter().int(1, values.length).int(2, INT64).str(8, name);
  const data = new BigInt64Array(values.map(BigInt));
  return t.raw(9, new Uint8Array(data.buffer));
}

function valueInfo(name: string, elemType: number, dims: (string | number)[]): ProtoWriter {
  const shape = new ProtoWriter();
  for (const d of dims)
    shape.msg(1, typeof d === "number" ? new ProtoWriter().int(1, d) : new ProtoWriter().str(2, d));
  const tensorType = new ProtoWriter().int(1, elemType).msg(2, shape);
  return new ProtoWriter().str(1, name).msg(2, new ProtoWriter().msg(1, tensorType));
}

function node(op: string, inputs: string[], outputs: string[], attrs: ProtoWriter[] = []): ProtoWriter {
  const n = new ProtoWriter();
  for (const i of inputs) n.str(1, i);
  for (const o of outputs) n.str(2, o);
  n.str(3, `${op}_${outputs[0]}`).str(4, op);
  for (const a of attrs) n.msg(5, a);
  return n;
}

const WORDS = (
  "the a to of and in for on with my this is it be can please translate text language english french " +
  "spanish german book flight hotel rome paris weather rain forecast invoice order pay salary tax money " +
  "code python review test bug deploy server log error music song photo image video write read letter " +
  "email calendar meeting doctor health food recipe cook plant water cat dog car train ticket bank card"
).split(" ");

export const TINY_BERT_DIMENSIONS = 32;

/**
 * Writes `model.onnx` and `vocab.txt` into `dir`; returns `dir`. `unembedded` words are in the
 * vocabulary but past the end of the model's embedding table, so a text with one of them makes
 * the model call itself fail (onnxruntime refuses the out-of-range index), as a broken model would.
 */
export function writeTinyBert(dir: string, options: { unembedded?: string[] } = {}): string {
  mkdirSync(dir, { recursive: true });
  const vocab = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    ".",
    ",",
    "?",
    "!",
    "##s",
    "##ing",
    "##ed",
    "##er",
    ...WORDS,
  ];
  writeFileSync(join(dir, "vocab.txt"), `${[...vocab, ...(options.unembedded ?? [])].join("\n")}\n`);
  const random = seededRandom(2024);
  const weights = (n: number) => Float32Array.from({ length: n }, () => random() * 2 - 1);
  const h = TINY_BERT_DIMENSIONS;
  const graph = new ProtoWriter();
  graph.msg(1, node("Gather", ["word_embeddings", "input_ids"], ["words"]));
  graph.msg(1, node("Gather", ["type_embeddings", "token_type_ids"], ["types"]));
  graph.msg(1, node("Add", ["words", "types"], ["embedded"]));
  graph.msg(1, node("MatMul", ["embedded", "dense"], ["projected"]));
  graph.msg(1, node("Tanh", ["projected"], ["activated"]));
  graph.msg(
    1,
    node("Cast", ["attention_mask"], ["mask"], [new ProtoWriter().str(1, "to").int(20, 2).int(3, FLOAT)]),
  );
  graph.msg(1, node("Unsqueeze", ["mask", "last_axis"], ["mask3"]));
  graph.msg(1, node("Mul", ["activated", "mask3"], ["last_hidden_state"]));
  graph.str(2, "tiny-bert");
  graph.msg(5, floatTensor("word_embeddings", [vocab.length, h], weights(vocab.length * h)));
  graph.msg(5, floatTensor("type_embeddings", [2, h], weights(2 * h)));
  graph.msg(5, floatTensor("dense", [h, h], weights(h * h)));
  graph.msg(5, int64Tensor("last_axis", [-1]));
  for (const input of ["input_ids", "attention_mask", "token_type_ids"]) {
    graph.msg(11, valueInfo(input, INT64, ["batch", "sequence"]));
  }
  graph.msg(12, valueInfo("last_hidden_state", FLOAT, ["batch", "sequence", h]));
  const model = new ProtoWriter()
    .int(1, 8)
    .str(2, "mq9-tests")
    .msg(7, graph)
    .msg(8, new ProtoWriter().str(1, "").int(2, 13));
  writeFileSync(join(dir, "model.onnx"), model.finish());
  return dir;
}
