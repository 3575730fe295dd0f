import { isValidSubscribeSubject, subjectMatches } from "../nats/subject.js";
import { patternCovers, patternsOverlap } from "./subject-pattern.js";
import type { PermissionsOptions, SubjectRules } from "./user-options.js";

/** nats-server's defaults for `allow_responses: true`. */
const DEFAULT_RESPONSE_MAX = 1;
const DEFAULT_RESPONSE_EXPIRES_MS = 2 * 60_000;

class SubjectList {
  constructor(
    readonly allow: readonly string[] | undefined,
    readonly deny: readonly string[],
  ) {}

  static from(rules: SubjectRules | undefined, what: string): SubjectList {
    if (rules === undefined) return new SubjectList(undefined, []);
    const { allow, deny } = Array.isArray(rules)
      ? { allow: rules as readonly string[], deny: undefined }
      : (rules as { allow?: readonly string[]; deny?: readonly string[] });
    for (const subject of [...(allow ?? []), ...(deny ?? [])]) {
      if (typeof subject !== "string" || !isValidSubscribeSubject(subject, true)) {
        throw new RangeError(`${what}: ${JSON.stringify(subject)} is not a valid subject pattern`);
      }
    }
    return new SubjectList(allow, deny ?? []);
  }
}

/** Outcome of a SUB against the subscribe rules. */
export type SubscribeDecision = "allow" | "deny" | "filter";

/**
 * A user's compiled permissions. A publish subject must match an allow pattern (when there is an
 * allow list) and no deny pattern. A subscription must lie within an allow pattern and not within
 * a deny pattern; a wildcard subscription that only overlaps a deny pattern is accepted, and the
 * messages on denied subjects are left out of its deliveries (nats-server does the same).
 */
export class Permissions {
  private readonly publish: SubjectList;
  private readonly subscribe: SubjectList;
  /** Undefined when responses get no exception. */
  readonly responses: { max: number; expiresMs: number } | undefined;

  constructor(options: PermissionsOptions = {}, what = "permissions") {
    this.publish = SubjectList.from(options.publish, `${what}.publish`);
    this.subscribe = SubjectList.from(options.subscribe, `${what}.subscribe`);
    const responses = options.allowResponses;
    if (responses === true) {
      this.responses = { max: DEFAULT_RESPONSE_MAX, expiresMs: DEFAULT_RESPONSE_EXPIRES_MS };
    } else if (typeof responses === "object" && responses !== null) {
      const max = responses.max ?? DEFAULT_RESPONSE_MAX;
      const expiresMs = responses.expiresMs ?? DEFAULT_RESPONSE_EXPIRES_MS;
      if (!Number.isInteger(max) || max < 1 || !Number.isInteger(expiresMs) || expiresMs < 0) {
        throw new RangeError(
          `${what}.allowResponses: max must be a positive integer and expiresMs a non-negative one`,
        );
      }
      this.responses = { max, expiresMs };
    }
  }

  /** True when nothing is restricted: the connection skips every check. */
  get unrestricted(): boolean {
    const { publish, subscribe } = this;
    return (
      publish.allow === undefined &&
      publish.deny.length === 0 &&
      subscribe.allow === undefined &&
      subscribe.deny.length === 0
    );
  }

  mayPublish(subject: string): boolean {
    const { allow, deny } = this.publish;
    if (allow !== undefined && !allow.some((pattern) => subjectMatches(pattern, subject))) return false;
    return !deny.some((pattern) => subjectMatches(pattern, subject));
  }

  maySubscribe(subject: string): SubscribeDecision {
    const { allow, deny } = this.subscribe;
    if (allow !== undefined && !allow.some((pattern) => patternCovers(pattern, subject))) return "deny";
    if (deny.some((pattern) => patternCovers(pattern, subject))) return "deny";
    return deny.some((pattern) => patternsOverlap(pattern, subject)) ? "filter" : "allow";
  }

  /** For a filtered subscription: whether a message on this literal subject may be delivered. */
  mayReceive(subject: string): boolean {
    return !this.subscribe.deny.some((pattern) => subjectMatches(pattern, subject));
  }
}
