import {
  type DiscoverResult,
  type Logger,
  type MailboxStanding,
  type OwnedRegistrations,
  type Principal,
  type Registry,
  type RegistryStatus,
  silentLogger,
} from "@mq9/broker";
import {
  type AgentSelector,
  DEFAULT_REGISTRATION_LIMITS,
  Defaults,
  Errors,
  Mq9Error,
  mailAddressError,
  type ParsedDiscoverRequest,
  type ParsedRegistration,
  parseDiscoverRequest,
  parseRegisterRequest,
  parseReportRequest,
  parseUnregisterRequest,
  type RegistrationLimits,
  requestValue,
} from "@mq9/protocol";
import { RegistryDefaults } from "./defaults.js";
import type { Embedder } from "./embedding/embedder.js";
import { EmbeddingIndexer } from "./embedding/embedding-indexer.js";
import { QueryVectorCache } from "./embedding/query-vector-cache.js";
import { QueryCalibration, type QueryScale } from "./search/query-calibration.js";
import { USE_CALIBRATION } from "./search/use-calibration.js";
import type { AgentFilter, AgentRow, RankedAgent, RegistryStore, SkillDoc } from "./store/registry-store.js";
import type { VectorStore } from "./vectors/vector-store.js";

export interface AgentRegistryOptions {
  store: RegistryStore;
  /** Both needed for semantic discovery; without them `semantic` falls back to full-text with a warning. */
  vectors?: VectorStore;
  embedder?: Embedder;
  /** Why there is no embedder, for the fallback warning. */
  embedderMissingReason?: string;
  /**
   * Set when the configured embedder could not run and a fallback stands in: said in every
   * semantic answer's `warning` and in status(), so the degradation is never silent.
   */
  embedderFallback?: string;
  logger?: Logger;
  now?: () => number;
  /** Seconds for registrations that carry no `ttl`; 0 = never expire. */
  defaultTtlS?: number;
  /** How often expired registrations are purged. */
  sweepIntervalMs?: number;
  limits?: Partial<RegistrationLimits>;
  /** Query vectors kept for repeated semantic queries. */
  queryCacheSize?: number;
  /** Weight of full-text (BM25 scaled to 0..1) added to the cosine similarity in hybrid queries. */
  hybridTextWeight?: number;
  /**
   * An agent's semantic score is (1 − w) × its best skill's similarity + w × its card's (name and
   * description); 0 ranks by the best skill alone and embeds no cards.
   */
  cardWeight?: number;
  /** Load the embedder at start (in the background) instead of at the first need. */
  preloadEmbedder?: boolean;
  /** Largest DISCOVER reply in bytes (the transport's max payload); longer pages are trimmed. */
  maxReplyBytes?: number;
  /** The embedder reads English only: queries in other scripts, or reading as German, are answered by full-text. */
  embedderEnglishOnly?: boolean;
}

/** Room kept in a reply for its fields other than the entries. */
const REPLY_HEADROOM = 2048;
/** A semantic query waits for an embedding backlog of at most this many skills (about one batch). */
export const QUERY_WAITS_FOR_SKILLS = 64;

/**
 * Fused ranking: calibrated similarity + weight·(bm25 / best bm25), tuned on the relevance set
 * (test/registry-relevance) for USE-lite. Sentence models spread their calibrated scores wider,
 * so full text weighs less beside them (SENTENCE_MODEL_TEXT_WEIGHT).
 */
export const DEFAULT_HYBRID_TEXT_WEIGHT = 0.25;
/** The text weight for sentence models (onnx, openai) that name none of their own. */
export const SENTENCE_MODEL_TEXT_WEIGHT = 0.05;
/**
 * Agents (by their best skill) whose cards a semantic page scores, at least; 0: those the page's
 * own vector search finds. A card lifts an agent only from among them, and a deeper pass widens
 * the graph search, which costs the main thread more than scoring the cards (bench/RESULTS.md).
 */
export const CARD_RERANK_DEPTH = 0;

