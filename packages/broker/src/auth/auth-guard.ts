import type { Logger } from "../logger.js";
import { AuthThrottle, type AuthThrottleOptions, type AuthTransport } from "./auth-throttle.js";
import { CheckShed } from "./check-pool.js";
import { type AuthenticatedUser, type ConnectCredentials, UserDirectory } from "./user-directory.js";
import type { AuthOptions } from "./user-options.js";
import { VerifiedCredentials } from "./verified-credentials.js";

/** Why an attempt was refused: wrong credentials, none at all, or throttled before they were checked. */
export type AuthRefusal = "invalid" | "missing" | "throttled";

/** The answer to one attempt to sign in. */
export type AuthOutcome =
  | { readonly user: AuthenticatedUser; readonly refusal?: undefined; readonly retryAfterMs?: undefined }
  | { readonly user?: undefined; readonly refusal: AuthRefusal; readonly retryAfterMs?: number };

/** Attempts refused and throttled so far, by transport and reason (what the metrics show). */
export class AuthCounts {
  /** Keyed `transport reason`. */
  readonly failures = new Map<string, number>();
  /** Keyed `transport outcome`, outcome "delayed" (checked after a wait) or "refused" (unchecked). */
  readonly throttled = new Map<string, number>();

  failed(transport: AuthTransport, reason: Exclude<AuthRefusal, "throttled">): void {
    bump(this.failures, `${transport} ${reason}`);
  }

  throttle(transport: AuthTransport, outcome: "delayed" | "refused"): void {
    bump(this.throttled, `${transport} ${outcome}`);
  }
}

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

/** The throttle's name of an attempt: the user name, the NKey, or "token"; undefined with no credentials. */
function nameOf(creds: ConnectCredentials): string | undefined {
  if (typeof creds.nkey === "string" && creds.nkey !== "") return `nkey:${creds.nkey}`;
  if (typeof creds.user === "string") return `user:${creds.user}`;
  if (typeof creds.auth_token === "string") return "token";
  return undefined;
}

/**
 * The one place where credentials are checked, for the NATS listener and the HTTP server alike:
 * the users (UserDirectory), the throttle of guessers (AuthThrottle, see it for the scheme) and
 * the counts of refused and throttled attempts.
 */
export class AuthGuard {
  readonly counts = new AuthCounts();
  private readonly verified = new VerifiedCredentials();

  constructor(
    readonly users: UserDirectory,
    readonly throttle: AuthThrottle,
  ) {}

  /** Undefined when `auth` asks for no authentication. */
  static from(
    auth: AuthOptions | undefined,
    throttle: AuthThrottleOptions | undefined,
    logger: Logger,
  ): AuthGuard | undefined {
    const users = UserDirectory.from(auth);
    return users === undefined ? undefined : new AuthGuard(users, new AuthThrottle(logger, throttle));
  }

  /**
   * Checks the credentials of an attempt from `ip`. Answers at once when it can; a promise when a
   * throttled name waits its turn (never longer than `maxWaitMs`) or a bcrypt hash is checked.
   */
  check(
    transport: AuthTransport,
    ip: string,
    creds: ConnectCredentials,
    nonce: string | undefined,
    maxWaitMs?: number,
  ): AuthOutcome | Promise<AuthOutcome> {
    const name = nameOf(creds);
    if (name === undefined) {
      // Not a guess: nothing to slow down, but it is counted.
      this.counts.failed(transport, "missing");
      return { refusal: "missing" };
    }
    // A credential that verified before comes in at once, even while its name is being guessed.
    const known = this.verified.recall(creds);
    if (known !== undefined) {
      this.throttle.succeeded(ip, name);
      return { user: known };
    }
    const admission = this.throttle.admit(ip, name, maxWaitMs);
    if (admission.shed) return this.shed(transport, ip, admission.retryAfterMs);
    const settle = (user: AuthenticatedUser | undefined): AuthOutcome => {
      if (user !== undefined) this.verified.remember(creds, user);
      return this.settle(transport, ip, name, user);
    };
    const refused = (err: unknown): AuthOutcome => {
      if (err instanceof CheckShed) return this.shed(transport, ip, this.throttle.maxWaitMs);
      throw err;
    };
    if (admission.delayMs === 0) {
      const result = this.users.authenticate(creds, nonce, admission.rank);
      return result instanceof Promise ? result.then(settle, refused) : settle(result);
    }
    this.counts.throttle(transport, "delayed");
    return new Promise<void>((resolve) => setTimeout(resolve, admission.delayMs).unref())
      .then(() => this.users.authenticate(creds, nonce, admission.rank))
      .then(settle, refused);
  }

  private settle(
    transport: AuthTransport,
    ip: string,
    name: string,
    user: AuthenticatedUser | undefined,
  ): AuthOutcome {
    if (user !== undefined) {
      this.throttle.succeeded(ip, name);
      return { user };
    }
    this.throttle.failed(ip, name, transport);
    this.counts.failed(transport, "invalid");
    return { refusal: "invalid" };
  }

  private shed(transport: AuthTransport, ip: string, retryAfterMs: number): AuthOutcome {
    this.counts.throttle(transport, "refused");
    this.throttle.shed(ip, transport);
    return { refusal: "throttled", retryAfterMs };
  }
}
