import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { TOOLS } from "../src/index.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const doc = readFileSync(`${root}docs/mcp.md`, "utf8");

/** The tools table of docs/mcp.md: tool name → its arguments, and which of them are bold (required). */
function documentedTools(): Map<string, { args: string[]; required: string[] }> {
  const tools = new Map<string, { args: string[]; required: string[] }>();
  for (const line of doc.split("\n")) {
    const row = /^\| `(mq9_[a-z_]+)` +\|(.*?)\|/.exec(line);
    if (!row) continue;
    // Parentheses hold defaults and notes (`(\`mcp.wait\`)`), not argument names.
    const cell = row[2].replace(/\([^)]*\)/g, "");
    const args: string[] = [];
    const required: string[] = [];
    for (const [, bold, name] of cell.matchAll(/(\*\*)?`([a-z_]+)`/g)) {
      args.push(name);
      if (bold) required.push(name);
    }
    tools.set(row[1], { args, required });
  }
  return tools;
}

describe("docs/mcp.md", () => {
  it("lists every tool with exactly its arguments, the required ones in bold", () => {
    const documented = documentedTools();
    expect([...documented.keys()].sort()).toEqual(TOOLS.map((t) => t.name).sort());
    for (const tool of TOOLS) {
      const shape = tool.input.shape as Record<string, { safeParse(v: unknown): { success: boolean } }>;
      const required = Object.keys(shape).filter((name) => !shape[name].safeParse(undefined).success);
      expect({ tool: tool.name, ...documented.get(tool.name) }).toEqual({
        tool: tool.name,
        args: Object.keys(shape),
        required,
      });
    }
  });

  it("no marker of the table is mangled into an underscore after a name", () => {
    expect(doc).not.toMatch(/`[a-z_]+`_/);
  });
});
