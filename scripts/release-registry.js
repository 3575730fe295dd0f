#!/usr/bin/env node
// `npm run release:registry`: serves the tarballs of release/ to npm as a read-only registry of the
// @mq9 scope on 127.0.0.1, so that `npm install @mq9/cli` resolves our packages as it will from the
// npm registry (one tree, siblings shared) before they are published. Third-party packages still
// come from the user's own registry: only the scope is pointed here. The packaged-install test and
// bench/install.js start it in their own process through startReleaseRegistry().
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

/** name → { versions: { version → manifest with dist }, latest }, and file name → bytes. */
function readRelease(dir) {
  const packages = new Map();
  const files = new Map();
  const tarballs = readdirSync(dir).filter((name) => /^mq9-.*\.tgz$/.test(name));
  if (tarballs.length === 0) throw new Error(`no mq9-*.tgz in ${dir}; run npm run pack first`);
  for (const file of tarballs) {
    const path = join(dir, file);
    const bytes = readFileSync(path);
    const manifest = JSON.parse(
      execFileSync("tar", ["-xzOf", path, "package/package.json"], { encoding: "utf8" }),
    );
    files.set(file, bytes);
    const entry = packages.get(manifest.name) ?? { versions: {}, latest: manifest.version };
    entry.versions[manifest.version] = {
      ...manifest,
      _id: `${manifest.name}@${manifest.version}`,
      dist: {
        tarball: file,
        shasum: createHash("sha1").update(bytes).digest("hex"),
        integrity: `sha512-${createHash("sha512").update(bytes).digest("base64")}`,
      },
    };
    packages.set(manifest.name, entry);
  }
  return { packages, files };
}

/**
 * Serves the mq9-*.tgz of `dir` on 127.0.0.1:`port` (0: a free one); resolves once listening,
 * with the registry's URL, how many packages it serves, and close().
 */
export async function startReleaseRegistry(dir, port = 0) {
  const { packages, files } = readRelease(dir);
  const server = createServer((req, res) => {
    const base = `http://${req.headers.host}`;
    const path = decodeURIComponent(new URL(req.url ?? "/", base).pathname);
    const send = (status, body, type = "application/json") => {
      res.writeHead(status, { "content-type": type });
      res.end(body);
    };
    if (req.method !== "GET" && req.method !== "HEAD") return send(405, '{"error":"read-only registry"}');
    if (path.startsWith("/-/")) {
      const bytes = files.get(path.slice(3));
      return bytes ? send(200, bytes, "application/octet-stream") : send(404, '{"error":"not found"}');
    }
    const entry = packages.get(path.slice(1));
    if (!entry) return send(404, '{"error":"not found"}');
    const versions = Object.fromEntries(
      Object.entries(entry.versions).map(([version, manifest]) => [
        version,
        { ...manifest, dist: { ...manifest.dist, tarball: `${base}/-/${manifest.dist.tarball}` } },
      ]),
    );
    send(200, JSON.stringify({ name: path.slice(1), "dist-tags": { latest: entry.latest }, versions }));
  });
  await new Promise((listening, failed) => {
    server.once("error", failed);
    server.listen(port, "127.0.0.1", listening);
  });
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    packages: packages.size,
    close: () => new Promise((closed) => server.close(closed)),
  };
}

async function main() {
  const { values } = parseArgs({
    options: {
      dir: { type: "string", default: "release" },
      port: { type: "string", default: "4873" },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`usage: npm run release:registry [-- --dir DIR] [-- --port PORT]

Serves the mq9-*.tgz tarballs of DIR (default release/) as the @mq9 scope's registry on
http://127.0.0.1:PORT/ (default 4873; 0 = any free port). Then, in another terminal:
  npm install -g @mq9/cli --@mq9:registry=http://127.0.0.1:PORT/
`);
    return;
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`release-registry: --port must be 0–65535, not '${values.port}'\n`);
    process.exit(2);
  }
  const dir = resolve(values.dir);
  let registry;
  try {
    registry = await startReleaseRegistry(dir, port);
  } catch (err) {
    process.stderr.write(`release-registry: ${err.message}\n`);
    process.exit(1);
  }
  process.stdout.write(`serving ${registry.packages} @mq9 packages from ${dir} at ${registry.url}\n`);
  process.stdout.write(`install with: npm install -g @mq9/cli --@mq9:registry=${registry.url}\n`);
  for (const signal of ["SIGINT", "SIGTERM"]) {
    process.on(signal, () => registry.close().then(() => process.exit(0)));
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) await main();
