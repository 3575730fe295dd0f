import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import bcrypt from "bcryptjs";
import { fromPublic } from "nkeys.js";
import { CheckPool } from "./check-pool.js";
import { Permissions } from "./permissions.js";
import { foldName, type Principal } from "./principal.js";
import { type AuthOptions, permissionsOf, type UserOptions } from "./user-options.js";

/** The credentials fields of a CONNECT. */
export interface ConnectCredentials {
  auth_token?: unknown;
  user?: unknown;
  pass?: unknown;
  nkey?: unknown;
  sig?: unknown;
}

/** A client that authenticated: who it is and what it may do (undefined: anything). */
export interface AuthenticatedUser {
  readonly principal: Principal;
  readonly permissions: Permissions | undefined;
}

interface Entry extends AuthenticatedUser {
  readonly password?: string;
  readonly passwordHash?: string;
}

const BCRYPT = /^\$2[abxy]?\$(\d\d)\$/;
/** Successful bcrypt checks remembered, so that reconnects do not pay the hash again. */
const MAX_REMEMBERED = 4096;

/** What a password was checked against: a user's own secret, or the stand-in for a name that has none. */
export type PasswordCheckAgainst = "user" | "dummy";

/** Password checks made so far, by hash kind and by what they were checked against. */
export type PasswordCheckCounts = Record<"bcrypt" | "plain", Record<PasswordCheckAgainst, number>>;

/** Compared when a name has no plain password, so that the comparison is made all the same. */
const DUMMY_DIGEST = createHash("sha256").update(randomBytes(32)).digest();

function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

function sameDigest(a: Buffer, b: Buffer): boolean {
  return timingSafeEqual(a, b);
}

/**
 * The name of a token user configured without `user`: derived from the token, so that it stays
 * the same when the users list is edited around it (a name from the list position would pass the
 * user's mailboxes to whoever takes that position). Domain-separated and cut to 64 bits; it still
 * confirms a guess of a short token, so such users should be given a `user` name.
 */
export function tokenUserName(token: string): string {
  return `token-${createHash("sha256").update(`mq9 token user\u0000${token}`).digest("hex").slice(0, 16)}`;
}

function refuse(message: string): never {
  throw new RangeError(`auth: ${message}`);
}

/**
 * The users a listener accepts, built from its `auth` options: one shared token or user/password
 * (single-tenant), or a list of users with permissions (multi-user: clients are isolated from each
 * other). Checks CONNECT credentials; secrets are compared in constant time.
 */
export class UserDirectory {
  private readonly byToken: { digest: Buffer; entry: Entry }[] = [];
  private readonly byName = new Map<string, Entry>();
  private readonly byNkey = new Map<string, Entry>();
  private readonly remembered = new Set<string>();
  /** A bcrypt hash no password matches, of the highest cost configured; undefined without bcrypt users. */
  private dummyHash: string | undefined;
  /** Bcrypt checks run here, a few at a time; see CheckPool. */
  readonly pool = new CheckPool();
  readonly passwordChecks: PasswordCheckCounts = {
    bcrypt: { user: 0, dummy: 0 },
    plain: { user: 0, dummy: 0 },
  };
  /** Each user name by its folded form: two names that fold alike would read as one owner. */
  private readonly foldedNames = new Map<string, string>();
  private namelessTokens = 0;

  private constructor(
    /** True when a list of users was configured: ownership and inbox isolation apply. */
    readonly multiUser: boolean,
  ) {}

