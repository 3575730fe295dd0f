import type { Logger } from "@mq9/broker";
import { parseRegisterRequest } from "@mq9/protocol";
import type { AgentRow, RegistryStore, StoredDoc } from "../store/registry-store.js";
import type { CardItem, VectorStore } from "../vectors/vector-store.js";
import type { Embedder } from "./embedder.js";
import { QueryVectorCache } from "./query-vector-cache.js";

/**
 * The text a skill is embedded from: the skill's own words; the agent's
 * description only for an agent without skills. (Adding the agent's
 * description to every skill measured no better on the relevance set, and
 * keeps identical skills of different agents from sharing one embedding.)
 */
export function embeddingText(doc: StoredDoc): string {
  const ownWords = doc.skillName !== "" || doc.skillDescription !== "";
  const parts = [
    doc.skillName,
    doc.skillDescription,
    ownWords ? "" : doc.agentDescription,
    doc.tags,
    doc.examples.replace(/\n/g, ". "),
  ];
  return parts
    .map((p) => p.trim())
    .filter((p) => p !== "")
    .join(". ");
}

/** The text an agent's card vector is embedded from: its name and description. */
export function cardText(name: string, description: string): string {
  return [name, description]
    .map((p) => p.trim())
    .filter((p) => p !== "")
    .join(". ");
}

/** A stored registration's card text, read from its body as REGISTER read it (its name alone if that fails now). */
export function cardTextOfRow(row: AgentRow): string {
  try {
    const parsed = parseRegisterRequest(Buffer.from(row.bodyJson), {
      maxCardBytes: Number.MAX_SAFE_INTEGER,
      maxSkills: Number.MAX_SAFE_INTEGER,
    });
    if (parsed.ok) return cardText(parsed.value.name, parsed.value.description);
  } catch {
    // A body an older version accepted and this one does not: the name still describes it.
  }
  return cardText(row.name, "");
}

/** Agents whose card vectors are filled in per write while backfilling. */
const CARD_BACKFILL_BATCH = 64;

/** First wait before embedding again after a failure that may pass (a server down); doubles up to the cap. */
const FIRST_RETRY_MS = 1_000;
const MAX_RETRY_MS = 60_000;

/** Whether an embedder's failure says that trying later may succeed (a remote server down or overloaded). */
const retryable = (err: unknown) => (err as { retryable?: unknown } | undefined)?.retryable === true;

/**
 * Keeps the vector store in step with the registry store: embeds docs that
 * have no vector yet (oldest first, in batches, off the request path) and
 * removes the vectors of replaced or deleted docs. Every vector-store write
 * goes through one chain, so a late vector never outlives its doc. A failure
 * marked retryable is tried again later; any other turns semantic search off.
 */
export class EmbeddingIndexer {
  private chain: Promise<unknown> = Promise.resolve();
  private running?: Promise<void>;
  /** Highest doc id handed in; docs up to `done` have been embedded (or dropped). */
  private enqueued = 0;
  private done = 0;
  private waiters: { through: number; resolve: () => void }[] = [];
  private unavailable?: string;
  private closed = false;
  /** Set while waiting to embed again after a retryable failure. */
  private retryTimer?: NodeJS.Timeout;
  private retryMs = FIRST_RETRY_MS;
  /** Every doc up to this id has been looked at; docs only ever get higher ids. */
  private cursor = 0;
  /** Ids of stored docs still waiting for their vector. */
  private readonly pendingIds = new Set<number>();
  /** Agents of one kind register the same skills, and restarts re-register the same card: embed each text once. */
  private readonly recent = new QueryVectorCache(20_000);

  /** Whether agents' card vectors are kept beside their skills' (the store can, and the weight is not 0). */
  readonly cards: boolean;
  /** The card backfill of a store opened without them, while it runs. */
  private backfill?: Promise<void>;
  private cardsMissing = 0;

