import pgUtils from "pg/lib/utils.js";
import { describe, expect, it } from "vitest";
import { numberArrayLiteral } from "../src/store/postgres/message-rows.js";

describe("numberArrayLiteral", () => {
  it("writes what the pg driver writes for an array of numbers, without the quotes", () => {
    const values = [0, 1, -1, null, 1_765_000_000_123, undefined, 42];
    const driver = (pgUtils.prepareValue(values) as string).replaceAll('"', "");
    expect(numberArrayLiteral(values)).toBe(driver);
    expect(numberArrayLiteral(values)).toBe("{0,1,-1,NULL,1765000000123,NULL,42}");
  });

  it("writes an empty array as {}", () => {
    expect(numberArrayLiteral([])).toBe("{}");
  });
});
