import { Errors, Mq9Error } from "@mq9/protocol";
import { type Logger, silentLogger } from "../logger.js";
import type { Embedder } from "./embedder.js";
import { EmbeddingIndexer } from "./embedding-indexer.js";
import { QueryVectorCache } from "./query-vector-cache.js";
import {
  DEFAULT_REGISTRATION_LIMITS,
  parseRegistration,
  type Registration,
  type RegistrationLimits,
} from "./registration.js";
import { type DiscoverRequest, parseDiscover, parseReport, parseUnregister } from "./registry-request.js";
import type { AgentFilter, AgentRow, RankedAgent, RegistryStore, SkillDoc } from "./registry-store.js";
import type { VectorIndexStatus, VectorStore } from "./vector-store.js";

export interface RegistryOptions {
  store: RegistryStore;
  /** Both needed for semantic discovery; without them `semantic` falls back to full-text with a warning. */
  vectors?: VectorStore;
  embedder?: Embedder;
  /** Why there is no embedder, for the fallback warning. */
  embedderMissingReason?: string;
  logger?: Logger;
  now?: () => number;
  /** Seconds for registrations that carry no `ttl`; 0 = never expire. */
  defaultTtl?: number;
  /** How often expired registrations are purged. */
  sweepIntervalMs?: number;
  limits?: Partial<RegistrationLimits>;
  /** Query vectors kept for repeated semantic queries. */
  queryCacheSize?: number;
  /** Weight of full-text (BM25 scaled to 0..1) added to the cosine similarity in hybrid queries. */
  hybridTextWeight?: number;
  /** Load the embedder at start (in the background) instead of at the first need. */
  preloadEmbedder?: boolean;
}

export interface RegistryStatus {
  embedding: boolean;
  vectors?: VectorIndexStatus;
}

/** One DISCOVER answer: the entries and, when the ranking asked for could not be used, why. */
export interface DiscoverResult {
  /**
   * Each entry as UTF-8 JSON in pieces (the registration's cached bytes, then
   * this query's fields): copied into the reply as is, never parsed or
   * encoded again, and kept off the JS heap.
   */
  agents: (readonly Uint8Array[])[];
  warning?: string;
}

/** Fused ranking: cosine + weight·(bm25 / best bm25). Tuned on the relevance set (test/registry-relevance). */
export const DEFAULT_HYBRID_TEXT_WEIGHT = 0.1;

function toDocs(reg: Registration): SkillDoc[] {
  const base = { agentName: reg.name, agentDescription: reg.description };
  if (reg.skills.length === 0) {
    return [{ ...base, skillName: "", skillDescription: "", tags: reg.tags.join(" "), examples: "" }];
  }
  return reg.skills.map((skill) => ({
    ...base,
    skillName: skill.name,
    skillDescription: skill.description,
    tags: skill.tags.join(" "),
    examples: skill.examples.join("\n"),
  }));
}

function hasFilter(filter: AgentFilter): boolean {
  return filter.online === true || (filter.tags !== undefined && filter.tags.length > 0);
}

/**
 * The agent registry: REGISTER / UNREGISTER / REPORT / DISCOVER over a
 * RegistryStore (records, tags, full-text) and, for semantic discovery, an
 * Embedder and a VectorStore. Touches no socket.
 */
export class Registry {
  private readonly store: RegistryStore;
  private readonly vectors?: VectorStore;
  private readonly embedder?: Embedder;
  private readonly indexer?: EmbeddingIndexer;
  private readonly logger: Logger;
  private readonly now: () => number;
  private readonly defaultTtl: number;
  private readonly limits: RegistrationLimits;
  private readonly cache: QueryVectorCache;
  private readonly embedding = new Map<string, Promise<Float32Array>>();
  /**
   * Entry texts of records (which stores keep until the record changes), built once per record
   * up to its extras: with the derived agent_info, and without it for lean DISCOVERs.
   */
  private readonly entries = new WeakMap<AgentRow, Buffer>();
  private readonly leanEntries = new WeakMap<AgentRow, Buffer>();
  private readonly hybridTextWeight: number;
  private readonly embedderMissing?: string;
  private sweepTimer?: NodeJS.Timeout;
  private sweeping?: Promise<void>;
  private started?: Promise<void>;

