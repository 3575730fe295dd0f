// The few ONNX messages a converted model needs, encoded as protobuf by hand: ModelProto, GraphProto,
// NodeProto, AttributeProto, TensorProto and ValueInfoProto, with the field numbers of onnx.proto.

/** ONNX TensorProto.DataType values used here. */
export const OnnxType = { float: 1, uint8: 2, int64: 7 } as const;
export type OnnxElementType = (typeof OnnxType)[keyof typeof OnnxType];

/** A constant tensor of the graph: its bytes are written as they are (little-endian). */
export interface OnnxTensor {
  name: string;
  type: OnnxElementType;
  dims: number[];
  data: Uint8Array;
}

export type OnnxAttribute = number | number[] | string | { float: number };

export interface OnnxNode {
  op: string;
  /** "" for the ONNX domain, "com.microsoft" for onnxruntime's contrib ops. */
  domain?: string;
  inputs: string[];
  outputs: string[];
  attributes?: Record<string, OnnxAttribute>;
}

/** A graph input or output; a string dimension is symbolic (a batch or sequence length). */
export interface OnnxValue {
  name: string;
  type: OnnxElementType;
  dims: (number | string)[];
}

export interface OnnxModel {
  producer: string;
  opsets: Record<string, number>;
  inputs: OnnxValue[];
  outputs: OnnxValue[];
  nodes: OnnxNode[];
  initializers: OnnxTensor[];
}

/** Protobuf wire output: varints, length-delimited fields, fixed32 floats. */
class ProtoWriter {
  private readonly parts: Uint8Array[] = [];
  private size = 0;

  private push(bytes: Uint8Array): void {
    this.parts.push(bytes);
    this.size += bytes.length;
  }

  private varint(value: number | bigint): void {
    let v = BigInt.asUintN(64, BigInt(value));
    const out: number[] = [];
    while (v >= 0x80n) {
      out.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    out.push(Number(v));
    this.push(Uint8Array.from(out));
  }

  private key(field: number, wire: number): void {
    this.varint((field << 3) | wire);
  }

  int(field: number, value: number): this {
    this.key(field, 0);
    this.varint(value);
    return this;
  }

  float(field: number, value: number): this {
    this.key(field, 5);
    const bytes = new Uint8Array(4);
    new DataView(bytes.buffer).setFloat32(0, value, true);
    this.push(bytes);
    return this;
  }

  bytes(field: number, value: Uint8Array): this {
    this.key(field, 2);
    this.varint(value.length);
    this.push(value);
    return this;
  }

  string(field: number, value: string): this {
    return this.bytes(field, new TextEncoder().encode(value));
  }

  message(field: number, build: (w: ProtoWriter) => void): this {
    const inner = new ProtoWriter();
    build(inner);
    this.key(field, 2);
    this.varint(inner.size);
    for (const part of inner.parts) this.push(part);
    return this;
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.size);
    let at = 0;
    for (const part of this.parts) {
      out.set(part, at);
      at += part.length;
    }
    return out;
  }
}

// AttributeProto.AttributeType
const ATTR_FLOAT = 1;
const ATTR_INT = 2;
const ATTR_STRING = 3;
const ATTR_INTS = 7;

function writeAttribute(w: ProtoWriter, name: string, value: OnnxAttribute): void {
  w.string(1, name);
  if (typeof value === "number") w.int(3, value).int(20, ATTR_INT);
  else if (typeof value === "string") w.string(4, value).int(20, ATTR_STRING);
  else if (Array.isArray(value)) {
    for (const v of value) w.int(8, v);
    w.int(20, ATTR_INTS);
  } else w.float(2, value.float).int(20, ATTR_FLOAT);
}

function writeValue(w: ProtoWriter, value: OnnxValue): void {
  w.string(1, value.name);
  w.message(2, (type) =>
    type.message(1, (tensor) => {
      tensor.int(1, value.type);
      tensor.message(2, (shape) => {
        for (const d of value.dims)
          shape.message(1, (dim) => (typeof d === "number" ? dim.int(1, d) : dim.string(2, d)));
      });
    }),
  );
}

/** The model as the bytes of an `.onnx` file (IR version 8). */
export function encodeOnnxModel(model: OnnxModel): Uint8Array {
  const w = new ProtoWriter();
  w.int(1, 8); // ir_version
  w.string(2, model.producer);
  w.message(7, (graph) => {
    for (const [i, node] of model.nodes.entries()) {
      graph.message(1, (n) => {
        for (const input of node.inputs) n.string(1, input);
        for (const output of node.outputs) n.string(2, output);
        n.string(3, `${node.op}_${i}`);
        n.string(4, node.op);
        for (const [name, value] of Object.entries(node.attributes ?? {}))
          n.message(5, (a) => writeAttribute(a, name, value));
        if (node.domain) n.string(7, node.domain);
      });
    }
    graph.string(2, "main");
    for (const t of model.initializers)
      graph.message(5, (tensor) => {
        for (const d of t.dims) tensor.int(1, d);
        tensor.int(2, t.type);
        tensor.string(8, t.name);
        tensor.bytes(9, t.data);
      });
    for (const v of model.inputs) graph.message(11, (value) => writeValue(value, v));
    for (const v of model.outputs) graph.message(12, (value) => writeValue(value, v));
  });
  for (const [domain, version] of Object.entries(model.opsets))
    w.message(8, (opset) => {
      if (domain) opset.string(1, domain);
      opset.int(2, version);
    });
  return w.finish();
}
