import type { Logger } from "@mq9/broker";
import type { RegistryStore, StoredDoc } from "../store/registry-store.js";
import type { VectorStore } from "../vectors/vector-store.js";
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

  constructor(
    private readonly store: RegistryStore,
    private readonly vectors: VectorStore,
    private readonly embedder: Embedder,
    private readonly logger: Logger,
    private readonly batchSize = 64,
  ) {}

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
  }

  /** New docs were stored (`replaced` ones are gone). */
  docsChanged(ids: number[], replaced: number[]): void {
    if (replaced.length > 0) this.removeVectors(replaced);
    if (ids.length === 0) return;
    if (this.unavailable === undefined) for (const id of ids) this.pendingIds.add(id);
    this.enqueued = Math.max(this.enqueued, ids[ids.length - 1]);
    this.kick();
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
        const { target, docs, vectors } = await next;
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
  private async nextPage(
    after: number,
  ): Promise<{ target: number; docs: StoredDoc[]; vectors: Promise<Float32Array[]> }> {
    const target = this.enqueued;
    const lanes = Math.max(1, this.embedder.parallelism ?? 1);
    const docs = await this.store.docsToEmbed(this.embedder.id, after, this.batchSize * lanes);
    if (this.closed) return { target, docs: [], vectors: Promise.resolve([]) };
    const texts = docs.map(embeddingText);
    const share = Math.ceil(texts.length / lanes);
    const vectors = Promise.all(
      Array.from({ length: Math.ceil(texts.length / share) }, (_, i) =>
        this.embedDocs(texts.slice(i * share, (i + 1) * share)),
      ),
    ).then((parts) => parts.flat());
    // Awaited only after the page before it is written; a failure meanwhile is not unhandled.
    vectors.catch(() => undefined);
    return { target, docs, vectors };
  }

  private async embedDocs(texts: string[]): Promise<Float32Array[]> {
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
    await this.chain;
    this.advance(Number.MAX_SAFE_INTEGER);
  }
}
