import { createHmac, randomBytes } from "node:crypto";
import type { AuthenticatedUser, ConnectCredentials } from "./user-directory.js";

/** How long a verified credential is remembered after its last use. */
const REMEMBER_MS = 10 * 60_000;
/** Credentials remembered at most; the least recently used go first. */
const CAPACITY = 10_000;

/**
 * Credentials that verified recently, by a keyed digest of the secret they carried: a client
 * that presents one again is let in without a password check and without waiting behind a
 * guesser of its name, which no guesser can use, since matching a digest takes the secret. The
 * digest is keyed with a secret of this process, so it is no password hash to crack offline.
 * NKey sign-ins (a signature of a fresh nonce) are never remembered.
 */
export class VerifiedCredentials {
  private readonly key = randomBytes(32);
  /** Digest → who it is and until when; a Map keeps insertion order, refreshed on use (LRU). */
  private readonly known = new Map<string, { user: AuthenticatedUser; untilMs: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  /** The user these credentials verified as recently, if they did. */
  recall(creds: ConnectCredentials): AuthenticatedUser | undefined {
    const digest = this.digest(creds);
    if (digest === undefined) return undefined;
    const entry = this.known.get(digest);
    if (entry === undefined) return undefined;
    this.known.delete(digest);
    if (entry.untilMs <= this.now()) return undefined;
    this.known.set(digest, { user: entry.user, untilMs: this.now() + REMEMBER_MS });
    return entry.user;
  }

  /** Remembers credentials that just verified. */
  remember(creds: ConnectCredentials, user: AuthenticatedUser): void {
    const digest = this.digest(creds);
    if (digest === undefined) return;
    this.known.delete(digest);
    this.known.set(digest, { user, untilMs: this.now() + REMEMBER_MS });
    if (this.known.size > CAPACITY) this.known.delete(this.known.keys().next().value as string);
  }

  private digest(creds: ConnectCredentials): string | undefined {
    if (typeof creds.nkey === "string" && creds.nkey !== "") return undefined;
    const token = typeof creds.auth_token === "string" ? creds.auth_token : undefined;
    const user = typeof creds.user === "string" ? creds.user : undefined;
    const pass = typeof creds.pass === "string" ? creds.pass : undefined;
    if (token === undefined && (user === undefined || pass === undefined)) return undefined;
    return createHmac("sha256", this.key)
      .update(JSON.stringify([token ?? null, user ?? null, pass ?? null]))
      .digest("base64url");
  }
}
