import { describe, expect, it } from "vitest";
import { parseAckRequest, parseFetchRequest } from "../src/index.js";

const text = (value: string) => new TextEncoder().encode(value);

describe("request bodies", () => {
  it("a body cut off inside a character fails alone: the next body decodes from its own bytes", () => {
    const cut = Uint8Array.from([...text('{"group_name":"g","msg_id":1}'), 0xc3]);
    expect(parseAckRequest(cut)).toMatchObject({ ok: false, error: expect.stringMatching(/malformed JSON/) });
    expect(parseAckRequest(text('{"group_name":"g","msg_id":2}'))).toEqual({
      ok: true,
      value: expect.objectContaining({ group_name: "g", msg_id: 2 }),
    });
    expect(parseFetchRequest(text('{"group_name":"é"}'))).toMatchObject({
      ok: true,
      value: { group_name: "é" },
    });
  });
});
