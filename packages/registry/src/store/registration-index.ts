import { foldName } from "@mq9/broker/internal";
import { RESOURCE_KINDS, type ResourceKind } from "@mq9/protocol";
import { forEachOwner, hasOwner, TagBitmaps } from "../search/tag-bitmaps.js";
import { LiveCount } from "./live-count.js";
import type { AgentFilter, AgentRow } from "./registry-store.js";

/** A registration in memory, with what discovery needs to find it. */
export interface IndexedRegistration {
  /** A small number naming the agent in the full-text index; reused after the agent is gone. */
  readonly owner: number;
  readonly mailbox: string;
  readonly kind: ResourceKind;
  readonly name: string;
  readonly tags: ReadonlySet<string>;
  readonly ttlS: number;
  /** Unix ms; null = never expires. */
  expiresMs: number | null;
  readonly docIds: readonly number[];
  /** The record as stored; replaced (not changed) by a heartbeat. */
  record: AgentRow;
}

/** When a registration with this ttl, last heard from at `lastSeenMs`, expires (null: never). */
export function expiryOf(ttlS: number, lastSeenMs: number): number | null {
  return ttlS > 0 ? lastSeenMs + ttlS * 1000 : null;
}

/** The one kind a filter keeps, or undefined when it keeps every kind. */
function onlyKind(filter: AgentFilter): ResourceKind | undefined {
  const kinds = filter.kinds;
  if (kinds === undefined || RESOURCE_KINDS.every((kind) => kinds.includes(kind))) return undefined;
  return kinds[0];
}

/** Discovery's default order: by name, then mailbox. */
function before(a: IndexedRegistration, b: IndexedRegistration): boolean {
  return a.name < b.name || (a.name === b.name && a.mailbox < b.mailbox);
}

/**
 * The registrations' discovery metadata in memory: liveness, tags (a bitmap
 * per tag over owner numbers) and the name order of listings, so tag and
 * list queries never scan. The records themselves stay in the store.
 */
export class RegistrationIndex {
  private readonly byMailbox = new Map<string, IndexedRegistration>();
  /** By folded name (foldName): an exact name's entries are among them. */
  private readonly byName = new Map<string, Set<IndexedRegistration>>();
  private readonly byOwner: (IndexedRegistration | undefined)[] = [];
  private readonly freeOwners: number[] = [];
  private readonly tagBits = new TagBitmaps();
  /** Every entry, by name then mailbox. */
  private readonly ordered: IndexedRegistration[] = [];
  private readonly live = new LiveCount();
  /**
   * The registrations that are not agents (MCP servers): few, so a query for them alone walks
   * this set, and agents alone are counted as everyone minus them.
   */
  private readonly others = new Set<IndexedRegistration>();

  get size(): number {
    return this.byMailbox.size;
  }

  /** Adds or replaces the registration of `record.mailbox`. */
  put(record: AgentRow, docIds: readonly number[]): IndexedRegistration {
    this.remove(record.mailbox);
    const entry: IndexedRegistration = {
      owner: this.freeOwners.pop() ?? this.byOwner.length,
      mailbox: record.mailbox,
      kind: record.kind ?? "agent",
      name: record.name,
      tags: new Set(record.tags),
      ttlS: record.ttlS,
      expiresMs: expiryOf(record.ttlS, record.lastSeenMs),
      docIds,
      record,
    };
    this.byMailbox.set(entry.mailbox, entry);
    const folded = foldName(entry.name);
    let named = this.byName.get(folded);
    if (!named) {
      named = new Set();
      this.byName.set(folded, named);
    }
    named.add(entry);
    this.byOwner[entry.owner] = entry;
    for (const tag of entry.tags) this.tagBits.add(tag, entry.owner);
    this.ordered.splice(this.position(entry), 0, entry);
    this.live.added(entry.expiresMs);
    if (entry.kind !== "agent") this.others.add(entry);
    return entry;
  }

