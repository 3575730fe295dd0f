// Saved server profiles (`mq9 context …`, like `nats context`): one JSON file per context in
// <config dir>/contexts/, and the selected one's name in <config dir>/context.txt.
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { UsageError } from "./usage-error.js";

/** One saved context: where the broker is and how to sign in, as the flags of the same names. */
export interface SavedContext {
  server: string;
  token?: string;
  user?: string;
  password?: string;
  /** A file holding an NKey user's seed (the file, never the seed, is saved). */
  nkey_seed?: string;
  tls_ca?: string;
  http?: string;
  description?: string;
}

/** A context with its name, as commands use it. */
export interface NamedContext extends SavedContext {
  name: string;
}

const NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/;

/** Where contexts live: $MQ9_CONFIG_HOME, else $XDG_CONFIG_HOME/mq9, else ~/.config/mq9. */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.MQ9_CONFIG_HOME) return env.MQ9_CONFIG_HOME;
  if (env.XDG_CONFIG_HOME) return join(env.XDG_CONFIG_HOME, "mq9");
  return join(homedir(), ".config", "mq9");
}

/** Throws a usage error unless `name` can be a context's file name. */
export function checkContextName(name: string): void {
  if (!NAME.test(name)) {
    throw new UsageError(
      `'${name}' is not a context name: letters, digits, '_', '.' and '-', not starting with '.' or '-'`,
    );
  }
}

/** The contexts of one config directory. Every failure is a UsageError (exit 2) that says what to do. */
export class ContextStore {
  constructor(readonly dir: string = configDir()) {}

  private get contextsDir(): string {
    return join(this.dir, "contexts");
  }

  private get selectionFile(): string {
    return join(this.dir, "context.txt");
  }

  /** The file that holds context `name`. */
  fileOf(name: string): string {
    return join(this.contextsDir, `${name}.json`);
  }

  /** Every saved context's name, sorted. */
  names(): string[] {
    if (!existsSync(this.contextsDir)) return [];
    return readdirSync(this.contextsDir)
      .filter((file) => file.endsWith(".json"))
      .map((file) => file.slice(0, -".json".length))
      .filter((name) => NAME.test(name))
      .sort();
  }

  has(name: string): boolean {
    return existsSync(this.fileOf(name));
  }

  /** Reads context `name`; `how` says how it was named, for the error. */
  read(name: string, how: (name: string) => string = (n) => `context '${n}'`): NamedContext {
    checkContextName(name);
    const file = this.fileOf(name);
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch {
      const known = this.names();
      throw new UsageError(
        `${how(name)} does not exist (${known.length > 0 ? `known: ${known.join(", ")}` : "there are none"}); add it with: mq9 context add ${name} --server <url>`,
      );
    }
    let saved: SavedContext;
    try {
      saved = JSON.parse(text) as SavedContext;
    } catch {
      throw new UsageError(`${file} is not valid JSON: fix it, or remove it with mq9 context rm ${name}`);
    }
    if (typeof saved !== "object" || saved === null || typeof saved.server !== "string") {
      throw new UsageError(`${file} names no server: add it again with mq9 context add ${name} --force`);
    }
    return { ...saved, name };
  }

  /** Saves a context; its file is readable by its owner only, since it may hold a token. */
  write(name: string, context: SavedContext): string {
    checkContextName(name);
    mkdirSync(this.contextsDir, { recursive: true, mode: 0o700 });
    const file = this.fileOf(name);
    writeFileSync(file, `${JSON.stringify(context, null, 2)}\n`, { mode: 0o600 });
    // writeFileSync's mode applies to a new file only: one that was there keeps its own.
    chmodSync(file, 0o600);
    return file;
  }

  remove(name: string): void {
    this.read(name);
    rmSync(this.fileOf(name));
    if (this.selectedName() === name) rmSync(this.selectionFile, { force: true });
  }

  /** The selected context's name, or undefined when none is. */
  selectedName(): string | undefined {
    let text: string;
    try {
      text = readFileSync(this.selectionFile, "utf8");
    } catch {
      return undefined;
    }
    const name = text.trim();
    return name === "" ? undefined : name;
  }

  select(name: string): NamedContext {
    const context = this.read(name);
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    writeFileSync(this.selectionFile, `${name}\n`, { mode: 0o600 });
    return context;
  }

  /** The selected context, or undefined; a selection whose file is gone is an error, not silence. */
  selected(): NamedContext | undefined {
    const name = this.selectedName();
    if (name === undefined) return undefined;
    return this.read(name, (n) => `the selected context '${n}' (${this.selectionFile})`);
  }
}

/** How a context authenticates, without its secret: for ls and show. */
export function authSummary(context: SavedContext): string {
  if (context.token) return "token";
  if (context.user) return `user ${context.user}`;
  if (context.nkey_seed) return `nkey ${context.nkey_seed}`;
  return "-";
}
