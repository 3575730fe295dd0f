import { describe, expect, it } from "vitest";
import { OutboundMessage } from "../src/nats/outbound-message.js";
import { OutputBuffer } from "../src/nats/output-buffer.js";

const sameMemory = (a: Buffer, b: Buffer) => a.buffer === b.buffer && a.byteOffset === b.byteOffset;

describe("output buffer", () => {
  it("writes text as UTF-8 at its byte length, between byte pieces", () => {
    const out = new OutputBuffer();
    const text = '{"name":"über agent","emoji":"🙂"}';
    out.append(Buffer.from("MSG a 1 "));
    out.appendUtf8(text);
    out.appendCrlf();
    expect(out.take()?.toString()).toBe(`MSG a 1 ${text}\r\n`);
  });

  it("grows for text that does not fit, by its UTF-8 size", () => {
    const out = new OutputBuffer();
    const text = "ü🙂".repeat(3000);
    out.append(Buffer.from("x"));
    out.appendUtf8(text);
    expect(out.take()?.toString()).toBe(`x${text}`);
  });

  it("reuses a taken buffer once handed back, and only that one", () => {
    const out = new OutputBuffer();
    out.append(Buffer.alloc(3000, 1));
    const first = out.take()!;
    out.reuse(first);
    out.append(Buffer.alloc(2000, 2));
    const second = out.take()!;
    expect(sameMemory(second, first)).toBe(true);
    expect(second.every((b) => b === 2)).toBe(true);

    // A buffer that is not the last one taken (or was already reused) is never taken back.
    out.append(Buffer.alloc(2000, 3));
    const third = out.take()!;
    out.reuse(second.subarray(1));
    out.reuse(third);
    out.reuse(third);
    out.append(Buffer.alloc(10, 4));
    const fourth = out.take()!;
    expect(sameMemory(fourth, third)).toBe(true);
    // Not handed back this time: the next turn must not write into it.
    out.append(Buffer.alloc(10, 5));
    expect(sameMemory(out.take()!, fourth)).toBe(false);
    expect(fourth[0]).toBe(4);
  });

  it("lets a buffer far bigger than the turns need go", () => {
    const out = new OutputBuffer();
    out.append(Buffer.alloc(200_000));
    out.take();
    out.append(Buffer.alloc(100));
    const small = out.take()!;
    out.reuse(small);
    out.append(Buffer.alloc(100));
    // The 200 KB buffer was not reused for 100-byte turns.
    expect(sameMemory(out.take()!, small)).toBe(false);
  });
});

describe("outbound message", () => {
  it("sizes a text body by its UTF-8 bytes in the MSG line", () => {
    const msg = new OutboundMessage("_INBOX.x", undefined, undefined, "größe");
    expect(msg.bodyLength).toBe(7);
    expect(msg.plainTail.toString()).toBe(" 7\r\n");
  });

  it("sizes a body of pieces by their sum", () => {
    const msg = new OutboundMessage("_INBOX.x", "r", undefined, [Buffer.from("ab"), Buffer.from("cde")]);
    expect(msg.bodyLength).toBe(5);
    expect(msg.plainTail.toString()).toBe(" r 5\r\n");
  });
});