  remove(mailbox: string): IndexedRegistration | undefined {
    const entry = this.byMailbox.get(mailbox);
    if (!entry) return undefined;
    this.byMailbox.delete(mailbox);
    const folded = foldName(entry.name);
    const named = this.byName.get(folded);
    named?.delete(entry);
    if (named?.size === 0) this.byName.delete(folded);
    this.byOwner[entry.owner] = undefined;
    this.freeOwners.push(entry.owner);
    for (const tag of entry.tags) this.tagBits.remove(tag, entry.owner);
    this.ordered.splice(this.position(entry), 1);
    this.live.removed(entry.expiresMs);
    this.others.delete(entry);
    return entry;
  }

  /** Entries whose name is `name` up to case and Unicode form (foldName), live or not. */
  namesakes(name: string): IndexedRegistration[] {
    return [...(this.byName.get(foldName(name)) ?? [])];
  }

  /** Every user that owns live registrations, with at most `examples` of its mailboxes, in order. */
  userOwners(nowMs: number, examples: number): { owner: string; count: number; mailboxes: string[] }[] {
    const owners = new Map<string, { owner: string; count: number; mailboxes: string[] }>();
    for (const entry of this.byMailbox.values()) {
      const owner = entry.record.owner;
      if (owner === undefined || !this.isLive(entry, nowMs)) continue;
      let found = owners.get(owner);
      if (found === undefined) {
        found = { owner, count: 0, mailboxes: [] };
        owners.set(owner, found);
      }
      found.count++;
      found.mailboxes.push(entry.mailbox);
    }
    return [...owners.values()]
      .sort((a, b) => (a.owner < b.owner ? -1 : 1))
      .map((o) => ({ ...o, mailboxes: o.mailboxes.sort().slice(0, examples) }));
  }

  get(mailbox: string): IndexedRegistration | undefined {
    return this.byMailbox.get(mailbox);
  }

  ofOwner(owner: number): IndexedRegistration | undefined {
    return this.byOwner[owner];
  }

  /** A heartbeat: renews the ttl and keeps the status. */
  touch(entry: IndexedRegistration, nowMs: number, statusJson: string): void {
    entry.record = { ...entry.record, lastSeenMs: nowMs, statusJson };
    const before = entry.expiresMs;
    entry.expiresMs = expiryOf(entry.ttlS, nowMs);
    this.live.renewed(before, entry.expiresMs);
  }

  isLive(entry: IndexedRegistration, nowMs: number): boolean {
    return entry.expiresMs === null || entry.expiresMs > nowMs;
  }

  /** Live, of a kind the filter keeps, and kept by `online` (only agents that heartbeat, i.e. have a ttl). */
  private passesLiveness(entry: IndexedRegistration, filter: AgentFilter, nowMs: number): boolean {
    if (filter.kinds !== undefined && !filter.kinds.includes(entry.kind)) return false;
    return this.isLive(entry, nowMs) && !(filter.online && entry.ttlS <= 0);
  }

  /** Whether a live entry passes the filter. */
  accepts(entry: IndexedRegistration, filter: AgentFilter, nowMs: number): boolean {
    if (!this.passesLiveness(entry, filter, nowMs)) return false;
    if (filter.mailbox !== undefined && entry.mailbox !== filter.mailbox) return false;
    if (filter.name !== undefined && entry.name !== filter.name) return false;
    if (filter.tags) for (const tag of filter.tags) if (!entry.tags.has(tag)) return false;
    return true;
  }

  /** Live entries passing the filter, in no particular order. */
  matching(filter: AgentFilter, nowMs: number): IndexedRegistration[] {
    const direct = this.direct(filter);
    if (direct) return direct.filter((entry) => this.accepts(entry, filter, nowMs));
    const kind = onlyKind(filter);
    if (kind !== undefined && kind !== "agent") return this.matchingOthers(filter, nowMs);
    return this.matchingTagged(filter, nowMs, this.tagged(filter)?.bits);
  }

  /** The live registrations that are not agents and pass the filter. */
  private matchingOthers(filter: AgentFilter, nowMs: number): IndexedRegistration[] {
    return [...this.others].filter((entry) => this.accepts(entry, filter, nowMs));
  }

