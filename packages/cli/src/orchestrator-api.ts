import { Defaults } from "@mq9/protocol";
import { type Command, Option } from "commander";
import { ExitCode, UsageError, usageExit } from "./client-command.js";

/** Where the orchestrator's HTTP API is when nothing says otherwise: `mq9 serve`'s HTTP server. */
export const DEFAULT_API = `http://127.0.0.1:${Defaults.httpPort}`;

/** The options every orchestrator command takes. */
export interface ApiFlags {
  api: string;
  json?: boolean;
  token?: string;
  user?: string;
  password?: string;
}

/** An error answer of the API: its HTTP status and its stable code. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string,
  ) {
    super(message);
  }
}

/** Adds --api (env MQ9_API) and --json, and makes usage errors exit with code 2. */
export function apiCommand(command: Command): Command {
  return command
    .addOption(
      new Option("--api <url>", "the orchestrator's HTTP API (mq9 serve's HTTP server)")
        .env("MQ9_API")
        .default(DEFAULT_API),
    )
    .option("--json", "machine-readable output (JSON)")
    .addOption(new Option("--token <token>", "the broker's token, when it has one").env("MQ9_TOKEN"))
    .addOption(new Option("--user <user>", "the broker's user, when it has one").env("MQ9_USER"))
    .addOption(new Option("--password <password>", "password for --user").env("MQ9_PASSWORD"))
    .exitOverride(usageExit);
}

/** The Authorization header for a broker with credentials (it guards its HTTP routes with them). */
function authorization(flags: ApiFlags): Record<string, string> {
  if (flags.token) return { authorization: `Bearer ${flags.token}` };
  if (flags.user) {
    const basic = Buffer.from(`${flags.user}:${flags.password ?? ""}`).toString("base64");
    return { authorization: `Basic ${basic}` };
  }
  return {};
}

/** One JSON request to the API; resolves with the body of a 2xx answer, throws ApiError otherwise. */
export async function callApi<T = Record<string, unknown>>(
  flags: ApiFlags,
  method: "GET" | "POST",
  path: string,
  body?: unknown,
): Promise<T> {
  let url: URL;
  try {
    url = new URL(path, flags.api);
  } catch {
    throw new UsageError(`--api '${flags.api}' is not a URL like http://127.0.0.1:8332`);
  }
  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers: {
        ...authorization(flags),
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    const reason = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
    throw new ApiError(
      `cannot reach the orchestrator API at ${flags.api} (${reason}); is 'mq9 serve' running? (--api, MQ9_API)`,
      0,
      "NOT_CONNECTED",
    );
  }
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text === "" ? {} : JSON.parse(text);
  } catch {
    throw new ApiError(
      `${url} answered ${response.status} with something that is not JSON`,
      response.status,
      "INTERNAL",
    );
  }
  if (!response.ok) {
    const { error, code, message } = parsed as { error?: string; code?: string; message?: string };
    throw new ApiError(error ?? message ?? `HTTP ${response.status}`, response.status, code ?? "ERROR");
  }
  return parsed as T;
}

/** Runs a command's work and sets the exit code: 0, 1 (the API refused), 2 (usage) or 3 (unreachable). */
export async function withApi(flags: ApiFlags, work: () => Promise<number | undefined>): Promise<void> {
  try {
    process.exitCode = (await work()) ?? ExitCode.ok;
  } catch (err) {
    let code: number = ExitCode.brokerError;
    let kind = "ERROR";
    if (err instanceof UsageError) {
      code = ExitCode.usage;
      kind = "USAGE";
    } else if (err instanceof ApiError) {
      kind = err.code;
      if (err.code === "NOT_CONNECTED" || err.code === "NOT_READY") code = ExitCode.connection;
    }
    const message = (err as Error).message;
    if (flags.json) process.stderr.write(`${JSON.stringify({ error: message, code: kind })}\n`);
    else process.stderr.write(`mq9: ${message}\n`);
    process.exitCode = code;
  }
}

/** Unix ms as a local clock time with milliseconds, for timelines. */
export function clock(ms: number): string {
  return new Date(ms).toISOString().slice(11, 23);
}

/** A duration for people: 840 ms, 3.2 s, 4 min 10 s. */
export function duration(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return "-";
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}