  /** Undefined when `auth` asks for no authentication. */
  static from(auth: AuthOptions | undefined): UserDirectory | undefined {
    if (auth === undefined) return undefined;
    const users = auth.users;
    const single = auth.token !== undefined || auth.user !== undefined;
    if (users !== undefined && single) {
      refuse("give either users or a single token / user and password, not both");
    }
    if (users !== undefined) {
      if (users.length === 0) refuse("users is empty; add a user or leave users out");
      const directory = new UserDirectory(true);
      const defaults = permissionsOf(auth.defaultPermissions);
      for (const [i, user] of users.entries()) directory.add(user, i, defaults);
      return directory;
    }
    if (!single) return undefined;
    // The listener's own wording, since this may be the first to see the options.
    if (auth.user !== undefined && auth.password === undefined) refuse("user needs password as well");
    if (auth.password === "") refuse("password is empty; an empty password is refused");
    if (auth.token === "") refuse("token is empty; an empty token is refused");
    // One shared secret: whoever has it may do everything (either form is accepted when both are set).
    const directory = new UserDirectory(false);
    if (auth.user !== undefined)
      directory.add({ user: auth.user, password: auth.password, admin: true }, 0, undefined);
    if (auth.token !== undefined)
      directory.add({ user: "$token", token: auth.token, admin: true }, 1, undefined);
    return directory;
  }

  /** The HTTP schemes that can carry these users' credentials (Bearer for tokens, Basic for passwords). */
  get httpChallenge(): string {
    const schemes: string[] = [];
    if (this.byToken.length > 0) schemes.push('Bearer realm="mq9"');
    if ([...this.byName.values()].some((e) => e.password !== undefined || e.passwordHash !== undefined)) {
      schemes.push('Basic realm="mq9"');
    }
    return schemes.join(", ");
  }

  /** Whether a user of this name is configured. */
  has(name: string): boolean {
    return this.byName.has(name);
  }

  /** True when some token user has no `user` name (its name is derived from its token). */
  get hasNamelessTokenUsers(): boolean {
    return this.namelessTokens > 0;
  }

  /** True when some user signs in with an NKey: INFO must then carry a nonce. */
  get wantsNonce(): boolean {
    return this.byNkey.size > 0;
  }

  private add(user: UserOptions, index: number, defaults: ReturnType<typeof permissionsOf>): void {
    const where = `users[${index}]${user.user ? ` (${user.user})` : ""}`;
    const kinds = [user.password, user.token, user.nkey].filter((v) => v !== undefined).length;
    if (kinds !== 1) refuse(`${where} needs exactly one of password, token and nkey`);
    if (user.password !== undefined && user.password === "") {
      refuse(`${where} has an empty password; an empty password is refused — set one, or use a token`);
    }
    if (user.token !== undefined && user.token === "") refuse(`${where} has an empty token`);
    if (user.password !== undefined && !user.user) refuse(`${where} has a password but no user name`);
    const name = user.user ?? user.nkey ?? (user.token !== undefined ? tokenUserName(user.token) : "");
    if (this.byName.has(name)) refuse(`${where}: the user name ${JSON.stringify(name)} is given twice`);
    const folded = foldName(name);
    const lookalike = this.foldedNames.get(folded);
    if (lookalike !== undefined) {
      refuse(
        `${where}: the user names ${JSON.stringify(lookalike)} and ${JSON.stringify(name)} differ only in case or Unicode form; give one another name`,
      );
    }
    this.foldedNames.set(folded, name);
    const admin = user.admin === true;
    const options = permissionsOf(user.permissions) ?? (admin ? undefined : defaults);
    const permissions = options === undefined ? undefined : new Permissions(options, `${where}.permissions`);
    const entry: Entry = {
      principal: { name, admin, mailboxGrants: user.mailboxes ?? [] },
      permissions: permissions?.unrestricted && permissions.responses === undefined ? undefined : permissions,
      password: user.password !== undefined && !BCRYPT.test(user.password) ? user.password : undefined,
      passwordHash: user.password !== undefined && BCRYPT.test(user.password) ? user.password : undefined,
    };
    this.byName.set(name, entry);
    const cost = entry.passwordHash === undefined ? undefined : BCRYPT.exec(entry.passwordHash)?.[1];
    if (
      cost !== undefined &&
      (this.dummyHash === undefined || cost > (BCRYPT.exec(this.dummyHash)?.[1] ?? ""))
    ) {
      // A salt of that cost and a hash part no bcrypt output has: comparing costs what a real check does.
      this.dummyHash = `${bcrypt.genSaltSync(Number(cost))}${".".repeat(31)}`;
    }
    if (user.token !== undefined && user.user === undefined) this.namelessTokens++;
    if (user.token !== undefined) {
      const tokenDigest = digest(user.token);
      if (this.byToken.some((t) => sameDigest(t.digest, tokenDigest))) {
        refuse(`${where}: two users have the same token`);
      }
      this.byToken.push({ digest: tokenDigest, entry });
    }
    if (user.nkey !== undefined) {
      try {
        fromPublic(user.nkey);
      } catch {
        refuse(`${where}: nkey ${JSON.stringify(user.nkey)} is not an NKey public key`);
      }
      if (!user.nkey.startsWith("U")) refuse(`${where}: nkey must be a user key (starting with U)`);
      this.byNkey.set(user.nkey, entry);
    }
  }