  constructor(private readonly options: RegistryOptions) {
    this.store = options.store;
    this.logger = options.logger ?? silentLogger;
    this.now = options.now ?? Date.now;
    this.defaultTtl = options.defaultTtl ?? 0;
    this.limits = {
      maxCardBytes: options.limits?.maxCardBytes ?? DEFAULT_REGISTRATION_LIMITS.maxCardBytes,
      maxSkills: options.limits?.maxSkills ?? DEFAULT_REGISTRATION_LIMITS.maxSkills,
    };
    this.cache = new QueryVectorCache(options.queryCacheSize ?? 10_000);
    this.hybridTextWeight = options.hybridTextWeight ?? DEFAULT_HYBRID_TEXT_WEIGHT;
    if (options.vectors && options.embedder) {
      this.vectors = options.vectors;
      this.embedder = options.embedder;
      this.indexer = new EmbeddingIndexer(this.store, this.vectors, this.embedder, this.logger);
    } else {
      this.embedderMissing = options.embedderMissingReason ?? "no embedder is configured";
    }
  }

  /** Starts the expiry sweep and catches the vector index up with the records; resolves when ready for requests. */
  start(): Promise<void> {
    this.started ??= (async () => {
      await this.indexer?.start();
      if (this.options.preloadEmbedder) {
        this.embedder
          ?.load()
          .catch((err) => this.logger.warn({ err }, "the registry embedder could not load"));
      }
      const interval = this.options.sweepIntervalMs ?? 1_000;
      this.sweepTimer = setInterval(() => {
        this.sweeping ??= this.sweep().finally(() => {
          this.sweeping = undefined;
        });
      }, interval);
      this.sweepTimer.unref();
    })();
    return this.started;
  }

  private async sweep(): Promise<void> {
    try {
      for (;;) {
        const removed = await this.store.purgeExpired(this.now());
        if (removed.mailboxes.length === 0) return;
        this.indexer?.removeVectors(removed.docIds);
        this.logger.debug({ agents: removed.mailboxes.length }, "purged expired agent registrations");
      }
    } catch (err) {
      this.logger.error({ err }, "registry expiry sweep failed; retrying on the next sweep");
    }
  }

  /** REGISTER: stores (or replaces) the registration; its skills are embedded in the background. */
  async register(body: Uint8Array): Promise<void> {
    const reg = parseRegistration(body, this.limits);
    const now = this.now();
    const row: AgentRow = {
      mailbox: reg.mailbox,
      name: reg.name,
      bodyJson: reg.bodyJson,
      agentInfo: reg.agentInfo,
      hasOwnName: reg.hasOwnName,
      tags: reg.tags,
      ttlS: reg.ttl ?? this.defaultTtl,
      registeredMs: now,
      lastSeenMs: now,
    };
    const { ids, replaced } = await this.store.put(row, toDocs(reg));
    this.indexer?.docsChanged(ids, replaced);
  }

  /** UNREGISTER by mailbox and/or name; unknown agents are not an error. */
  async unregister(body: Uint8Array): Promise<void> {
    const removed = await this.store.remove(parseUnregister(body));
    this.indexer?.removeVectors(removed.docIds);
  }

  /** REPORT: a heartbeat with a status; renews the ttl. */
  async report(body: Uint8Array): Promise<void> {
    const request = parseReport(body);
    const updated = await this.store.report(request, request.statusJson, this.now());
    if (updated === 0) throw new Mq9Error("AGENT_NOT_FOUND", Errors.agentNotFound);
  }