  constructor(
    private readonly store: RegistryStore,
    private readonly vectors: VectorStore,
    private readonly embedder: Embedder,
    private readonly logger: Logger,
    options: { cards?: boolean; now?: () => number; batchSize?: number } = {},
  ) {
    this.cards =
      (options.cards ?? false) &&
      vectors.upsertCards !== undefined &&
      vectors.cardScores !== undefined &&
      vectors.deleteCards !== undefined &&
      vectors.cardAgents !== undefined;
    this.now = options.now ?? Date.now;
    this.batchSize = options.batchSize ?? 64;
  }

  private readonly now: () => number;
  private readonly batchSize: number;

  /** Why semantic search cannot run, once the embedder has failed. */
  get unavailableReason(): string | undefined {
    return this.unavailable;
  }

  /** Drops vectors from another model or a lost vector file, then embeds whatever is missing. */
  async start(): Promise<void> {
    const summary = await this.store.embeddedSummary();
    const stale = summary.models.some((m) => m !== this.embedder.id);
    const stored = await this.vectors.count();
    if (stale || stored !== summary.count) {
      if (summary.count > 0 || stored > 0) {
        this.logger.info(
          { vectors: stored, embedded: summary.count, models: summary.models, model: this.embedder.id },
          "registry vectors are out of step with the registry: re-embedding every skill",
        );
      }
      await this.serial(() => this.vectors.clear());
      await this.store.resetEmbedded();
    }
    for (let after = 0; ; ) {
      const page = await this.store.docsToEmbed(this.embedder.id, after, 10_000);
      if (page.length === 0) break;
      for (const doc of page) this.pendingIds.add(doc.id);
      after = page[page.length - 1].id;
    }
    if (this.pendingIds.size > 0) {
      this.enqueued = Number.MAX_SAFE_INTEGER - 1;
      this.kick();
    }
    await this.startCards();
  }

  /**
   * With cards on, fills in the card vectors a store lacks (one written before them) in the
   * background; with them off, drops any, so that turning them on later fills in fresh ones
   * rather than keeping cards of registrations changed meanwhile.
   */
  private async startCards(): Promise<void> {
    const cardAgents = this.vectors.cardAgents;
    if (cardAgents === undefined) return;
    const have = await this.serial(() => cardAgents.call(this.vectors));
    if (!this.cards) {
      if (have.size > 0) await this.serial(() => this.vectors.deleteCards!([...have]));
      return;
    }
    const missing: AgentRow[] = [];
    const page = 10_000;
    for (let offset = 0; ; offset += page) {
      const rows = await this.store.list({}, this.now(), offset, page);
      for (const row of rows) if (!have.has(row.mailbox)) missing.push(row);
      if (rows.length < page) break;
    }
    if (missing.length === 0) return;
    this.cardsMissing = missing.length;
    this.logger.info(
      { agents: missing.length },
      "agent registry: embedding the card (name and description) of every agent registered before card scoring, in the background",
    );
    this.backfill = this.fillCards(missing)
      .catch((err) => {
        if (!this.closed)
          this.logger.warn(
            { err },
            "agent registry: could not embed every card; agents without one are ranked by their skills alone",
          );
      })
      .finally(() => {
        this.backfill = undefined;
        this.cardsMissing = 0;
      });
  }

  private async fillCards(missing: AgentRow[]): Promise<void> {
    let done = 0;
    let reported = 0;
    for (let from = 0; from < missing.length && !this.closed; from += CARD_BACKFILL_BATCH) {
      const rows = missing.slice(from, from + CARD_BACKFILL_BATCH);
      const texts = rows.map(cardTextOfRow);
      const vectors = await this.embedDocs(texts);
      if (this.closed) return;
      await this.serial(async () => {
        // Only registrations unchanged since they were read: a newer one brings its own card.
        const now = new Map(
          (
            await this.store.get(
              rows.map((r) => r.mailbox),
              this.now(),
            )
          ).map((row) => [row.mailbox, row]),
        );
        const items: CardItem[] = [];
        rows.forEach((row, i) => {
          const current = now.get(row.mailbox);
          if (current !== undefined && current.bodyJson === row.bodyJson) {
            items.push({ agent: row.mailbox, vector: vectors[i] });
          }
        });
        await this.vectors.upsertCards!(items);
      });
      done += rows.length;
      this.cardsMissing = missing.length - done;
      if (done === missing.length || done - reported >= Math.max(CARD_BACKFILL_BATCH, missing.length / 10)) {
        reported = done;
        this.logger.info(
          { done, agents: missing.length },
          `agent registry: card vectors ${Math.floor((100 * done) / missing.length)}% filled in`,
        );
      }
    }
  }

