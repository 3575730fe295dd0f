import { describe, expect, it } from "vitest";
import { formatTraceparent, isTraceId, parseTraceparent } from "../src/index.js";

describe("W3C traceparent", () => {
  it("reads a version-00 value and writes it back the same", () => {
    const value = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const parent = parseTraceparent(value);
    expect(parent).toEqual({
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      spanId: "00f067aa0ba902b7",
      sampled: true,
    });
    expect(formatTraceparent(parent!)).toBe(value);
    expect(parseTraceparent(" 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00 ")?.sampled).toBe(
      false,
    );
  });

  it("reads a later version's first four fields and ignores what follows", () => {
    expect(parseTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03-later")?.sampled).toBe(
      true,
    );
  });

  it.each([
    ["missing", undefined],
    ["empty", ""],
    ["upper-case hex", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"],
    ["all-zero trace id", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"],
    ["all-zero span id", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"],
    ["version ff", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"],
    ["version 00 with more after", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x"],
    ["short span id", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902-01"],
  ])("ignores a bad value (%s)", (_why, value) => {
    expect(parseTraceparent(value)).toBeUndefined();
  });

  it("knows a trace id: 32 lower-case hex digits, not all zero", () => {
    expect(isTraceId("4bf92f3577b34da6a3ce929d0e0e4736")).toBe(true);
    expect(isTraceId("0".repeat(32))).toBe(false);
    expect(isTraceId("task-42")).toBe(false);
  });
});
