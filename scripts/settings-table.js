#!/usr/bin/env node
// `npm run docs:settings`: rewrites the table of settings in docs/configuration.md from their
// declarations (packages/cli/src/serve/settings/serve-settings.ts, as built in dist/).
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { SETTINGS } from "../packages/cli/dist/serve/settings/serve-settings.js";
import { settingsTable, withSettingsTable } from "../packages/cli/dist/serve/settings/settings-doc.js";

const page = new URL("../docs/configuration.md", import.meta.url);
const before = readFileSync(page, "utf8");
const after = withSettingsTable(before, settingsTable(SETTINGS));
writeFileSync(page, after);
// Pads the table's columns as the linter wants them (the test compares cells, not spacing).
execFileSync("npx", ["biome", "format", "--write", "docs/configuration.md"], { stdio: "ignore" });
const changed = readFileSync(page, "utf8") !== before;
process.stdout.write(
  `docs/configuration.md: ${SETTINGS.length} settings, ${changed ? "table rewritten" : "unchanged"}\n`,
);