  /** Agents whose card vector the backfill has still to embed. */
  get cardsPending(): number {
    return this.cardsMissing;
  }

  /** Resolves once the card backfill (if one runs) is over. */
  async cardsFilled(): Promise<void> {
    await this.backfill;
  }

  /** New docs were stored (`replaced` ones are gone). */
  docsChanged(ids: number[], replaced: number[]): void {
    if (replaced.length > 0) this.removeVectors(replaced);
    if (ids.length === 0) return;
    if (this.unavailable === undefined) for (const id of ids) this.pendingIds.add(id);
    this.enqueued = Math.max(this.enqueued, ids[ids.length - 1]);
    this.kick();
  }

  /** Registrations were removed: their card vectors go (their docs' vectors go through removeVectors). */
  removeCards(mailboxes: string[]): void {
    if (!this.cards || mailboxes.length === 0) return;
    void this.serial(() => this.vectors.deleteCards!(mailboxes)).catch((err) =>
      this.logger.error({ err }, "could not delete registry card vectors"),
    );
  }

  removeVectors(docIds: number[]): void {
    if (docIds.length === 0) return;
    for (const id of docIds) this.pendingIds.delete(id);
    void this.serial(() => this.vectors.delete({ ids: docIds })).catch((err) =>
      this.logger.error({ err }, "could not delete registry vectors"),
    );
  }

  /** How many stored skills are waiting for their vectors (not yet found by meaning). */
  get pending(): number {
    return this.unavailable === undefined ? this.pendingIds.size : 0;
  }

  /** Whether stored skills are waiting for their vectors. */
  get embedding(): boolean {
    return this.unavailable === undefined && this.done < this.enqueued;
  }

  /** Resolves once every doc stored before the call has its vector (or the embedder has failed). */
  caughtUp(): Promise<void> {
    const through = this.enqueued;
    // While the embedder's server is away, nothing waits for it: those skills stay pending.
    if (this.unavailable || this.retryTimer || this.done >= through) return this.chain.then(() => undefined);
    return new Promise((resolve) => this.waiters.push({ through, resolve }));
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.chain.then(work);
    this.chain = next.catch(() => undefined);
    return next;
  }

  private kick(): void {
    if (this.running || this.retryTimer || this.unavailable || this.closed) return;
    this.running = this.drain().finally(() => {
      this.running = undefined;
      if (this.enqueued > this.done && !this.unavailable && !this.closed) this.kick();
    });
  }

  private async drain(): Promise<void> {
    try {
      let next = this.prefetch(this.cursor);
      for (;;) {
        if (this.closed) return;
        const { target, docs, vectors, cards } = await next;
        if (this.closed) return;
        if (docs.length === 0) {
          // Whatever is left was deleted before its turn (or never needed a vector).
          for (const id of this.pendingIds) if (id <= target) this.pendingIds.delete(id);
          this.advance(target);
          if (this.enqueued === target) return;
          next = this.prefetch(this.cursor);
          continue;
        }
        // The next page is embedded while this one is written: the model does not wait for the store.
        next = this.prefetch(docs[docs.length - 1].id);
        const embedded = await vectors;
        const cardVectors = await cards.vectors;
        await this.serial(async () => {
          const present = new Set(
            await this.store.markEmbedded(
              docs.map((d) => d.id),
              this.embedder.id,
            ),
          );
          await this.vectors.upsert(
            docs.flatMap((doc, i) =>
              present.has(doc.id) ? [{ id: doc.id, agent: doc.mailbox, vector: embedded[i] }] : [],
            ),
          );
          // The card of an agent whose docs are still there: a replaced registration's docs are not.
          const live = new Set(docs.filter((d) => present.has(d.id)).map((d) => d.mailbox));
          const items = cards.agents.flatMap((agent, i) =>
            live.has(agent) ? [{ agent, vector: cardVectors[i] }] : [],
          );
          if (items.length > 0) await this.vectors.upsertCards!(items);
        });
        for (const doc of docs) this.pendingIds.delete(doc.id);
        this.cursor = docs[docs.length - 1].id;
        this.advance(Math.min(target, this.cursor));
        this.retryMs = FIRST_RETRY_MS;
      }
    } catch (err) {
      if (this.closed) return;
      if (retryable(err)) {
        this.logger.warn(
          { err },
          `the registry embedder failed; embedding the waiting skills again in ${Math.round(this.retryMs / 1000)} s`,
        );
        this.retryTimer = setTimeout(() => {
          this.retryTimer = undefined;
          this.kick();
        }, this.retryMs);
        this.retryTimer.unref();
        this.retryMs = Math.min(MAX_RETRY_MS, this.retryMs * 2);
        const waiting = this.waiters.splice(0);
        void this.chain.then(() => {
          for (const waiter of waiting) waiter.resolve();
        });
        return;
      }
      this.unavailable = (err as Error).message;
      this.logger.error(
        { err },
        "the registry embedder failed: semantic discovery falls back to full-text until the broker restarts",
      );
      this.advance(Number.MAX_SAFE_INTEGER);
    }
  }

