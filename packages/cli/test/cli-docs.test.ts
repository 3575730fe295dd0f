import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { registerVerbs } from "../src/commands/index.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const doc = readFileSync(`${root}docs/cli.md`, "utf8");

/** Every command a user can run, as `mq9 agent get`: the leaves of the program's tree. */
function commandPaths(command: Command, prefix: string): string[] {
  const path = `${prefix} ${command.name()}`.trim();
  if (command.commands.length === 0) return [path];
  return command.commands.flatMap((sub) => commandPaths(sub, path));
}

/**
 * The commands docs/cli.md's table names. A row may name several: `mq9 agent unregister` /
 * `report`, or `mq9 task run / show / list / cancel`.
 */
function documentedCommands(): Set<string> {
  const table = doc.slice(doc.indexOf("## Commands"), doc.indexOf("## Exit codes"));
  const names = new Set<string>();
  for (const line of table.split("\n")) {
    const cell = /^\| (`mq9 [^|]*?) +\|/.exec(line)?.[1];
    if (!cell) continue;
    const words = cell
      .replace(/`/g, "")
      .split(/ \/ /)
      .map((part) => part.trim().split(" "));
    // The first part is a whole command line; the ones after a slash replace its last word.
    const end = words[0].findIndex((word) => !/^[a-z][a-z0-9]*$/.test(word));
    const base = end < 0 ? words[0] : words[0].slice(0, end);
    names.add(base.join(" "));
    for (const alternative of words.slice(1)) names.add([...base.slice(0, -1), alternative[0]].join(" "));
  }
  return names;
}

describe("docs/cli.md", () => {
  it("the commands table names every command mq9 has", async () => {
    const program = new Command().name("mq9");
    await registerVerbs(program, []);
    const documented = documentedCommands();
    const missing = program.commands
      .flatMap((verb) => commandPaths(verb, "mq9"))
      .filter((c) => !documented.has(c));
    expect(missing).toEqual([]);
  });
});
