import { DEFAULT_SERVER } from "@mq9/client";
import { type Command, Option } from "commander";
import { ExitCode, UsageError, usageExit } from "./client-command.js";
import { contextOption, fillFromContext } from "./context-defaults.js";
import { exitAfterOutput } from "./exit.js";
import { type HttpAddress, type HttpAddressFlags, resolveHttpAddress } from "./http-address.js";
import { printError, say } from "./output.js";
import { ServerInfoError } from "./server-info.js";

/** The options every command of the broker's HTTP API takes. */
export interface ApiFlags extends HttpAddressFlags {
  json?: boolean;
  verbose?: boolean;
  /** Where --server, --http and --api came from; set before the action runs. */
  sources?: { server?: string; http?: string; api?: string };
}

/** How long one HTTP request may take before the command gives up on it. */
const REQUEST_TIMEOUT_MS = 10_000;
/** How long a command waits for an orchestrator that is starting (NOT_READY) before it gives up. */
const STARTING_WAIT_MS = 10_000;

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

/**
 * Adds --server (env MQ9_SERVER), --http (env MQ9_HTTP), credentials, --json and --verbose, and
 * makes usage errors exit with code 2.
 */
export function apiCommand(command: Command): Command {
  return command
    .addOption(
      new Option("-s, --server <url>", "the broker; its HTTP port is asked of it (mq9 serve's --http-port)")
        .env("MQ9_SERVER")
        .default(DEFAULT_SERVER),
    )
    .addOption(
      new Option(
        "--http <url>",
        "the broker's HTTP server, when --server cannot tell (e.g. behind a proxy)",
      ).env("MQ9_HTTP"),
    )
    .addOption(new Option("--api <url>", "older name of --http").env("MQ9_API").hideHelp())
    .option("--json", "machine-readable output (JSON)")
    .option("-v, --verbose", "say which broker and HTTP address the command uses (on stderr)")
    .addOption(new Option("--token <token>", "the broker's token, when it has one").env("MQ9_TOKEN"))
    .addOption(new Option("--user <user>", "the broker's user, when it has one").env("MQ9_USER"))
    .addOption(new Option("--password <password>", "password for --user").env("MQ9_PASSWORD"))
    .addOption(contextOption())
    .hook("preAction", (_hooked, action) => {
      const context = fillFromContext(action);
      // A value a context gave is named after it, for --verbose and error messages.
      const source = (option: string) => {
        const from = action.getOptionValueSource(option);
        return from === "config" && context ? `context '${context.name}'` : from;
      };
      action.setOptionValue("sources", {
        server: source("server"),
        http: source("http"),
        api: source("api"),
      });
    })
    .exitOverride(usageExit);
}

/** The code of a failed fetch (ECONNREFUSED, HPE_…): undici puts it on the cause, or its first error. */
function failureCode(err: unknown): string {
  type Failure = { code?: string; message?: string; cause?: Failure; errors?: Failure[] };
  const cause = (err as Failure).cause;
  return cause?.code ?? cause?.errors?.[0]?.code ?? cause?.message ?? (err as Error).message;
}

/** The broker's HTTP API at one address. */
export class HttpApi {
  constructor(
    readonly address: HttpAddress,
    private readonly flags: ApiFlags,
  ) {}

  /** The Authorization header for a broker with credentials (it guards its HTTP routes with them). */
  private authorization(): Record<string, string> {
    const { token, user, password } =
      this.flags.token !== undefined || this.flags.user !== undefined
        ? this.flags
        : (this.address.credentials ?? {});
    if (token) return { authorization: `Bearer ${token}` };
    if (user)
      return { authorization: `Basic ${Buffer.from(`${user}:${password ?? ""}`).toString("base64")}` };
    return {};
  }

