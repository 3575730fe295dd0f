// Commands run as a user's shell would run them: without what `npm test` adds to the environment.
import { execFile } from "node:child_process";
import { delimiter, sep } from "node:path";
import { promisify } from "node:util";

const exec = promisify(execFile);

/**
 * The environment of a user's shell: without the npm_* settings `npm test` hands its scripts
 * (prefix, local prefix …) and without the node_modules/.bin folders npm puts on PATH, where this
 * checkout's own `mq9` would be found instead of the installed one.
 */
export function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.toLowerCase().startsWith("npm_") && !name.startsWith("MQ9_")) env[name] = value;
  }
  env.PATH = userPath();
  return { ...env, ...extra };
}

/** PATH without the node_modules/.bin folders npm put on it. */
export function userPath(): string {
  return (process.env.PATH ?? "")
    .split(delimiter)
    .filter((dir) => !dir.includes(`node_modules${sep}.bin`))
    .join(delimiter);
}

/** Runs a command; a failure throws with everything it printed. */
export async function sh(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = cleanEnv()) {
  try {
    return await exec(command, args, { cwd, env, maxBuffer: 64 * 1024 * 1024 });
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(" ")} failed in ${cwd}:\n${stdout ?? ""}\n${stderr ?? ""}`);
  }
}
