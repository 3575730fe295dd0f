import { isValidMailAddress } from "@mq9/protocol";
import { describe, expect, it } from "vitest";
import { generateMailAddress } from "../src/engine/mail-address-generator.js";

describe("generated mail addresses", () => {
  it("are valid names of 26 characters", () => {
    for (let i = 0; i < 100; i++) {
      const name = generateMailAddress();
      expect(name).toMatch(/^[0-9a-v]{26}$/);
      expect(isValidMailAddress(name)).toBe(true);
    }
  });

  it("have nothing predictable: names made in the same instant share no prefix and no suffix", () => {
    // A time prefix would make the first characters equal, a counter the last ones sequential.
    const names = Array.from({ length: 2000 }, () => generateMailAddress());
    const distinct = (part: (name: string) => string) => new Set(names.map(part)).size;
    // 6 base32 characters are 30 bits: 2000 random draws almost never collide.
    expect(distinct((n) => n.slice(0, 6))).toBeGreaterThanOrEqual(1995);
    expect(distinct((n) => n.slice(-6))).toBeGreaterThanOrEqual(1995);
    // Every position uses the whole alphabet (a fixed or slowly moving character would not).
    for (let position = 0; position < 26; position++) {
      expect(
        distinct((n) => n[position]),
        `position ${position}`,
      ).toBe(32);
    }
  });
});
