import { subjectMatches } from "./subject.js";

/** What the sublist needs to know about a subscription. */
export interface SublistEntry {
  readonly subject: string;
  readonly queue: string | undefined;
}

/** Every subscription interested in one subject: plain ones, and the members of each queue group. */
export interface SublistResult<T> {
  readonly psubs: readonly T[];
  readonly qsubs: readonly (readonly T[])[];
}

interface Node<T> {
  psubs: Set<T>;
  qsubs: Map<string, Set<T>>;
  next: Level<T> | undefined;
}

interface Level<T> {
  literal: Map<string, Node<T>>;
  /** The `*` child. */
  star: Node<T> | undefined;
  /** The `>` child. */
  tail: Node<T> | undefined;
}

const EMPTY: SublistResult<never> = Object.freeze({ psubs: [] as never[], qsubs: [] as never[][] });
const DEFAULT_CACHE_SIZE = 4096;

function newLevel<T>(): Level<T> {
  return { literal: new Map(), star: undefined, tail: undefined };
}

function newNode<T>(): Node<T> {
  return { psubs: new Set(), qsubs: new Map(), next: undefined };
}

function isEmptyNode<T>(node: Node<T>): boolean {
  return (
    node.psubs.size === 0 && node.qsubs.size === 0 && (node.next === undefined || isEmptyLevel(node.next))
  );
}

function isEmptyLevel<T>(level: Level<T>): boolean {
  return level.literal.size === 0 && level.star === undefined && level.tail === undefined;
}

/**
 * Subscription index: a trie over subject tokens with `*` and `>` branches at each level, and a
 * bounded cache of match results keyed by subject. Publishing hits the cache almost always (the
 * same subjects recur); a subscribe or unsubscribe drops only the cached subjects it could match,
 * so a client adding its `_INBOX.x.*` does not flush the entries of unrelated subjects.
 */
export class Sublist<T extends SublistEntry> {
  private readonly root: Level<T> = newLevel();
  private readonly cache = new Map<string, SublistResult<T>>();
  private entries = 0;
  /** Bumped by every insert and remove: what was matched before may have changed. */
  private version = 0;
  /**
   * The last one-off match whose result did not depend on the subject's last token (reply
   * inboxes `_INBOX.<id>.<n>` under a client's `_INBOX.<id>.*`): kept for the subjects that only
   * differ in that token.
   */
  private oneOff?: { prefix: string; version: number; result: SublistResult<T> };

  constructor(private readonly maxCache = DEFAULT_CACHE_SIZE) {}

  /** Number of subscriptions held. */
  get size(): number {
    return this.entries;
  }

  insert(entry: T): void {
    const tokens = entry.subject.split(".");
    let level = this.root;
    let node: Node<T> | undefined;
    for (let i = 0; i < tokens.length; i++) {
      const token = tokens[i];
      if (token === "*") {
        level.star ??= newNode();
        node = level.star;
      } else if (token === ">") {
        level.tail ??= newNode();
        node = level.tail;
      } else {
        node = level.literal.get(token);
        if (node === undefined) {
          node = newNode();
          level.literal.set(token, node);
        }
      }
      if (i < tokens.length - 1) {
        node.next ??= newLevel();
        level = node.next;
      }
    }
    if (node === undefined) return;
    if (entry.queue === undefined) {
      node.psubs.add(entry);
    } else {
      let group = node.qsubs.get(entry.queue);
      if (group === undefined) {
        group = new Set();
        node.qsubs.set(entry.queue, group);
      }
      group.add(entry);
    }
    this.entries++;
    this.version++;
    this.invalidate(entry.subject);
  }

