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

  it("header_format: raw or json, raw only beside raw payloads; anything else is refused", () => {
    expect(parseFetchRequest(text('{"payload_format":"raw","header_format":"raw"}'))).toMatchObject({
      ok: true,
      value: { payload_format: "raw", header_format: "raw" },
    });
    expect(parseFetchRequest(text('{"header_format":"json"}'))).toMatchObject({
      ok: true,
      value: { header_format: "json" },
    });
    expect(parseFetchRequest(text('{"payload_format":"raw","header_format":"bytes"}'))).toMatchObject({
      ok: false,
      error: expect.stringContaining("'header_format' must be one of json, raw, got 'bytes'"),
    });
    for (const body of ['{"header_format":"raw"}', '{"payload_format":"base64","header_format":"raw"}']) {
      expect(parseFetchRequest(text(body))).toMatchObject({
        ok: false,
        error: expect.stringContaining(`'header_format' "raw" needs 'payload_format' "raw"`),
      });
    }
  });
});
