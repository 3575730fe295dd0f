import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { startBroker, type TestBroker } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const read = (page: string) => readFileSync(`${root}docs/${page}`, "utf8").replace(/\s+/g, " ");

describe("docs: a generated mail address", () => {
  let t: TestBroker;
  beforeAll(async () => {
    t = await startBroker();
  });
  afterAll(() => t.close());

  it("is as long and of the alphabet docs/protocol.md and docs/client.md say", async () => {
    const client = await t.client();
    const generated = await Promise.all(Array.from({ length: 20 }, () => client.createMailbox()));
    const protocol = read("protocol.md");
    const said =
      /without a name generates a (\d+)-character address of lowercase base32hex characters, `0`–`9` and `a`–`v` \(`([^`]+)`\)/.exec(
        protocol,
      );
    expect(said, "docs/protocol.md describes generated addresses").not.toBeNull();
    const [, length, example] = said as RegExpExecArray;
    const shape = new RegExp(`^[0-9a-v]{${length}}$`);
    expect(example).toMatch(shape);
    for (const address of generated) expect(address).toMatch(shape);
    expect(new Set(generated).size).toBe(generated.length);
    expect(read("client.md")).toContain(`or a ${length}-character one the broker generated`);
  });
});