  /** Removes the entry; returns false when it was not there. */
  remove(entry: T): boolean {
    const tokens = entry.subject.split(".");
    const path: { level: Level<T>; token: string; node: Node<T> }[] = [];
    let level: Level<T> | undefined = this.root;
    for (const token of tokens) {
      if (level === undefined) return false;
      const node: Node<T> | undefined =
        token === "*" ? level.star : token === ">" ? level.tail : level.literal.get(token);
      if (node === undefined) return false;
      path.push({ level, token, node });
      level = node.next;
    }
    const last = path[path.length - 1].node;
    let removed: boolean;
    if (entry.queue === undefined) {
      removed = last.psubs.delete(entry);
    } else {
      const group = last.qsubs.get(entry.queue);
      removed = group?.delete(entry) ?? false;
      if (group !== undefined && group.size === 0) last.qsubs.delete(entry.queue);
    }
    if (!removed) return false;
    this.entries--;
    this.version++;
    // Prune emptied nodes bottom-up so a churn of unique inbox subjects does not grow the trie.
    for (let i = path.length - 1; i >= 0; i--) {
      const { level: parent, token, node } = path[i];
      if (node.next !== undefined && isEmptyLevel(node.next)) node.next = undefined;
      if (!isEmptyNode(node)) break;
      if (token === "*") parent.star = undefined;
      else if (token === ">") parent.tail = undefined;
      else parent.literal.delete(token);
    }
    this.invalidate(entry.subject);
    return true;
  }

  /**
   * All subscriptions matching a literal subject. The result is shared: do not mutate it.
   * `remember: false` does not cache it (a subject seen once, like a reply inbox, would only
   * push out the ones that repeat).
   */
  match(subject: string, remember = true): SublistResult<T> {
    const cached = this.cache.get(subject);
    if (cached !== undefined) return cached;
    const dot = subject.lastIndexOf(".");
    const oneOff = this.oneOff;
    if (
      !remember &&
      oneOff !== undefined &&
      oneOff.version === this.version &&
      dot === oneOff.prefix.length &&
      subject.startsWith(oneOff.prefix)
    ) {
      return oneOff.result;
    }
    const found: Found<T> = { psubs: [], lastTokenMatters: false };
    this.collect(this.root, subject.split("."), 0, found);
    const { psubs, groups } = found;
    const result: SublistResult<T> =
      psubs.length === 0 && groups === undefined
        ? EMPTY
        : { psubs, qsubs: groups ? [...groups.values()] : [] };
    if (!remember) {
      if (dot > 0 && !found.lastTokenMatters) {
        this.oneOff = { prefix: subject.slice(0, dot), version: this.version, result };
      }
      return result;
    }
    if (this.cache.size >= this.maxCache) this.evict();
    this.cache.set(subject, result);
    return result;
  }

  private collect(level: Level<T>, tokens: string[], i: number, found: Found<T>): void {
    if (level.tail !== undefined) addNode(level.tail, found);
    const last = i === tokens.length - 1;
    if (last && level.literal.size > 0) found.lastTokenMatters = true;
    const literal = level.literal.get(tokens[i]);
    if (literal !== undefined) {
      if (last) addNode(literal, found);
      else if (literal.next !== undefined) this.collect(literal.next, tokens, i + 1, found);
    }
    const star = level.star;
    if (star !== undefined) {
      if (last) addNode(star, found);
      else if (star.next !== undefined) this.collect(star.next, tokens, i + 1, found);
    }
  }

  private invalidate(pattern: string): void {
    if (this.cache.size === 0) return;
    if (!pattern.includes("*") && !pattern.includes(">")) {
      this.cache.delete(pattern);
      return;
    }
    for (const subject of this.cache.keys()) {
      if (subjectMatches(pattern, subject)) this.cache.delete(subject);
    }
  }

  /** Drops the oldest quarter of the cache; cheaper than true LRU bookkeeping on every hit. */
  private evict(): void {
    let drop = Math.max(1, this.maxCache >> 2);
    for (const key of this.cache.keys()) {
      this.cache.delete(key);
      if (--drop === 0) break;
    }
  }
}

/** What a match collects; the queue groups' map is made only when a queue subscription matches. */
interface Found<T> {
  psubs: T[];
  groups?: Map<string, T[]>;
  /** A level the last token was looked up in had literal children: another token could match differently. */
  lastTokenMatters: boolean;
}

function addNode<T>(node: Node<T>, found: Found<T>): void {
  for (const sub of node.psubs) found.psubs.push(sub);
  if (node.qsubs.size === 0) return;
  // Members of one queue name form one group even across different patterns, as in nats-server.
  found.groups ??= new Map();
  const groups = found.groups;
  for (const [queue, members] of node.qsubs) {
    let group = groups.get(queue);
    if (group === undefined) {
      group = [];
      groups.set(queue, group);
    }
    for (const sub of members) group.push(sub);
  }
}