  /**
   * One JSON request; resolves with the body of a 2xx answer, throws ApiError otherwise. A
   * broker that has just started answers NOT_READY until its orchestrator is up: that answer
   * is asked again for a while (STARTING_WAIT_MS) before it counts.
   */
  async call<T = Record<string, unknown>>(
    method: "GET" | "POST" | "DELETE",
    path: string,
    body?: unknown,
  ): Promise<T> {
    const deadline = Date.now() + STARTING_WAIT_MS;
    for (;;) {
      try {
        return await this.callOnce<T>(method, path, body);
      } catch (err) {
        if (!(err instanceof ApiError) || err.code !== "NOT_READY" || Date.now() >= deadline) throw err;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  }

  private async callOnce<T>(method: "GET" | "POST" | "DELETE", path: string, body?: unknown): Promise<T> {
    const url = new URL(path, `${this.address.url}/`);
    let response: Response;
    let text: string;
    try {
      response = await fetch(url, {
        method,
        headers: {
          ...this.authorization(),
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      text = await response.text();
    } catch (err) {
      const timedOut = (err as Error).name === "TimeoutError";
      const cause = failureCode(err);
      const reason = timedOut
        ? `no answer within ${REQUEST_TIMEOUT_MS} ms`
        : cause.startsWith("HPE_")
          ? "what answers there does not speak HTTP"
          : cause;
      const hint = this.address.guess ?? "is 'mq9 serve' running there? (--server, --http)";
      throw new ApiError(
        `cannot reach the broker's HTTP API at ${this.address.url} (${reason}); ${hint}`,
        0,
        timedOut ? "TIMEOUT" : "NOT_CONNECTED",
      );
    }
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
      // The orchestrator's routes answer with a code; a 404 without one is a broker that has none.
      if (response.status === 404 && code === undefined) {
        throw new ApiError(
          `the broker at ${this.address.url} runs no orchestrator (its /api routes are not there): start mq9 serve with --orchestrator on (the default), or point --server or --http at one that runs it`,
          404,
          "NO_ORCHESTRATOR",
        );
      }
      const said = error ?? message ?? `HTTP ${response.status}`;
      // Refused or throttled credentials end the command as they do over NATS: not signed in (exit 3).
      if (response.status === 401) {
        const sent = Object.keys(this.authorization()).length > 0;
        throw new ApiError(
          sent
            ? `the broker at ${this.address.url} refused the credentials (${said}); check --token or --user/--password`
            : `the broker at ${this.address.url} wants credentials (${said}); pass --token or --user/--password`,
          401,
          "UNAUTHORIZED",
        );
      }
      if (response.status === 429 && code === undefined) throw new ApiError(said, 429, "THROTTLED");
      throw new ApiError(said, response.status, code ?? (response.status === 403 ? "FORBIDDEN" : "ERROR"));
    }
    return parsed as T;
  }
}

/** The exit code and the error code printed with --json for an error of an HTTP API command. */
function classify(err: unknown): { code: number; kind: string } {
  if (err instanceof UsageError) return { code: ExitCode.usage, kind: "USAGE" };
  if (err instanceof ServerInfoError) return { code: ExitCode.connection, kind: err.code };
  if (err instanceof ApiError) {
    const unreachable = ["NOT_CONNECTED", "NOT_READY", "TIMEOUT", "UNAUTHORIZED", "THROTTLED"].includes(
      err.code,
    );
    return { code: unreachable ? ExitCode.connection : ExitCode.brokerError, kind: err.code };
  }
  return { code: ExitCode.brokerError, kind: "ERROR" };
}

/**
 * Finds the broker's HTTP API, runs a command's work with it, and exits: 0, 1 (the API refused),
 * 2 (usage) or 3 (unreachable).
 */
export async function withApi(
  flags: ApiFlags,
  work: (api: HttpApi) => Promise<number | undefined>,
): Promise<void> {
  let exitCode: number;
  try {
    const address = await resolveHttpAddress(flags, flags.sources ?? {});
    if (flags.verbose) say(`HTTP API ${address.url} (${address.how})`);
    exitCode = (await work(new HttpApi(address, flags))) ?? ExitCode.ok;
  } catch (err) {
    exitCode = reportApiError(err, flags);
  }
  await exitAfterOutput(exitCode);
}

/** Prints a failed HTTP API command's error as its output mode asks; returns its exit code. */
export function reportApiError(err: unknown, flags: { json?: boolean }): number {
  const { code, kind } = classify(err);
  printError((err as Error).message, kind, flags.json, false);
  return code;
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
