import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { numberArrayLiteral, textArrayLiteral } from "../src/store/postgres/message-rows.js";
import { parseIdArray } from "../src/store/postgres/send-call.js";

/** How the pg driver writes a parameter (its module has no type declarations). */
const pgUtils = createRequire(import.meta.url)("pg/lib/utils.js") as {
  prepareValue: (value: unknown) => unknown;
};

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

describe("textArrayLiteral", () => {
  it("writes what the pg driver writes for an array of strings", () => {
    const values = ['a"b', "c\\d", "e,f", "{g}", "NULL", "", "plain", null, "ü ✓"];
    expect(textArrayLiteral(values)).toBe(pgUtils.prepareValue(values));
    expect(textArrayLiteral([])).toBe("{}");
  });
});

describe("parseIdArray", () => {
  it("reads a bigint[] in PostgreSQL's text form, NULL as null", () => {
    expect(parseIdArray("{0,NULL,9007199254740991}")).toEqual([0, null, 9_007_199_254_740_991]);
    expect(parseIdArray("{}")).toEqual([]);
    expect(parseIdArray(null)).toEqual([]);
  });
});