  async discover(body: Uint8Array): Promise<DiscoverResult> {
    const request = parseDiscover(body);
    const filter: AgentFilter = { tags: request.tags, online: request.online };
    const now = this.now();
    const offset = (request.page - 1) * request.limit;
    let ranked: RankedAgent[] = [];
    let warning: string | undefined;
    if (request.semantic !== undefined) {
      let unavailable = this.semanticUnavailable();
      if (unavailable === undefined) {
        try {
          ranked =
            request.text !== undefined
              ? await this.hybrid(request.semantic, request.text, filter, now, offset + request.limit)
              : await this.semantic(request.semantic, filter, now, offset + request.limit);
          ranked = ranked.slice(offset);
        } catch (err) {
          if (err instanceof Mq9Error) throw err;
          this.logger.warn({ err }, "semantic discovery failed; answering with full-text");
          unavailable = (err as Error).message;
        }
      }
      if (unavailable !== undefined) {
        warning = `semantic search is unavailable (${unavailable}); results are ranked by full-text instead`;
        const text = request.text === undefined ? request.semantic : `${request.semantic} ${request.text}`;
        // Fallback ranks are not comparable to similarities: they carry no score.
        ranked = (await this.textOrAll(text, filter, now, offset, request.limit)).map((mailbox) => ({
          mailbox,
          score: Number.NaN,
        }));
      }
    } else if (request.text !== undefined) {
      ranked = await this.store.search(request.text, filter, now, offset, request.limit);
    } else {
      const rows = await this.store.list(filter, now, offset, request.limit);
      return { agents: rows.map((row) => this.entry(row, request, Number.NaN)) };
    }
    const rows = new Map(
      (
        await this.store.get(
          ranked.map((r) => r.mailbox),
          now,
        )
      ).map((row) => [row.mailbox, row]),
    );
    const agents = ranked.flatMap(({ mailbox, score }) => {
      const row = rows.get(mailbox);
      return row ? [this.entry(row, request, request.includeScore ? score : Number.NaN)] : [];
    });
    return warning === undefined ? { agents } : { agents, warning };
  }

  private semanticUnavailable(): string | undefined {
    return this.embedderMissing ?? this.indexer?.unavailableReason;
  }

  /** Full-text hits first, then every other agent by name (so a fallback still answers like nearest-neighbour). */
  private async textOrAll(
    text: string,
    filter: AgentFilter,
    now: number,
    offset: number,
    limit: number,
  ): Promise<string[]> {
    const hits = (await this.store.search(text, filter, now, 0, offset + limit)).map((r) => r.mailbox);
    if (hits.length >= offset + limit) return hits.slice(offset);
    const seen = new Set(hits);
    const rest = (await this.store.list(filter, now, 0, offset + limit + hits.length))
      .map((row) => row.mailbox)
      .filter((m) => !seen.has(m));
    return [...hits, ...rest].slice(offset, offset + limit);
  }

  private async queryVector(text: string): Promise<Float32Array> {
    const cached = this.cache.get(text);
    if (cached) return cached;
    let pending = this.embedding.get(text);
    if (!pending) {
      pending = this.embedder!.embed([text], { purpose: "query" }).then(([vector]) => {
        this.cache.set(text, vector);
        return vector;
      });
      this.embedding.set(text, pending);
      void pending.then(
        () => this.embedding.delete(text),
        () => this.embedding.delete(text),
      );
    }
    return pending;
  }

  /** Agents by their best skill's similarity to the query, best first, at least `need` of them when there are. */
  private async semanticRanking(
    query: Float32Array,
    filter: AgentFilter,
    now: number,
    need: number,
  ): Promise<RankedAgent[]> {
    const allowed = hasFilter(filter) ? await this.store.candidates(filter, now) : undefined;
    if (allowed?.size === 0) return [];
    let k = need * 4 + 16;
    for (;;) {
      const hits = await this.vectors!.query(query, { agents: allowed }, k);
      const exhausted = hits.length < k;
      // Hits come best first, so an agent's first hit is its best skill.
      const seen = new Set<string>();
      const ranked: RankedAgent[] = [];
      for (const hit of hits) {
        if (seen.has(hit.agent)) continue;
        seen.add(hit.agent);
        ranked.push({ mailbox: hit.agent, score: hit.score });
      }
      // A filter's candidates are live already; otherwise skip expired registrations not purged yet.
      const live = allowed ? ranked : await this.liveFirst(ranked, need, now);
      if (live.length >= need || exhausted) return live;
      k *= 4;
    }
  }

  /** The live agents among `ranked`, in order, looked up only until `need` of them are found. */
  private async liveFirst(ranked: RankedAgent[], need: number, now: number): Promise<RankedAgent[]> {
    const live: RankedAgent[] = [];
    for (let from = 0; from < ranked.length && live.length < need; ) {
      const slice = ranked.slice(from, from + need - live.length);
      from += slice.length;
      const found = new Set(
        (
          await this.store.get(
            slice.map((r) => r.mailbox),
            now,
          )
        ).map((row) => row.mailbox),
      );
      for (const r of slice) if (found.has(r.mailbox)) live.push(r);
    }
    return live;
  }

