import { mkdirSync, renameSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { type Logger, StorageError, silentLogger } from "@mq9/broker";
import { SqliteDriver as Database } from "@mq9/broker/internal";
import { TwoGenerationMap } from "@mq9/protocol";
import { RegistryDefaults } from "../defaults.js";
import { BestFirst } from "./best-first.js";
import { CentredSpace, PointNorms } from "./centred-space.js";
import { FlatVectors, TopK } from "./flat-vectors.js";
import { chooseHnswBuild } from "./hnswlib-build.js";
import { type ExactIndex, IsolatedPoints, isolatedCapacity } from "./isolated-points.js";
import { RepeatedQueries } from "./repeated-queries.js";
import { SharedPoints, sameVector, vectorHash } from "./shared-points.js";
import type {
  CardItem,
  VectorFilter,
  VectorHit,
  VectorIndexStatus,
  VectorItem,
  VectorSelector,
  VectorStore,
} from "./vector-store.js";
import { checkVectorLengths } from "./vector-store.js";

/** The slice of hnswlib-node used here (an optional dependency, so its types may be absent). */
interface Hnsw {
  initIndex(options: {
    maxElements: number;
    m?: number;
    efConstruction?: number;
    randomSeed?: number;
    allowReplaceDeleted?: boolean;
  }): void;
  readIndex(file: string, allowReplaceDeleted?: boolean): Promise<boolean>;
  writeIndex(file: string): Promise<boolean>;
  resizeIndex(maxElements: number): void;
  addPoint(point: number[], label: number, replaceDeleted?: boolean): void;
  markDelete(label: number): void;
  searchKnn(
    query: number[],
    k: number,
    filter?: (label: number) => boolean,
  ): { distances: number[]; neighbors: number[] };
  getPoint(label: number): number[];
  getIdsList(): number[];
  getMaxElements(): number;
  getCurrentCount(): number;
  setEf(ef: number): void;
}
type HnswModule = {
  HierarchicalNSW: new (space: "ip" | "l2" | "cosine", dimensions: number) => Hnsw;
  BruteforceSearch: new (space: "ip" | "l2" | "cosine", dimensions: number) => ExactIndex;
};

interface LoadedHnsw {
  module: HnswModule;
  description: string;
}

async function importHnsw(): Promise<LoadedHnsw | undefined> {
  const chosen = chooseHnswBuild();
  if (chosen.specifier !== "hnswlib-node") {
    try {
      const module = createRequire(import.meta.url)(chosen.specifier) as HnswModule;
      return { module, description: chosen.description };
    } catch (err) {
      chosen.description = `generic build (native build failed to load: ${(err as Error).message})`;
    }
  }
  // A variable specifier: hnswlib-node is optional; without it the store stays exact.
  const specifier = "hnswlib-node";
  try {
    const mod = (await import(specifier)) as HnswModule & { default?: HnswModule };
    return { module: mod.HierarchicalNSW ? mod : mod.default!, description: chosen.description };
  } catch {
    return undefined;
  }
}

/** Search breadth of the probe that finds a new point's nearest neighbour (how lone it is). */
const NEAREST_PROBE_EF = 64;

export interface LocalVectorStoreOptions {
  /** Folder for `vectors.db` and `vectors.hnsw`; ":memory:" keeps nothing. */
  dataDir: string;
  /** Build the approximate (HNSW) index once this many vectors are stored; below it, search is exact. */
  annThreshold?: number;
  /**
   * HNSW graph degree and build/search breadth; `centred: false` builds the graph over the
   * vectors as they are instead of with their common component taken out (see centred-space.ts).
   */
  hnsw?: { m?: number; efConstruction?: number; efSearch?: number; centred?: boolean };
  /** A filtered query scans exactly when the filter leaves at most this many vectors. */
  exactFilterLimit?: number;
  /** Longest the background build may hold the event loop per turn. */
  buildSliceMs?: number;
  logger?: Logger;
}

/**
 * The default vector store: vectors persisted in SQLite in the data dir,
 * searched exactly while few, and through an HNSW index (hnswlib-node) built
 * in the background once `annThreshold` is crossed. Vectors not yet in the
 * index are scanned exactly, so an upsert is searchable at once. Identical
 * vectors (replicas of an agent) share one point of the index.
 */
export class LocalVectorStore implements VectorStore {
  private readonly db: Database.Database;
  private readonly stmt;
  private readonly memory: boolean;
  private readonly indexFile: string;
  private readonly threshold: number;
  private readonly efSearch: number;
  /** Not a setting: the search bench varies it (bench/registry-search-cost.js). */
  private readonly searchWidth: number = 2;
  private readonly exactFilterLimit: number;
  private readonly sliceMs: number;
  private readonly hnswOptions: { m: number; efConstruction: number; centred: boolean };
  private readonly logger: Logger;
  private dimensions?: number;
  private readonly agentOf = new Map<number, string>();
  private readonly byAgent = new Map<string, Set<number>>();
  /** Vectors not in the index, searched exactly. */
  private pending?: FlatVectors;
  private index?: Hnsw;
  /** The graph's loneliest points, searched exactly beside it (see isolated-points.ts). */
  private isolated?: IsolatedPoints;
  /** The geometry of the index: set with it, saved in `meta` beside its file. */
  private space?: CentredSpace;
  private norms = new PointNorms();
  /** The docs in the index, by the point (distinct vector) each one is on. */
  private points = new SharedPoints();
  /** Vectors of recently scanned points (16,384 of 512 dimensions take 32 MiB). */
  private readonly pointVectors = new TwoGenerationMap<number, Float32Array>(16_384);
  /** Card vectors read lately (null: the agent has none): a query scores its candidates' cards. */
  private readonly cardVectors = new TwoGenerationMap<string, Float32Array | null>(16_384);
  /** Unfiltered answers kept for repeated queries (the HNSW search is most of a query's cost). */
  private readonly repeated = new RepeatedQueries();
  /** Scratch space of `searchIndex`, kept between searches (a search runs to its end at once). */
  private scores = new Float64Array(256);
  private readonly bestFirst = new BestFirst();
  private hnswModule?: Promise<HnswModule | undefined>;
  private building?: Promise<void>;
  private addedSinceSave = 0;
  private closed = false;

  private constructor(options: LocalVectorStoreOptions) {
    this.memory = options.dataDir === ":memory:";
    this.indexFile = this.memory ? "" : join(options.dataDir, "vectors.hnsw");
    this.threshold = options.annThreshold ?? RegistryDefaults.annThreshold;
    // 128 rather than 64: the found neighbours come closer to the exact ones, for more time per query.
    this.efSearch = options.hnsw?.efSearch ?? 128;
    this.exactFilterLimit = options.exactFilterLimit ?? 4096;
    // Short turns: a request that arrives during a build waits at most this long for the event loop.
    this.sliceMs = options.buildSliceMs ?? 2;
    this.logger = options.logger ?? silentLogger;
    this.hnswOptions = {
      m: options.hnsw?.m ?? 16,
      efConstruction: options.hnsw?.efConstruction ?? 100,
      centred: options.hnsw?.centred ?? true,
    };
    try {
      if (!this.memory) mkdirSync(options.dataDir, { recursive: true });
      this.db = new Database(this.memory ? ":memory:" : join(options.dataDir, "vectors.db"), {
        timeout: 200,
      });
      // Exclusive before the first access: the WAL index then lives in memory, not in a -shm
      // file, which a full disk may not let SQLite create or grow (the store would not open).
      this.db.pragma("locking_mode = EXCLUSIVE");
      // 8 KiB pages hold three 512-dimension vectors (4 KiB pages hold one).
      this.db.pragma("page_size = 8192");
      this.db.pragma("journal_mode = WAL");
      this.db.pragma("synchronous = NORMAL");
      this.db.exec(`
        CREATE TABLE IF NOT EXISTS vectors (id INTEGER PRIMARY KEY, agent TEXT NOT NULL, vector BLOB NOT NULL);
        CREATE TABLE IF NOT EXISTS cards (agent TEXT PRIMARY KEY, vector BLOB NOT NULL);
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;`);
    } catch (err) {
      throw StorageError.from(err, `cannot open the vector store in ${options.dataDir}`);
    }
    this.stmt = {
      upsert: this.db.prepare("INSERT OR REPLACE INTO vectors (id, agent, vector) VALUES (?, ?, ?)"),
      delete: this.db.prepare("DELETE FROM vectors WHERE id = ?"),
      all: this.db.prepare<[], { id: number; agent: string }>("SELECT id, agent FROM vectors"),
      vector: this.db.prepare<[number], { vector: Buffer }>("SELECT vector FROM vectors WHERE id = ?"),
      vectors: this.db.prepare<[], { id: number; vector: Buffer }>("SELECT id, vector FROM vectors"),
      clear: this.db.prepare("DELETE FROM vectors"),
      upsertCard: this.db.prepare("INSERT OR REPLACE INTO cards (agent, vector) VALUES (?, ?)"),
      card: this.db.prepare<[string], { vector: Buffer }>("SELECT vector FROM cards WHERE agent = ?"),
      deleteCard: this.db.prepare("DELETE FROM cards WHERE agent = ?"),
      cardAgents: this.db.prepare<[], { agent: string }>("SELECT agent FROM cards"),
      clearCards: this.db.prepare("DELETE FROM cards"),
      clearMeta: this.db.prepare("DELETE FROM meta"),
      getMeta: this.db.prepare<[string], { value: string }>("SELECT value FROM meta WHERE key = ?"),
      setMeta: this.db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)"),
    };
  }

  /** Opens (or creates) the store and loads what it holds; a saved index is reused. */
  static async open(options: LocalVectorStoreOptions): Promise<LocalVectorStore> {
    const store = new LocalVectorStore(options);
    await store.load();
    return store;
  }

  private async load(): Promise<void> {
    const dims = this.stmt.getMeta.get("dimensions");
    if (!dims) return;
    this.dimensions = Number(dims.value);
    const rows = this.stmt.all.all();
    for (const { id, agent } of rows) this.remember(id, agent);
    if (!this.memory && rows.length >= this.threshold) await this.readSavedIndex();
    this.pending = new FlatVectors(this.dimensions, Math.max(1024, rows.length - this.points.docCount));
    for (const { id } of rows) {
      if (this.points.has(id)) continue;
      this.pending.set(id, this.storedVector(id));
    }
    this.scheduleIndexing();
  }

  /**
   * Loads the saved index and puts every stored doc back on the point with its
   * vector (the file keeps each point's projection by label, not which docs
   * share it). Docs without one are indexed again in the background; points
   * left without docs are deleted. An index saved without its space is not used.
   */
  private async readSavedIndex(): Promise<void> {
    const module = await this.hnsw();
    if (!module || this.dimensions === undefined) return;
    const saved = this.stmt.getMeta.get("index_space");
    const space = saved && CentredSpace.fromBytes(Buffer.from(saved.value, "base64"), this.dimensions);
    // A graph saved without its space or its lone points is built again (in the background).
    const isolated = this.savedIsolated();
    if (!space || !isolated) return;
    const index = new module.HierarchicalNSW("ip", this.dimensions);
    try {
      await index.readIndex(this.indexFile, true);
    } catch {
      return; // no saved index (or an unreadable one): rebuilt in the background
    }
    // Labels by the hash of their saved projection; read on demand, since a copy of every point
    // in this heap would double the memory at 1M vectors.
    const savedRest = (label: number) => Float32Array.from(index.getPoint(label));
    const byHash = new Map<number, number[]>();
    const points = new SharedPoints();
    const norms = new PointNorms();
    const live = new Set<number>();
    for (const label of index.getIdsList()) {
      points.reserve(label);
      let rest: Float32Array;
      try {
        rest = savedRest(label);
      } catch {
        continue; // deleted before it was saved
      }
      const hash = vectorHash(rest);
      const labels = byHash.get(hash);
      if (labels) labels.push(label);
      else byHash.set(hash, [label]);
    }
    for (const { id, vector } of this.stmt.vectors.iterate()) {
      const v = asFloats(vector);
      // A replica of a doc already placed: the same point.
      const known = points.find(v, (candidate) => {
        const doc = points.anyDoc(candidate);
        return doc !== undefined && sameVector(this.storedVector(doc), v);
      });
      if (known !== undefined) {
        points.join(id, known);
        continue;
      }
      const projected = space.project(v);
      const rest = Float32Array.from(projected.rest);
      const label = byHash.get(vectorHash(rest))?.find((l) => !live.has(l) && sameVector(savedRest(l), rest));
      if (label === undefined) continue;
      live.add(label);
      points.restore(label, v);
      points.join(id, label);
      norms.set(label, projected.along, projected.norm);
    }
    for (const labels of byHash.values())
      for (const label of labels) if (!live.has(label)) index.markDelete(label);
    this.points = points;
    this.norms = norms;
    this.space = space;
    this.index = index;
    this.isolated = this.newIsolated(module);
    for (const [label, nearest] of isolated) {
      if (live.has(label)) this.isolated.consider(label, index.getPoint(label), nearest);
    }
  }

  private newIsolated(module: HnswModule): IsolatedPoints {
    return new IsolatedPoints(new module.BruteforceSearch("ip", this.dimensions!), () =>
      isolatedCapacity(this.points.pointCount),
    );
  }

  /** The isolated points saved with the graph; undefined for a graph saved before they were kept. */
  private savedIsolated(): [number, number][] | undefined {
    const saved = this.stmt.getMeta.get("isolated_points");
    if (!saved) return undefined;
    try {
      return JSON.parse(saved.value) as [number, number][];
    } catch {
      return undefined;
    }
  }

  private hnsw(): Promise<HnswModule | undefined> {
    this.hnswModule ??= importHnsw().then((loaded) => {
      if (!loaded) {
        this.logger.warn(
          "hnswlib-node is not installed: vector search stays exact (slow past ~100k skills); install the optional hnswlib-node@3.0.0 beside mq9 for the approximate index",
        );
        return undefined;
      }
      this.logger.info(`vector index: hnswlib ${loaded.description}`);
      return loaded.module;
    });
    return this.hnswModule;
  }

  private remember(id: number, agent: string): void {
    this.agentOf.set(id, agent);
    let ids = this.byAgent.get(agent);
    if (!ids) {
      ids = new Set();
      this.byAgent.set(agent, ids);
    }
    ids.add(id);
  }

  private forget(id: number): boolean {
    const agent = this.agentOf.get(id);
    if (agent === undefined) return false;
    this.agentOf.delete(id);
    const ids = this.byAgent.get(agent)!;
    ids.delete(id);
    if (ids.size === 0) this.byAgent.delete(agent);
    if (!this.pending?.delete(id)) this.leaveIndex(id);
    return true;
  }

  /** Takes a doc off its point, and the point out of the index once no doc is left on it. */
  private leaveIndex(id: number): void {
    const emptied = this.points.detach(id);
    if (emptied !== undefined) {
      this.index!.markDelete(emptied);
      this.isolated?.remove(emptied);
    }
  }

  /** The first vector written sets the store's length. */
  private adoptDimensions(length: number): void {
    if (this.dimensions !== undefined) return;
    this.dimensions = length;
    this.stmt.setMeta.run("dimensions", String(length));
    this.pending = new FlatVectors(length);
  }

  async upsert(items: VectorItem[]): Promise<void> {
    if (items.length === 0) return;
    this.adoptDimensions(items[0].vector.length);
    checkVectorLengths(items, this.dimensions, "vector");
    try {
      this.db.transaction(() => {
        for (const item of items) {
          const v = item.vector;
          this.stmt.upsert.run(item.id, item.agent, Buffer.from(v.buffer, v.byteOffset, v.byteLength));
        }
      })();
    } catch (err) {
      throw StorageError.from(err, "vector write failed");
    }
    for (const item of items) {
      const previous = this.agentOf.get(item.id);
      if (previous !== undefined && previous !== item.agent) this.forget(item.id);
      this.remember(item.id, item.agent);
      // A changed vector may now match another point: the build finds its place again.
      this.leaveIndex(item.id);
      this.pending!.set(item.id, item.vector);
    }
    this.repeated.changed();
    this.scheduleIndexing();
  }

  async query(vector: Float32Array, filter: VectorFilter, limit: number): Promise<VectorHit[]> {
    const top = new TopK(limit);
    if (!this.pending || limit <= 0) return top.hits;
    const agentOf = (id: number) => this.agentOf.get(id)!;
    if (filter.agents) {
      let allowed = 0;
      for (const agent of filter.agents) allowed += this.byAgent.get(agent)?.size ?? 0;
      if (allowed === 0) return top.hits;
      if (allowed <= this.exactFilterLimit || !this.index) {
        // Docs on one point (replicas' skills) share a vector: read and score it once.
        const pointScores = new Map<number, number>();
        for (const agent of filter.agents) {
          for (const id of this.byAgent.get(agent) ?? []) {
            const label = this.points.pointOf(id);
            let score = label === undefined ? undefined : pointScores.get(label);
            if (score === undefined) {
              const v =
                label === undefined
                  ? (this.pending.get(id) ?? this.storedVector(id))
                  : this.pointVector(label, id);
              score = dot(v, vector);
              if (label !== undefined) pointScores.set(label, score);
            }
            top.offer(id, agent, score);
          }
        }
        return top.hits;
      }
      const agents = filter.agents;
      const accept = (id: number) => agents.has(this.agentOf.get(id) ?? "");
      this.searchIndex(vector, limit, top, accept);
      this.pending.scan(vector, top, agentOf, accept);
      return top.hits;
    }
    const kept = this.repeated.get(vector, limit);
    if (kept !== undefined) return kept;
    this.searchIndex(vector, limit, top);
    this.pending.scan(vector, top, agentOf);
    this.repeated.set(vector, limit, top.hits);
    return top.hits;
  }

  /**
   * Offers the docs of the nearest points to `top`. Each point stands for at
   * least one doc that passes `accept`, so `limit` points would be enough if
   * the graph ranked them by the exact score; it does not, so all the points
   * the search kept are scored.
   */
  private searchIndex(
    vector: Float32Array,
    limit: number,
    top: TopK,
    accept?: (id: number) => boolean,
  ): void {
    const points = this.points;
    if (!this.index || !this.space || points.pointCount === 0) return;
    // A larger graph needs a broader search for the same recall: past 256k points the breadth
    // grows with the size (500 at 1M), while the time per query stays far below the budget.
    const ef = Math.max(this.efSearch, this.searchWidth * limit, Math.ceil(points.pointCount / 2000));
    this.index.setEf(ef);
    // The graph ranks points by their similarity in its space, which is not the exact score (the
    // mean direction's share differs from point to point): every point the search kept is scored
    // exactly, so one that ranks lower there than by its exact score is not lost. The search
    // holds those ef points anyway; scoring them costs little beside finding them.
    const k = Math.min(ef, points.pointCount);
    const query = this.space.project(vector);
    let result: { distances: number[]; neighbors: number[] };
    const acceptPoint = accept && ((label: number) => points.someDoc(label, accept));
    try {
      result = this.index.searchKnn(query.rest, k, acceptPoint);
    } catch {
      // Fewer than k points pass the filter: the graph search gives up, so search those exactly.
      for (const id of points.docs()) {
        if (accept && !accept(id)) continue;
        top.offer(id, this.agentOf.get(id)!, dot(this.storedVector(id), vector));
      }
      return;
    }
    const { neighbors, distances } = result;
    const lone = this.isolated?.search(query.rest, limit, acceptPoint);
    if (lone && lone.neighbors.length > 0) {
      const found = new Set(neighbors);
      for (let i = 0; i < lone.neighbors.length; i++) {
        if (found.has(lone.neighbors[i])) continue;
        neighbors.push(lone.neighbors[i]);
        distances.push(lone.distances[i]);
      }
    }
    const n = neighbors.length;
    const scores = this.scoreBuffer(n);
    for (let i = 0; i < n; i++) scores[i] = this.norms.score(query, neighbors[i], 1 - distances[i]);
    // Best exact score first: each doc then enters `top` at its end, and once `top` is full the
    // first point at or below its floor ends the walk (no later one can enter).
    const order = this.bestFirst;
    order.start(scores, n);
    const agentOf = this.agentOf;
    for (let i = order.next(); i >= 0; i = order.next()) {
      const score = scores[i];
      if (score <= top.floor) break;
      const docs = points.docsOn(neighbors[i]);
      if (typeof docs === "number") {
        if (!accept || accept(docs)) top.offer(docs, agentOf.get(docs)!, score);
        continue;
      }
      for (const id of docs ?? []) {
        if (score <= top.floor) break;
        if (!accept || accept(id)) top.offer(id, agentOf.get(id)!, score);
      }
    }
  }

  /** The exact scores of one search's points, reused from search to search. */
  private scoreBuffer(n: number): Float64Array {
    if (this.scores.length < n) this.scores = new Float64Array(Math.max(n, 2 * this.scores.length));
    return this.scores;
  }

  /**
   * A vector from the table: cheaper than asking hnswlib (getPoint builds a JS
   * array), and the index keeps no second copy in this process's heap.
   */
  private storedVector(id: number): Float32Array {
    return asFloats(this.stmt.vector.get(id)!.vector);
  }

  /**
   * A point's vector, read through `doc` (one of its docs) and kept for the next exact scan:
   * filtered and hybrid queries score the same few thousand points again and again, and a
   * read from SQLite cost more than the scoring. Labels are never reused, so an entry of a
   * deleted point is only ever evicted.
   */
  private pointVector(label: number, doc: number): Float32Array {
    let vector = this.pointVectors.get(label);
    if (vector === undefined) {
      vector = this.storedVector(doc);
      this.pointVectors.set(label, vector);
    }
    return vector;
  }

  async delete(selector: VectorSelector): Promise<number> {
    const ids = new Set<number>(selector.ids ?? []);
    for (const agent of selector.agents ?? []) for (const id of this.byAgent.get(agent) ?? []) ids.add(id);
    let removed = 0;
    try {
      this.db.transaction(() => {
        for (const id of ids) if (this.agentOf.has(id)) this.stmt.delete.run(id);
      })();
    } catch (err) {
      throw StorageError.from(err, "vector delete failed");
    }
    for (const id of ids) if (this.forget(id)) removed++;
    if (removed > 0) this.repeated.changed();
    return removed;
  }

  async count(): Promise<number> {
    return this.agentOf.size;
  }

  async upsertCards(items: CardItem[]): Promise<void> {
    if (items.length === 0) return;
    this.adoptDimensions(items[0].vector.length);
    checkVectorLengths(items, this.dimensions, "card vector");
    try {
      this.db.transaction(() => {
        for (const { agent, vector: v } of items) {
          this.stmt.upsertCard.run(agent, Buffer.from(v.buffer, v.byteOffset, v.byteLength));
        }
      })();
    } catch (err) {
      throw StorageError.from(err, "card vector write failed");
    }
    for (const { agent, vector } of items) this.cardVectors.set(agent, Float32Array.from(vector));
  }

  async cardScores(vector: Float32Array, agents: readonly string[]): Promise<Map<string, number>> {
    const scores = new Map<string, number>();
    for (const agent of agents) {
      let card = this.cardVectors.get(agent);
      if (card === undefined) {
        const row = this.stmt.card.get(agent);
        card = row ? Float32Array.from(asFloats(row.vector)) : null;
        this.cardVectors.set(agent, card);
      }
      if (card !== null) scores.set(agent, dot(card, vector));
    }
    return scores;
  }

  async deleteCards(agents: readonly string[]): Promise<void> {
    try {
      this.db.transaction(() => {
        for (const agent of agents) this.stmt.deleteCard.run(agent);
      })();
    } catch (err) {
      throw StorageError.from(err, "card vector delete failed");
    }
    for (const agent of agents) this.cardVectors.delete(agent);
  }

  async cardAgents(): Promise<Set<string>> {
    return new Set(this.stmt.cardAgents.all().map((row) => row.agent));
  }

  async clear(): Promise<void> {
    await this.building;
    this.stmt.clear.run();
    this.stmt.clearCards.run();
    this.stmt.clearMeta.run();
    this.cardVectors.clear();
    this.agentOf.clear();
    this.byAgent.clear();
    this.points = new SharedPoints();
    this.pointVectors.clear();
    this.index = undefined;
    this.isolated = undefined;
    this.space = undefined;
    this.norms = new PointNorms();
    this.pending = undefined;
    this.dimensions = undefined;
    this.repeated.changed();
    if (!this.memory) rmSync(this.indexFile, { force: true });
  }

  /** Whether the approximate index is in use, and how many vectors wait to enter it. */
  status(): VectorIndexStatus {
    return {
      indexed: this.points.docCount,
      points: this.points.pointCount,
      pending: this.pending?.size ?? 0,
      building: this.building !== undefined,
    };
  }

  /** Resolves once every stored vector is in the index (or at once, below the threshold). */
  async indexIdle(): Promise<void> {
    while (this.building) await this.building;
  }

  private scheduleIndexing(): void {
    if (this.building || this.closed || !this.pending || this.pending.size === 0) return;
    if (!this.index && this.agentOf.size < this.threshold) return;
    this.building = this.build().finally(() => {
      this.building = undefined;
      this.scheduleIndexing();
    });
  }

  /** Moves pending vectors into the index in slices, yielding the event loop between them. */
  private async build(): Promise<void> {
    const module = await this.hnsw();
    if (!module || this.dimensions === undefined) return;
    const started = performance.now();
    let moved = 0;
    if (!this.index) {
      const index = new module.HierarchicalNSW("ip", this.dimensions);
      index.initIndex({
        // Grown by doubling as points arrive: replicas share points, so docs overestimate them.
        maxElements: Math.max(1024, this.agentOf.size),
        m: this.hnswOptions.m,
        efConstruction: this.hnswOptions.efConstruction,
        randomSeed: 100,
        allowReplaceDeleted: true,
      });
      // The space is learned once, from the vectors there are when the index is first built.
      this.space = this.hnswOptions.centred
        ? CentredSpace.learn(this.pending!.vectors(), this.dimensions)
        : CentredSpace.identity(this.dimensions);
      this.stmt.setMeta.run("index_space", this.space.bytes().toString("base64"));
      this.index = index;
      this.isolated = this.newIsolated(module);
      this.logger.info(
        { vectors: this.agentOf.size },
        "building the approximate vector index in the background",
      );
    }
    const index = this.index;
    while (!this.closed && this.index === index && this.pending && this.pending.size > 0) {
      const sliceEnd = performance.now() + this.sliceMs;
      const pending: FlatVectors = this.pending;
      do {
        const [id] = pending.firstIds(1);
        this.addToIndex(index, id, pending.get(id)!);
        pending.delete(id);
        moved++;
      } while (pending.size > 0 && performance.now() < sliceEnd);
      // Moved from the exact scan into the graph: a search may now find slightly different ones.
      this.repeated.changed();
      await new Promise((resolve) => setImmediate(resolve));
    }
    this.addedSinceSave += moved;
    if (moved > 0) {
      this.logger.debug(
        { moved, ms: Math.round(performance.now() - started), indexed: this.points.docCount },
        "vector index updated",
      );
    }
    // Saving rewrites the whole index file: do it only once it has grown by a tenth, so the
    // total written stays linear in the number of vectors (close() saves the rest).
    if (this.addedSinceSave >= Math.max(10_000, this.points.docCount / 10)) await this.save();
  }

  /** Puts a doc on the point with its vector, adding the point to the index when it is new. */
  private addToIndex(index: Hnsw, id: number, vector: Float32Array): void {
    const same = this.points.find(vector, (label) => {
      const doc = this.points.anyDoc(label);
      return doc !== undefined && sameVector(this.pointVector(label, doc), vector);
    });
    if (same !== undefined) {
      this.points.join(id, same);
      return;
    }
    if (index.getCurrentCount() >= index.getMaxElements()) index.resizeIndex(index.getMaxElements() * 2);
    const projected = this.space!.project(vector);
    const nearest = this.nearestInGraph(index, projected.rest);
    const label = this.points.create(id, vector);
    this.norms.set(label, projected.along, projected.norm);
    index.addPoint(projected.rest, label, true);
    if (nearest) this.isolated?.neighbourArrived(nearest.label, nearest.similarity);
    this.isolated?.consider(label, projected.rest, nearest?.similarity ?? -1);
  }

  /** The point of the graph nearest to `rest` (a rough search: it only has to tell lone points apart). */
  private nearestInGraph(index: Hnsw, rest: number[]): { label: number; similarity: number } | undefined {
    if (this.points.pointCount === 0) return undefined;
    index.setEf(NEAREST_PROBE_EF);
    try {
      const { neighbors, distances } = index.searchKnn(rest, 1);
      return neighbors.length === 0 ? undefined : { label: neighbors[0], similarity: 1 - distances[0] };
    } catch {
      return undefined; // every point deleted
    }
  }

  private async save(): Promise<void> {
    if (this.memory || !this.index) return;
    this.stmt.setMeta.run("isolated_points", JSON.stringify(this.isolated?.entries() ?? []));
    const temp = `${this.indexFile}.tmp`;
    await this.index.writeIndex(temp);
    renameSync(temp, this.indexFile);
    this.addedSinceSave = 0;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.building;
    if (this.addedSinceSave > 0) await this.save().catch(() => {});
    if (this.db.open) this.db.close();
  }
}

/** A stored vector's bytes as floats (copied only when SQLite's buffer is not 4-byte aligned). */
function asFloats(bytes: Buffer): Float32Array {
  return bytes.byteOffset % 4 === 0
    ? new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4)
    : new Float32Array(Uint8Array.from(bytes).buffer);
}

function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i] * b[i];
  return sum;
}
