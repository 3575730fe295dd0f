import { describe, expect, it } from "vitest";
import { decodeItemPayload } from "../src/payload.js";

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");

describe("item payloads", () => {
  it.each([
    ["YQ==", "a"],
    ["YWI=", "ab"],
    ["YWJj", "abc"],
    ["", ""],
    [Buffer.from('{"k":[1,2]}').toString("base64"), '{"k":[1,2]}'],
  ])("decode standard base64 %j", (payload, expected) => {
    expect(text(decodeItemPayload(payload))).toBe(expected);
  });

  it("decode binary bytes exactly", () => {
    const bytes = Uint8Array.from({ length: 256 }, (_, i) => i);
    expect(
      Buffer.from(decodeItemPayload(Buffer.from(bytes).toString("base64"))).equals(Buffer.from(bytes)),
    ).toBe(true);
  });

  it.each(['{"type":"abort","id":3}', "ab-_", "ab c", "ab=c", "a===", "héllo wörld!", "abc"])(
    "take %j, which is not standard base64, as UTF-8 text",
    (payload) => {
      expect(text(decodeItemPayload(payload))).toBe(payload);
    },
  );
});