  /**
   * The user the credentials prove, or undefined. A promise only when a bcrypt hash has to be
   * checked; every other check answers at once. A failed password check costs the same whether the
   * name is unknown, has a plain password or a bcrypt hash: with bcrypt users configured, every
   * failure runs one bcrypt check of their cost (against a dummy hash when the name has none).
   * Bcrypt checks wait in `pool` by `rank` (lower first) and reject with CheckShed when dropped.
   */
  authenticate(
    creds: ConnectCredentials,
    nonce: string | undefined,
    rank = 1,
  ): AuthenticatedUser | undefined | Promise<AuthenticatedUser | undefined> {
    if (typeof creds.nkey === "string" && creds.nkey !== "") return this.byNkeySignature(creds, nonce);
    if (typeof creds.auth_token === "string") {
      const given = digest(creds.auth_token);
      let found: Entry | undefined;
      // Every entry is compared, so the time taken does not tell which one matched.
      for (const { digest: d, entry } of this.byToken) if (sameDigest(d, given)) found = entry;
      if (found !== undefined) return found;
    }
    if (typeof creds.user !== "string" || typeof creds.pass !== "string") return undefined;
    const pass = creds.pass;
    const entry = this.byName.get(creds.user);
    const hash = entry?.passwordHash;
    if (entry !== undefined && hash !== undefined) {
      const key = `${creds.user}\u0000${digest(`${hash}\u0000${pass}`).toString("hex")}`;
      if (this.remembered.has(key)) return entry;
      return this.bcrypt(pass, hash, "user", rank).then((ok) => {
        if (!ok) return undefined;
        if (this.remembered.size >= MAX_REMEMBERED) this.remembered.clear();
        this.remembered.add(key);
        return entry;
      });
    }
    const plain = entry?.password;
    this.passwordChecks.plain[plain === undefined ? "dummy" : "user"]++;
    const ok = sameDigest(plain === undefined ? DUMMY_DIGEST : digest(plain), digest(pass));
    if (ok && entry !== undefined) return entry;
    const dummy = this.dummyHash;
    if (dummy === undefined) return undefined;
    return this.bcrypt(pass, dummy, "dummy", rank).then(() => undefined);
  }

  private bcrypt(pass: string, hash: string, against: PasswordCheckAgainst, rank: number): Promise<boolean> {
    return this.pool.run(rank, () => {
      this.passwordChecks.bcrypt[against]++;
      return bcrypt.compare(pass, hash);
    });
  }

  private byNkeySignature(creds: ConnectCredentials, nonce: string | undefined): Entry | undefined {
    const entry = this.byNkey.get(creds.nkey as string);
    if (entry === undefined || nonce === undefined || typeof creds.sig !== "string") return undefined;
    try {
      const signature = Buffer.from(creds.sig, "base64url");
      return fromPublic(creds.nkey as string).verify(new TextEncoder().encode(nonce), signature)
        ? entry
        : undefined;
    } catch {
      return undefined;
    }
  }
}
