import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { numberArrayLiteral } from "../src/store/postgres/message-rows.js";

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