  /** How many live entries pass the filter. */
  countMatching(filter: AgentFilter, nowMs: number): number {
    const narrowed =
      filter.online ||
      (filter.tags?.length ?? 0) > 0 ||
      filter.mailbox !== undefined ||
      filter.name !== undefined;
    if (narrowed) return this.matching(filter, nowMs).length;
    const kind = onlyKind(filter);
    if (kind === undefined) return this.liveCount(nowMs);
    const others = this.matchingOthers({ kinds: RESOURCE_KINDS.filter((k) => k !== "agent") }, nowMs).length;
    return kind === "agent" ? this.liveCount(nowMs) - others : this.matchingOthers(filter, nowMs).length;
  }

  /** The few entries a mailbox or name lookup can match; undefined when the filter names neither. */
  private direct(filter: AgentFilter): IndexedRegistration[] | undefined {
    if (filter.mailbox !== undefined) {
      const entry = this.byMailbox.get(filter.mailbox);
      return entry ? [entry] : [];
    }
    if (filter.name !== undefined) return this.namesakes(filter.name).filter((e) => e.name === filter.name);
    return undefined;
  }

  /** A page of the live entries passing the filter, by name then mailbox. */
  page(filter: AgentFilter, nowMs: number, offset: number, limit: number): IndexedRegistration[] {
    const direct = this.direct(filter);
    if (direct) {
      return direct
        .filter((entry) => this.accepts(entry, filter, nowMs))
        .sort((a, b) => (before(a, b) ? -1 : 1))
        .slice(offset, offset + limit);
    }
    if (onlyKind(filter) !== undefined && onlyKind(filter) !== "agent") {
      return this.matchingOthers(filter, nowMs)
        .sort((a, b) => (before(a, b) ? -1 : 1))
        .slice(offset, offset + limit);
    }
    const tagged = this.tagged(filter);
    if (tagged && tagged.count * 8 < this.ordered.length) {
      // Few matches: sort them rather than walk everyone.
      const matches = this.matchingTagged(filter, nowMs, tagged.bits).sort((a, b) => (before(a, b) ? -1 : 1));
      return matches.slice(offset, offset + limit);
    }
    const out: IndexedRegistration[] = [];
    let skipped = 0;
    for (const entry of this.ordered) {
      if (out.length === limit) break;
      if (tagged && !hasOwner(tagged.bits, entry.owner)) continue;
      if (!this.passesLiveness(entry, filter, nowMs)) continue;
      if (skipped < offset) skipped++;
      else out.push(entry);
    }
    return out;
  }

  /** The owners having every tag of the filter; undefined when it asks for none. */
  private tagged(filter: AgentFilter): { bits: Uint32Array; count: number } | undefined {
    return filter.tags && filter.tags.length > 0 ? this.tagBits.intersect(filter.tags) : undefined;
  }

  /** Live entries passing the filter, the owners in `bits` only when given. */
  private matchingTagged(
    filter: AgentFilter,
    nowMs: number,
    bits: Uint32Array | undefined,
  ): IndexedRegistration[] {
    const out: IndexedRegistration[] = [];
    const keep = (entry: IndexedRegistration | undefined) => {
      if (entry && this.passesLiveness(entry, filter, nowMs)) out.push(entry);
    };
    if (bits) forEachOwner(bits, (owner) => keep(this.byOwner[owner]));
    else for (const entry of this.ordered) keep(entry);
    return out;
  }

  /** Number of live registrations. */
  liveCount(nowMs: number): number {
    const known = this.live.at(nowMs);
    if (known !== undefined) return known;
    let n = 0;
    let earliestExpiry = Number.POSITIVE_INFINITY;
    for (const entry of this.ordered) {
      if (!this.isLive(entry, nowMs)) continue;
      n++;
      if (entry.expiresMs !== null && entry.expiresMs < earliestExpiry) earliestExpiry = entry.expiresMs;
    }
    this.live.taken(n, nowMs, earliestExpiry);
    return n;
  }

  /** Where `entry` is, or would go, in the name order (binary search). */
  private position(entry: IndexedRegistration): number {
    let lo = 0;
    let hi = this.ordered.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (before(this.ordered[mid], entry)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