  private async semantic(
    text: string,
    filter: AgentFilter,
    now: number,
    need: number,
  ): Promise<RankedAgent[]> {
    const query = await this.queryVector(text);
    await this.indexer!.caughtUp();
    return (await this.semanticRanking(query, filter, now, need)).slice(0, need);
  }

  /**
   * Semantic and full-text fused: every candidate of either ranking gets its
   * cosine similarity plus a small weight times its BM25 relative to the best
   * hit, so exact keyword matches lift an agent without overruling meaning.
   */
  private async hybrid(
    semantic: string,
    text: string,
    filter: AgentFilter,
    now: number,
    need: number,
  ): Promise<RankedAgent[]> {
    const query = await this.queryVector(semantic);
    await this.indexer!.caughtUp();
    const depth = Math.max(need * 2, 50);
    const [bySemantic, byText] = await Promise.all([
      this.semanticRanking(query, filter, now, depth),
      this.store.search(text, filter, now, 0, depth),
    ]);
    const cosine = new Map(bySemantic.map((r) => [r.mailbox, r.score]));
    const missing = byText.filter((r) => !cosine.has(r.mailbox)).map((r) => r.mailbox);
    if (missing.length > 0) {
      for (const hit of await this.vectors!.query(query, { agents: new Set(missing) }, missing.length * 64)) {
        if (!cosine.has(hit.agent)) cosine.set(hit.agent, hit.score);
      }
    }
    const bestText = byText[0]?.score ?? 0;
    const textScore = new Map(byText.map((r) => [r.mailbox, bestText > 0 ? r.score / bestText : 0]));
    const fused = [...new Set([...cosine.keys(), ...textScore.keys()])].map((mailbox) => ({
      mailbox,
      score: (cosine.get(mailbox) ?? -1) + this.hybridTextWeight * (textScore.get(mailbox) ?? 0),
    }));
    fused.sort((a, b) => b.score - a.score || (a.mailbox < b.mailbox ? -1 : 1));
    return fused.slice(0, need);
  }

  /**
   * A DISCOVER entry as JSON text: the registered body unchanged, plus `name`
   * and `agent_info` when it lacks them, and the opt-in `_status`,
   * `_last_seen` and `_score` (a NaN score is left out).
   */
  private entry(row: AgentRow, request: DiscoverRequest, score: number): readonly Uint8Array[] {
    const cache = request.includeAgentInfo ? this.entries : this.leanEntries;
    let base = cache.get(row);
    if (base === undefined) {
      // The body is a trimmed JSON object with a mailbox in it: fields go in before its closing brace.
      let text = row.bodyJson.slice(0, -1);
      if (!row.hasOwnName) text += `,"name":${JSON.stringify(row.name)}`;
      if (
        request.includeAgentInfo &&
        (JSON.parse(row.bodyJson) as { agent_info?: unknown }).agent_info === undefined
      ) {
        text += `,"agent_info":${JSON.stringify(row.agentInfo)}`;
      }
      base = Buffer.from(text);
      cache.set(row, base);
    }
    let extra = "";
    if (request.includeStatus) {
      extra += `,"_status":${row.statusJson ?? "null"},"_last_seen":${Math.floor(row.lastSeenMs / 1000)}`;
    }
    if (!Number.isNaN(score)) extra += `,"_score":${JSON.stringify(score)}`;
    return [base, Buffer.from(`${extra}}`)];
  }

  /** One live agent's DISCOVER entry with its status, by mailbox (for the HTTP API); undefined when none. */
  async entryOf(mailbox: string): Promise<readonly Uint8Array[] | undefined> {
    const [row] = await this.store.get([mailbox], this.now());
    if (!row) return undefined;
    return this.entry(row, parseDiscover(Buffer.from('{"include_status":true}')), Number.NaN);
  }

  /** How far the background work is: skills waiting for vectors, the vector index's build. */
  status(): RegistryStatus {
    return { embedding: this.indexer?.embedding ?? false, vectors: this.vectors?.status?.() };
  }

  /** Resolves once every stored skill has its vector (for tests and benchmarks). */
  async indexed(): Promise<void> {
    await this.indexer?.caughtUp();
  }

  async close(): Promise<void> {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    await this.sweeping;
    await this.indexer?.close();
    await this.embedder?.close();
    await this.vectors?.close();
    await this.store.close();
  }
}