function toDocs(reg: ParsedRegistration): SkillDoc[] {
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

/** Whether a row is of a kind the filter keeps. */
function kindKept(row: AgentRow, filter: AgentFilter): boolean {
  return filter.kinds === undefined || filter.kinds.includes(row.kind ?? "agent");
}

/**
 * Whether a filter narrows the candidates enough to list them before a vector query. Asking for
 * agents only does not (MCP servers are few: their hits are dropped afterwards); asking for no
 * agents does (the few servers are the candidates).
 */
function hasFilter(filter: AgentFilter): boolean {
  return (
    (filter.kinds !== undefined && !filter.kinds.includes("agent")) ||
    filter.online === true ||
    (filter.tags !== undefined && filter.tags.length > 0) ||
    filter.mailbox !== undefined ||
    filter.name !== undefined
  );
}

/**
 * The agent registry: REGISTER / UNREGISTER / REPORT / DISCOVER over a
 * RegistryStore (records, tags, full-text) and, for semantic discovery, an
 * Embedder and a VectorStore. Touches no socket.
 */
export class AgentRegistry implements Registry {
  private readonly store: RegistryStore;
  private readonly vectors?: VectorStore;
  private readonly embedder?: Embedder;
  private readonly indexer?: EmbeddingIndexer;
  private readonly logger: Logger;
  private readonly now: () => number;
  private readonly defaultTtlS: number;
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
  private readonly cardWeight: number;
  /** Not a setting: the registry bench varies it (bench/registry-query-cost.js). */
  private readonly cardRerankDepth = CARD_RERANK_DEPTH;
  private readonly embedderMissing?: string;
  private readonly calibration?: QueryCalibration;
  private readonly maxReplyBytes: number;
  private sweepTimer?: NodeJS.Timeout;
  private sweeping?: Promise<void>;
  private started?: Promise<void>;

  constructor(private readonly options: AgentRegistryOptions) {
    this.store = options.store;
    this.logger = options.logger ?? silentLogger;
    this.now = options.now ?? Date.now;
    this.defaultTtlS = options.defaultTtlS ?? RegistryDefaults.defaultTtlSeconds;
    this.limits = {
      maxCardBytes: options.limits?.maxCardBytes ?? DEFAULT_REGISTRATION_LIMITS.maxCardBytes,
      maxSkills: options.limits?.maxSkills ?? DEFAULT_REGISTRATION_LIMITS.maxSkills,
    };
    this.cache = new QueryVectorCache(options.queryCacheSize ?? 10_000);
    this.hybridTextWeight = options.hybridTextWeight ?? DEFAULT_HYBRID_TEXT_WEIGHT;
    const cardWeight = options.cardWeight ?? RegistryDefaults.cardWeight;
    if (!(cardWeight >= 0 && cardWeight <= 1)) {
      throw new Error(`the registry's card weight must be from 0 to 1 (was ${cardWeight})`);
    }
    this.maxReplyBytes = options.maxReplyBytes ?? Defaults.maxPayload;
    if (options.vectors && options.embedder) {
      this.vectors = options.vectors;
      this.embedder = options.embedder;
      this.indexer = new EmbeddingIndexer(this.store, this.vectors, this.embedder, this.logger, {
        cards: cardWeight > 0,
        now: this.now,
      });
      const shipped = this.embedder.id === USE_CALIBRATION.model ? USE_CALIBRATION.vectors() : undefined;
      this.calibration = new QueryCalibration(this.embedder, options.embedderEnglishOnly ?? false, shipped);
    } else {
      this.embedderMissing = options.embedderMissingReason ?? "no embedder is configured";
    }
    // A store that keeps no card vectors ranks by skills alone.
    this.cardWeight = this.indexer?.cards ? cardWeight : 0;
  }

  /** Starts the expiry sweep and catches the vector index up with the records; resolves when ready for requests. */
  start(): Promise<void> {
    this.started ??= (async () => {
      await this.indexer?.start();
      if (this.options.preloadEmbedder) {
        this.embedder
          ?.load()
          .then(() => this.calibration?.load())
          .catch((err) => this.logger.warn({ err }, "the registry embedder could not load"));
      }
      const intervalMs = this.options.sweepIntervalMs ?? 1_000;
      this.sweepTimer = setInterval(() => {
        this.sweeping ??= this.sweep().finally(() => {
          this.sweeping = undefined;
        });
      }, intervalMs);
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
        this.indexer?.removeCards(removed.mailboxes);
        this.logger.debug({ agents: removed.mailboxes.length }, "purged expired agent registrations");
      }
    } catch (err) {
      this.logger.error({ err }, "registry expiry sweep failed; retrying on the next sweep");
    }
  }

  /**
   * REGISTER: stores (or replaces) the registration; its skills are embedded in the background.
   * With `caller` (users configured) a registration belongs to the user that made it: another user
   * may neither replace it nor take its name, and `standing` vets the advertised mailbox (its creator takes a registration of it over).
   */
  async register(
    body: Uint8Array,
    caller?: Principal,
    standing?: (mailbox: string) => Promise<MailboxStanding>,
  ): Promise<void> {
    const reg = requestValue(parseRegisterRequest(body, this.limits));
    const server = reg.kind !== "agent";
    const invalid = server ? undefined : mailAddressError(reg.mailbox);
    if (invalid !== undefined) {
      throw new Mq9Error(
        "INVALID_REQUEST",
        Errors.invalidPayload("AGENT.REGISTER", `'mailbox' must be a mail address (${invalid})`),
      );
    }
    const now = this.now();
    let owner: string | undefined;
    if (caller !== undefined) {
      await this.catchUp();
      const [existing] = await this.store.select({ mailbox: reg.mailbox }, now);
      // An MCP server has no mailbox to vet: its URL is its key, and its first registrant owns it.
      const mailboxStanding =
        caller.admin || server ? "allowed" : ((await standing?.(reg.mailbox)) ?? "allowed");
      // The mailbox's creator takes over a registration of it that another user made.
      if (
        existing !== undefined &&
        existing.owner !== caller.name &&
        !caller.admin &&
        mailboxStanding !== "creator"
      ) {
        throw new Mq9Error("PERMISSION_DENIED", Errors.notRegistrationOwner(reg.mailbox));
      }
      if (!caller.admin) {
        // Names that differ only in case or Unicode form are one name across users.
        const namesakes = await this.store.namesakes(reg.name, now);
        if (namesakes.some((row) => row.owner !== caller.name && row.mailbox !== reg.mailbox)) {
          throw new Mq9Error("PERMISSION_DENIED", Errors.agentNameTaken(reg.name));
        }
        if (mailboxStanding === "foreign") {
          throw new Mq9Error("PERMISSION_DENIED", Errors.registerForeignMailbox(reg.mailbox));
        }
      }
      // An admin changing someone's registration leaves it theirs.
      owner = caller.admin ? (existing?.owner ?? caller.name) : caller.name;
    }
    const row: AgentRow = {
      owner,
      mailbox: reg.mailbox,
      ...(server ? { kind: reg.kind } : {}),
      name: reg.name,
      bodyJson: reg.bodyJson,
      agentInfo: reg.agentInfo,
      hasOwnName: reg.hasOwnName,
      tags: reg.tags,
      ttlS: reg.ttlS ?? this.defaultTtlS,
      registeredMs: now,
      lastSeenMs: now,
    };
    const { ids, replaced } = await this.store.put(row, toDocs(reg));
    this.indexer?.docsChanged(ids, replaced);
  }

  /**
   * UNREGISTER by mailbox and/or name; unknown agents are not an error. With `caller` (users
   * configured) only the caller's own registrations go: by name, others' namesakes stay; by
   * mailbox, another user's registration is refused.
   */
  async unregister(body: Uint8Array, caller?: Principal): Promise<void> {
    const selector = await this.ownSelector(requestValue(parseUnregisterRequest(body)), caller);
    const removed = await this.store.remove(selector);
    this.indexer?.removeVectors(removed.docIds);
    this.indexer?.removeCards(removed.mailboxes);
  }

  /** REPORT: a heartbeat with a status; renews the ttl. Only the owner's, with `caller`. */
  async report(body: Uint8Array, caller?: Principal): Promise<void> {
    const request = requestValue(parseReportRequest(body));
    const selector = await this.ownSelector(request, caller);
    const updated = await this.store.report(selector, request.statusJson, this.now());
    if (updated === 0) throw new Mq9Error("AGENT_NOT_FOUND", Errors.agentNotFound);
  }

  /** The selector limited to the caller's own registrations (admins: unchanged). */
  private async ownSelector(selector: AgentSelector, caller: Principal | undefined): Promise<AgentSelector> {
    if (caller === undefined || caller.admin) return selector;
    if (selector.mailbox !== undefined) {
      await this.catchUp();
      const [row] = await this.store.select({ mailbox: selector.mailbox }, this.now());
      if (row !== undefined && row.owner !== caller.name) {
        throw new Mq9Error("PERMISSION_DENIED", Errors.notRegistrationOwner(selector.mailbox));
      }
    }
    return { ...selector, owner: caller.name };
  }

  /**
   * Reads what other nodes of a cluster committed before a read, so that a client reads its own
   * writes whichever node it asks; notes why not when the store could not in time. A store with
   * no other writer has no catchUp, and this costs nothing.
   */
  private async catchUp(notes?: string[]): Promise<void> {
    if (this.store.catchUp === undefined) return;
    const behind = await this.store.catchUp();
    if (behind !== undefined) notes?.push(behind);
  }

  async discover(body: Uint8Array): Promise<DiscoverResult> {
    const request = requestValue(parseDiscoverRequest(body));
    const notes: string[] = [];
    await this.catchUp(notes);
    const filter: AgentFilter = {
      tags: request.tags,
      online: request.online,
      mailbox: request.mailbox,
      name: request.name,
      kinds: request.kinds,
    };
    const now = this.now();
    const { offset, limit } = request;
    // One more than the page, to know whether another page follows.
    const need = offset + limit + 1;
    let ranked: RankedAgent[];
    let total: number | undefined;
    let pending: number | undefined;
    if (request.semantic !== undefined) {
      const answer = await this.semanticAnswer(request, filter, now, need);
      ranked = answer.ranked;
      total = answer.total;
      pending = answer.pending;
      if (answer.warning) notes.push(answer.warning);
      if (this.options.embedderFallback && this.embedder) notes.push(this.options.embedderFallback);
    } else if (request.text !== undefined) {
      [ranked, total] = await Promise.all([
        this.store.search(request.text, filter, now, 0, need),
        this.store.countSearch(request.text, filter, now),
      ]);
    } else {
      const [rows, count] = await Promise.all([
        this.store.list(filter, now, offset, limit + 1),
        this.store.countMatching(filter, now),
      ]);
      return this.page(
        rows.map((row) => ({ row, score: Number.NaN })),
        request,
        { offset, total: count, notes },
      );
    }
    const pageRanked = ranked.slice(offset);
    const rows = new Map(
      (
        await this.store.get(
          pageRanked.map((r) => r.mailbox),
          now,
        )
      ).map((row) => [row.mailbox, row]),
    );
    const hits = pageRanked.flatMap(({ mailbox, score }) => {
      const row = rows.get(mailbox);
      return row ? [{ row, score: request.includeScore ? score : Number.NaN }] : [];
    });
    return this.page(hits, request, { offset, total, notes, pending });
  }

  /**
   * Cuts a ranked run (up to limit + 1 entries, starting at `offset`) to the page and to the
   * largest reply the transport carries; says so when it had to trim.
   */
  private page(
    hits: { row: AgentRow; score: number }[],
    request: ParsedDiscoverRequest,
    meta: { offset: number; total?: number; notes: string[]; pending?: number },
  ): DiscoverResult {
    const agents: (readonly Uint8Array[])[] = [];
    let bytes = REPLY_HEADROOM;
    let trimmed = false;
    for (const hit of hits.slice(0, request.limit)) {
      const entry = this.entry(hit.row, request, hit.score);
      const size = entry.reduce((sum, piece) => sum + piece.length, 0) + 1;
      if (bytes + size > this.maxReplyBytes) {
        trimmed = true;
        break;
      }
      bytes += size;
      agents.push(entry);
    }
    const notes = [...meta.notes];
    let skipped = 0;
    if (trimmed && agents.length === 0) {
      // One entry alone is larger than a reply may be: skip it, or paging would never move on.
      skipped = 1;
      notes.push(
        `the next agent (${hits[0].row.mailbox}) does not fit in a reply of ${this.maxReplyBytes} bytes; ask for it with include_agent_info: false, or raise the broker's max payload`,
      );
    } else if (trimmed) {
      notes.push(
        `the reply holds ${agents.length} of the ${request.limit} agents asked for, to stay within the ${this.maxReplyBytes}-byte max payload; ask again from next_offset`,
      );
    }
    const hasMore = trimmed || hits.length > request.limit;
    const result: DiscoverResult = { agents, hasMore };
    if (hasMore) result.nextOffset = meta.offset + agents.length + skipped;
    if (meta.total !== undefined) result.total = meta.total;
    if (trimmed) result.truncated = true;
    if (meta.pending !== undefined && meta.pending > 0) result.pendingSkills = meta.pending;
    if (notes.length > 0) result.warning = notes.join("; ");
    return result;
  }

  /** A semantic (or hybrid) ranking, or the full-text fallback when meaning cannot be used. */
  private async semanticAnswer(
    request: ParsedDiscoverRequest,
    filter: AgentFilter,
    now: number,
    need: number,
  ): Promise<{ ranked: RankedAgent[]; total?: number; pending?: number; warning?: string }> {
    const semantic = request.semantic!;
    let unavailable = this.semanticUnavailable();
    let pending: number | undefined;
    let warning: string | undefined;
    if (unavailable === undefined) {
      try {
        // Asked together, so that a first query and the reference texts share one batch of the model.
        const references = this.calibration!.load();
        const query = await this.queryVector(semantic);
        await references;
        const scale = await this.calibration!.scale(semantic, query);
        pending = await this.waitForSmallBacklog();
        if (pending > 0) {
          warning = `${pending} skills registered moments ago are not searchable by meaning yet (embedding in the background); this answer is from the skills embedded so far`;
        }
        if (scale.notUnderstood === undefined) {
          const ranked =
            request.text !== undefined
              ? await this.hybrid(query, scale, request.text, filter, now, need)
              : await this.semantic(query, scale, filter, now, need);
          const kept =
            request.minScore === undefined ? ranked : ranked.filter((r) => r.score >= request.minScore!);
          const total =
            request.minScore === undefined ? await this.store.countMatching(filter, now) : undefined;
          return { ranked: kept, total, pending, warning };
        }
        unavailable = undefined;
        const text = request.text === undefined ? semantic : `${semantic} ${request.text}`;
        const why = `the query is outside what the embedder understands (${scale.notUnderstood}); results are ranked by full-text instead`;
        return {
          ranked: await this.fallback(text, filter, now, need, request.minScore !== undefined),
          pending,
          warning: warning === undefined ? why : `${why}; ${warning}`,
        };
      } catch (err) {
        if (err instanceof Mq9Error) throw err;
        this.logger.warn({ err }, "semantic discovery failed; answering with full-text");
        unavailable = (err as Error).message;
      }
    }
    const text = request.text === undefined ? semantic : `${semantic} ${request.text}`;
    return {
      ranked: await this.fallback(text, filter, now, need, request.minScore !== undefined),
      warning: `semantic search is unavailable (${unavailable}); results are ranked by full-text instead`,
    };
  }

  /** Full-text ranking standing in for meaning: hits first, then (unless a score floor is asked for) everyone else. */
  private async fallback(
    text: string,
    filter: AgentFilter,
    now: number,
    need: number,
    hitsOnly: boolean,
  ): Promise<RankedAgent[]> {
    // Fallback ranks are not comparable to similarities: they carry no score.
    const mailboxes = hitsOnly
      ? (await this.store.search(text, filter, now, 0, need)).map((r) => r.mailbox)
      : await this.textOrAll(text, filter, now, 0, need);
    return mailboxes.map((mailbox) => ({ mailbox, score: Number.NaN }));
  }

  /**
   * Waits for the embedding backlog only while it is at most about one batch (so a query right
   * after a REGISTER sees it); a longer backlog is not waited for. Returns what is still pending.
   */
  private async waitForSmallBacklog(): Promise<number> {
    const pending = this.indexer!.pending;
    if (pending > 0 && pending <= QUERY_WAITS_FOR_SKILLS) await this.indexer!.caughtUp();
    return this.pendingSkills();
  }

  /** Skills not searchable by meaning yet: embedding here, or (in a cluster) on the node that took their REGISTER. */
  private pendingSkills(): number {
    return (this.indexer?.pending ?? 0) + (this.store.awaitingVectors?.() ?? 0);
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

  /** Agents by their best skill's similarity to the query (or as `rerank` orders them), best first, at least `need` of them when there are. */
  private async semanticRanking(
    query: Float32Array,
    filter: AgentFilter,
    now: number,
    need: number,
    rerank?: (ranked: RankedAgent[]) => Promise<RankedAgent[]>,
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
      // Every agent the search found is re-ranked, and then looked up only until `need` are live.
      const ordered = rerank ? await rerank(ranked) : ranked;
      const live = allowed ? ordered : await this.liveFirst(ordered, filter, need, now);
      if (live.length >= need || exhausted) return live;
      k *= 4;
    }
  }

  /** The live agents of the filter's kinds among `ranked`, in order, looked up only until `need` of them are found. */
  private async liveFirst(
    ranked: RankedAgent[],
    filter: AgentFilter,
    need: number,
    now: number,
  ): Promise<RankedAgent[]> {
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
        )
          .filter((row) => kindKept(row, filter))
          .map((row) => row.mailbox),
      );
      for (const r of slice) if (found.has(r.mailbox)) live.push(r);
    }
    return live;
  }

  /** Agents by their calibrated similarity to the query (best skill and card fused), best first. */
  private async semantic(
    query: Float32Array,
    scale: QueryScale,
    filter: AgentFilter,
    now: number,
    need: number,
  ): Promise<RankedAgent[]> {
    if (this.cardWeight === 0) {
      return (await this.semanticRanking(query, filter, now, need))
        .slice(0, need)
        .map((r) => ({ mailbox: r.mailbox, score: scale.calibrate(r.score) }));
    }
    const rerank = (ranked: RankedAgent[]) => this.withCards(query, ranked);
    return (await this.semanticRanking(query, filter, now, Math.max(need, this.cardRerankDepth), rerank))
      .slice(0, need)
      .map((r) => ({ mailbox: r.mailbox, score: scale.calibrate(r.score) }));
  }

  /**
   * Each agent's best-skill similarity fused with its card's, best first (ties in the order
   * given). An agent whose card is not embedded yet keeps its best skill's score.
   */
  private async withCards(query: Float32Array, bySkill: RankedAgent[]): Promise<RankedAgent[]> {
    const cards = await this.vectors!.cardScores!(
      query,
      bySkill.map((r) => r.mailbox),
    );
    const w = this.cardWeight;
    const fused = bySkill.map(({ mailbox, score }) => {
      const card = cards.get(mailbox);
      return { mailbox, score: card === undefined ? score : (1 - w) * score + w * card };
    });
    return fused.sort((a, b) => b.score - a.score);
  }

  /**
   * Semantic and full-text fused: every candidate of either ranking gets its
   * calibrated similarity plus a small weight times its BM25 relative to the
   * best hit (capped at 1), so exact keyword matches lift an agent without
   * overruling meaning.
   */
  private async hybrid(
    query: Float32Array,
    scale: QueryScale,
    text: string,
    filter: AgentFilter,
    now: number,
    need: number,
  ): Promise<RankedAgent[]> {
    const depth = Math.max(need * 2, 50);
    const [bySemantic, byText] = await Promise.all([
      this.semanticRanking(query, filter, now, depth),
      this.store.search(text, filter, now, 0, depth),
    ]);
    let cosine = new Map(bySemantic.map((r) => [r.mailbox, r.score]));
    const missing = byText.filter((r) => !cosine.has(r.mailbox)).map((r) => r.mailbox);
    if (missing.length > 0) {
      for (const hit of await this.vectors!.query(query, { agents: new Set(missing) }, missing.length * 64)) {
        if (!cosine.has(hit.agent)) cosine.set(hit.agent, hit.score);
      }
    }
    if (this.cardWeight > 0) {
      const fused = await this.withCards(
        query,
        [...cosine].map(([mailbox, score]) => ({ mailbox, score })),
      );
      cosine = new Map(fused.map((r) => [r.mailbox, r.score]));
    }
    const bestText = byText[0]?.score ?? 0;
    const textScore = new Map(byText.map((r) => [r.mailbox, bestText > 0 ? r.score / bestText : 0]));
    const fused = [...new Set([...cosine.keys(), ...textScore.keys()])].map((mailbox) => {
      const similarity = cosine.get(mailbox);
      const meaning = similarity === undefined ? 0 : scale.calibrate(similarity);
      return { mailbox, score: Math.min(1, meaning + this.hybridTextWeight * (textScore.get(mailbox) ?? 0)) };
    });
    fused.sort((a, b) => b.score - a.score || (a.mailbox < b.mailbox ? -1 : 1));
    return fused.slice(0, need);
  }

  /**
   * A DISCOVER entry as JSON text: the registered body unchanged, plus `name`
   * and `agent_info` when it lacks them, and the opt-in `_status`,
   * `_last_seen` and `_score` (a NaN score is left out).
   */
  private entry(row: AgentRow, request: ParsedDiscoverRequest, score: number): readonly Uint8Array[] {
    const cache = request.includeAgentInfo ? this.entries : this.leanEntries;
    let base = cache.get(row);
    if (base === undefined) {
      // The body is a trimmed JSON object with a mailbox in it: fields go in before its closing brace.
      let text = row.bodyJson.slice(0, -1);
      const body = JSON.parse(row.bodyJson) as { agent_info?: unknown; name?: unknown };
      if (!row.hasOwnName && "name" in body) {
        // A null or blank `name` of its own: the entry carries the derived name in its place, once.
        text = JSON.stringify({ ...body, name: row.name }).slice(0, -1);
      } else if (!row.hasOwnName) {
        text += `,"name":${JSON.stringify(row.name)}`;
      }
      if (request.includeAgentInfo && body.agent_info === undefined) {
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
  owners(examples: number): Promise<OwnedRegistrations[]> {
    return this.store.owners(this.now(), examples);
  }

  async entryOf(mailbox: string): Promise<readonly Uint8Array[] | undefined> {
    await this.catchUp();
    const [row] = await this.store.get([mailbox], this.now());
    if (!row) return undefined;
    return this.entry(
      row,
      requestValue(parseDiscoverRequest(Buffer.from('{"include_status":true}'))),
      Number.NaN,
    );
  }

  /** How far the background work is: skills waiting for vectors, the vector index's build. */
  status(): RegistryStatus {
    return {
      embedding: this.indexer?.embedding ?? false,
      pendingSkills: this.indexer ? this.pendingSkills() : 0,
      vectors: this.vectors?.status?.(),
      warning: this.options.embedderFallback,
    };
  }

  /** Resolves once every stored skill (and card) has its vector (for tests and benchmarks). */
  async indexed(): Promise<void> {
    await this.indexer?.caughtUp();
    await this.indexer?.cardsFilled();
  }

  /** Agents registered before card scoring whose card vector is still being embedded. */
  get cardsPending(): number {
    return this.indexer?.cardsPending ?? 0;
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
