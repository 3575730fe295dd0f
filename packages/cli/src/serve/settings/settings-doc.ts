// docs/configuration.md's table of settings, made from the declarations: the page shows what
// `mq9 serve` reads, and a test fails when the two differ (`npm run docs:settings` rewrites it).
import type { Setting } from "./setting.js";
import { defaultText } from "./setting-text.js";

export const TABLE_START =
  "<!-- settings table: made by `npm run docs:settings` from packages/cli/src/serve/settings/serve-settings.ts -->";
export const TABLE_END = "<!-- end of settings table -->";

const code = (text: string) => `\`${text}\``;
const cell = (text: string) => text.replace(/\|/g, "\\|");

/** The Markdown table of every setting: flag, variable, file key, what it takes, default, reader, help. */
export function settingsTable(settings: readonly Setting[]): string {
  const rows = settings.map((s) => {
    const takes = s.unit ? `${s.type.takes}, ${s.unit}` : s.type.takes;
    // A default that is a value reads as code; one that is prose ("--host", "one per core") as text.
    const byDefault = s.defaultText ?? (s.default === undefined ? "none" : code(defaultText(s) ?? ""));
    return [
      s.flag ? code(`--${s.flag}`) : "(file only)",
      s.env ? code(s.env) : "",
      code(s.key),
      takes,
      byDefault,
      s.reads,
      s.help,
    ].map(cell);
  });
  const header = ["Flag", "Environment", "Config file", "Takes", "Default", "Read by", "What it sets"];
  return [header, header.map(() => "---"), ...rows].map((row) => `| ${row.join(" | ")} |`).join("\n");
}

/** `page` with the text between the table's markers replaced by `table`. */
export function withSettingsTable(page: string, table: string): string {
  const start = page.indexOf(TABLE_START);
  const end = page.indexOf(TABLE_END);
  if (start < 0 || end < start) throw new Error("the page has no settings table markers");
  return `${page.slice(0, start + TABLE_START.length)}\n\n${table}\n\n${page.slice(end)}`;
}