  /** nextPage, awaited on the next turn; when the indexer closes first, its failure is nobody's. */
  private prefetch(after: number): ReturnType<EmbeddingIndexer["nextPage"]> {
    const page = this.nextPage(after);
    page.catch(() => undefined);
    return page;
  }

  /** The docs after `after` waiting for vectors (one batch for each of the embedder's workers), their embedding begun. */
  private async nextPage(after: number): Promise<{
    target: number;
    docs: StoredDoc[];
    vectors: Promise<Float32Array[]>;
    cards: { agents: string[]; vectors: Promise<Float32Array[]> };
  }> {
    const target = this.enqueued;
    const lanes = Math.max(1, this.embedder.parallelism ?? 1);
    const docs = await this.store.docsToEmbed(this.embedder.id, after, this.batchSize * lanes);
    const noCards = { agents: [], vectors: Promise.resolve([]) };
    if (this.closed) return { target, docs: [], vectors: Promise.resolve([]), cards: noCards };
    const texts = docs.map(embeddingText);
    // Each agent's card, embedded with its docs (all of a registration's docs are new together).
    const cardTexts = new Map<string, string>();
    if (this.cards) {
      for (const doc of docs) cardTexts.set(doc.mailbox, cardText(doc.agentName, doc.agentDescription));
    }
    const cards = { agents: [...cardTexts.keys()], vectors: this.embedDocs([...cardTexts.values()]) };
    cards.vectors.catch(() => undefined);
    const share = Math.ceil(texts.length / lanes);
    const vectors = Promise.all(
      Array.from({ length: Math.ceil(texts.length / share) }, (_, i) =>
        this.embedDocs(texts.slice(i * share, (i + 1) * share)),
      ),
    ).then((parts) => parts.flat());
    // Awaited only after the page before it is written; a failure meanwhile is not unhandled.
    vectors.catch(() => undefined);
    return { target, docs, vectors, cards };
  }

  private async embedDocs(texts: string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    const missing = [...new Set(texts.filter((t) => this.recent.get(t) === undefined))];
    if (missing.length > 0) {
      const fresh = await this.embedder.embed(missing, { purpose: "document" });
      missing.forEach((text, i) => {
        this.recent.set(text, fresh[i]);
      });
    }
    return texts.map((t) => this.recent.get(t)!);
  }

  private advance(through: number): void {
    this.done = Math.max(this.done, through);
    const ready = this.waiters.filter((w) => w.through <= this.done || this.unavailable);
    this.waiters = this.waiters.filter((w) => !ready.includes(w));
    if (ready.length === 0) return;
    void this.chain.then(() => {
      for (const waiter of ready) waiter.resolve();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    await this.running;
    await this.backfill;
    await this.chain;
    this.advance(Number.MAX_SAFE_INTEGER);
  }
}
