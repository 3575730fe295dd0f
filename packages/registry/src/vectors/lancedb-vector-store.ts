import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";
import { type Logger, StorageError, silentLogger } from "@mq9/broker";
import { RegistryDefaults } from "../defaults.js";
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

/*
 * The slices of @lancedb/lancedb and apache-arrow used here. Both are optional
 * dependencies loaded only when this store is configured, so their types may
 * be absent at build time.
 */
interface LanceRow {
  id: bigint | number;
  agent: string;
  _distance: number;
}
interface LancePlainQuery {
  select(columns: string[]): LancePlainQuery;
  toArray(): Promise<Array<{ agent: string }>>;
}
interface LanceVectorQuery {
  where(predicate: string): LanceVectorQuery;
  select(columns: string[]): LanceVectorQuery;
  limit(limit: number): LanceVectorQuery;
  distanceType(type: "cosine"): LanceVectorQuery;
  bypassVectorIndex(): LanceVectorQuery;
  nprobes(nprobes: number): LanceVectorQuery;
  ef(ef: number): LanceVectorQuery;
  refineFactor(factor: number): LanceVectorQuery;
  toArray(): Promise<LanceRow[]>;
}
interface LanceMergeInsert {
  whenMatchedUpdateAll(): LanceMergeInsert;
  whenNotMatchedInsertAll(): LanceMergeInsert;
  execute(data: unknown): Promise<{ numInsertedRows: number; numUpdatedRows: number }>;
}
interface LanceTable {
  mergeInsert(on: string): LanceMergeInsert;
  delete(predicate: string): Promise<{ numDeletedRows: number }>;
  countRows(filter?: string): Promise<number>;
  vectorSearch(vector: Float32Array): LanceVectorQuery;
  query(): LancePlainQuery;
  createIndex(column: string, options: { config: unknown; replace?: boolean; name?: string }): Promise<void>;
  listIndices(): Promise<Array<{ name: string }>>;
  indexStats(name: string): Promise<{ numIndexedRows: number; numUnindexedRows: number } | undefined>;
  optimize(options: { cleanupOlderThan: Date }): Promise<unknown>;
  schema(): Promise<{ fields: Array<{ name: string; type: { listSize?: number } }> }>;
  close(): void;
}
interface LanceConnection {
  tableNames(): Promise<string[]>;
  openTable(name: string): Promise<LanceTable>;
  createEmptyTable(name: string, schema: unknown): Promise<LanceTable>;
  dropTable(name: string): Promise<void>;
  close(): void;
}
interface LanceModule {
  connect(uri: string): Promise<LanceConnection>;
  Index: {
    hnswSq(options: {
      distanceType: "cosine";
      numPartitions: number;
      m: number;
      efConstruction: number;
    }): unknown;
    btree(): unknown;
  };
}
type ArrowType = object;
interface ArrowModule {
  Schema: new (fields: unknown[]) => { fields: unknown[] };
  Field: new (name: string, type: ArrowType, nullable: boolean) => unknown;
  Int64: new () => ArrowType;
  Utf8: new () => ArrowType;
  Float32: new () => ArrowType;
  FixedSizeList: new (size: number, child: unknown) => ArrowType;
  Struct: new (fields: unknown[]) => ArrowType;
  makeData(props: Record<string, unknown>): unknown;
  RecordBatch: new (schema: unknown, data: unknown) => unknown;
  Table: new (batches: unknown[]) => unknown;
}

const TABLE = "vectors";
/** Card vectors, one row per agent: read by agent (an exact scan under an `agent IN` filter), never indexed. */
const CARDS = "cards";
const VECTOR_INDEX = "vector_idx";

/** The two packages, or a StorageError that says how to install them. */
async function importLance(): Promise<{ lance: LanceModule; arrow: ArrowModule }> {
  // Variable specifiers: the packages are optional and loaded only when this store is configured.
  const lanceName = "@lancedb/lancedb";
  const arrowName = "apache-arrow";
  // Index statistics without the IVF centroids (LanceDB warns on every call until this is chosen).
  process.env.LANCE_INCLUDE_VECTOR_CENTROIDS ??= "false";
  try {
    const lance = (await import(lanceName)) as LanceModule;
    // LanceDB checks its input with `instanceof` against the apache-arrow it requires (the CommonJS
    // build); an import() would load the ES build, a second copy whose tables it would not accept.
    const require = createRequire(import.meta.url);
    const arrow = createRequire(require.resolve(lanceName))(arrowName) as ArrowModule;
    return { lance, arrow };
  } catch (err) {
    throw new StorageError(
      "registry.vectorStore 'lancedb' needs the optional packages @lancedb/lancedb 0.31.0 and apache-arrow 18.1.0: " +
        "install them (npm install @lancedb/lancedb@0.31.0 apache-arrow@18.1.0) or use the default vector store 'local'",
      "VECTOR_STORE_UNAVAILABLE",
      { cause: err },
    );
  }
}

/** A SQL string literal: LanceDB's filter parser takes a quote doubled as one quote, and nothing else is special. */
function sqlString(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

function idList(ids: Iterable<number>): string {
  const parts: string[] = [];
  for (const id of ids) {
    if (!Number.isSafeInteger(id)) throw new Error(`vector id ${id} is not an integer`);
    parts.push(String(id));
  }
  return parts.join(",");
}

export interface LanceDbVectorStoreOptions {
  /** Folder of the LanceDB database (the registry uses `<data>/registry-lancedb`); ":memory:" keeps nothing. */
  dataDir: string;
  /** Build the approximate (IVF_HNSW_SQ) index once this many vectors are stored; below it, search is exact. */
  annThreshold?: number;
  /** HNSW graph degree and build/search breadth. */
  hnsw?: { m?: number; efConstruction?: number; efSearch?: number };
  /**
   * The index's candidates fetched per hit and rescored with the stored vectors. Its 8-bit (SQ)
   * distances blur near-duplicates: at 1 recall@10 was 0.84 on the registry bench's vectors, at 5 0.99.
   */
  refineFactor?: number;
  /** Vectors per IVF partition when the index is trained (each partition is one HNSW graph). */
  partitionSize?: number;
  /** A filtered query on at most this many agents is an exact scan of their vectors. */
  exactFilterAgents?: number;
  /** Compact and index new rows after this many writes even while few rows wait. */
  optimizeEveryWrites?: number;
  logger?: Logger;
}

/**
 * A vector store over LanceDB: vectors and their agents in one Lance table in
 * the data dir, filters applied inside LanceDB (a prefilter on the `agent`
 * column), exact search below `annThreshold` and an IVF_HNSW_SQ index built in
 * the background past it. Rows not yet in the index are scanned exactly by
 * LanceDB, so an upsert is searchable at once; background optimization folds
 * them into the index and compacts the table.
 */
export class LanceDbVectorStore implements VectorStore {
  private readonly lance: LanceModule;
  private readonly arrow: ArrowModule;
  private readonly db: LanceConnection;
  private readonly threshold: number;
  private readonly m: number;
  private readonly efConstruction: number;
  private readonly efSearch: number;
  private readonly refineFactor: number;
  private readonly partitionSize: number;
  private readonly exactFilterAgents: number;
  private readonly optimizeEveryWrites: number;
  private readonly logger: Logger;
  private table?: LanceTable;
  private cards?: LanceTable;
  private cardSchema?: { fields: unknown[] };
  private cardWritesSinceOptimize = 0;
  private dimensions?: number;
  private schema?: { fields: unknown[] };
  private rows = 0;
  private indexed = 0;
  /** Partitions of the current index (0: none), and the rows it was trained on. */
  private partitions = 0;
  private trainedRows = 0;
  private writesSinceOptimize = 0;
  /** Writes, deletes, clear and optimize run one at a time (Lance rejects a compaction racing a write). */
  private writes: Promise<unknown> = Promise.resolve();
  private maintaining?: Promise<void>;
  private closed = false;

  private constructor(
    lance: LanceModule,
    arrow: ArrowModule,
    db: LanceConnection,
    options: LanceDbVectorStoreOptions,
  ) {
    this.lance = lance;
    this.arrow = arrow;
    this.db = db;
    this.threshold = options.annThreshold ?? RegistryDefaults.annThreshold;
    this.m = options.hnsw?.m ?? 16;
    this.efConstruction = options.hnsw?.efConstruction ?? 100;
    // Wider than the default store's 64: the 8-bit distances need more candidates for the same recall.
    this.efSearch = options.hnsw?.efSearch ?? 128;
    this.refineFactor = options.refineFactor ?? 5;
    this.partitionSize = options.partitionSize ?? 250_000;
    this.exactFilterAgents = options.exactFilterAgents ?? 256;
    this.optimizeEveryWrites = options.optimizeEveryWrites ?? 64;
    this.logger = options.logger ?? silentLogger;
  }

  /** Loads LanceDB (a clear error when it is not installed) and opens or creates the store in `dataDir`. */
  static async open(options: LanceDbVectorStoreOptions): Promise<LanceDbVectorStore> {
    const { lance, arrow } = await importLance();
    const memory = options.dataDir === ":memory:";
    let db: LanceConnection;
    try {
      if (!memory) mkdirSync(options.dataDir, { recursive: true });
      db = await lance.connect(memory ? "memory://" : options.dataDir);
    } catch (err) {
      throw StorageError.from(err, `cannot open the LanceDB vector store in ${options.dataDir}`);
    }
    const store = new LanceDbVectorStore(lance, arrow, db, options);
    try {
      await store.load();
    } catch (err) {
      db.close();
      throw StorageError.from(err, `cannot read the LanceDB vector store in ${options.dataDir}`);
    }
    return store;
  }

  private async load(): Promise<void> {
    const names = await this.db.tableNames();
    if (names.includes(CARDS)) {
      const cards = await this.db.openTable(CARDS);
      const vector = (await cards.schema()).fields.find((f) => f.name === "vector");
      if (!vector?.type.listSize) throw new Error("its cards table has no vector column");
      this.cards = cards;
      this.useDimensions(vector.type.listSize);
    }
    if (!names.includes(TABLE)) return;
    const table = await this.db.openTable(TABLE);
    const vector = (await table.schema()).fields.find((f) => f.name === "vector");
    if (!vector?.type.listSize) throw new Error("its table has no vector column");
    this.table = table;
    this.useDimensions(vector.type.listSize);
    this.rows = await table.countRows();
    if ((await table.listIndices()).some((i) => i.name === VECTOR_INDEX)) {
      this.partitions = Math.max(1, Math.ceil(this.rows / this.partitionSize));
      this.trainedRows = this.rows;
      await this.refreshIndexStats();
    }
    this.scheduleMaintenance();
  }

  private useDimensions(dims: number): void {
    const a = this.arrow;
    this.dimensions = dims;
    this.schema = new a.Schema([
      new a.Field("id", new a.Int64(), false),
      new a.Field("agent", new a.Utf8(), false),
      new a.Field("vector", new a.FixedSizeList(dims, new a.Field("item", new a.Float32(), true)), false),
    ]);
    this.cardSchema = new a.Schema([
      new a.Field("agent", new a.Utf8(), false),
      new a.Field("vector", new a.FixedSizeList(dims, new a.Field("item", new a.Float32(), true)), false),
    ]);
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.writes.then(work, work);
    this.writes = run.catch(() => {});
    return run;
  }

  /** One Arrow table of the items, built column by column (no per-row objects). */
  private arrowTable(items: VectorItem[]): unknown {
    const fields = this.schema!.fields as Array<{ type: ArrowType }>;
    const ids = BigInt64Array.from(items, (item) => BigInt(item.id));
    const idColumn = this.arrow.makeData({
      type: fields[0].type,
      length: items.length,
      nullCount: 0,
      data: ids,
    });
    return this.arrowBatch(this.schema, items.length, [
      idColumn,
      this.agentColumn(items, fields[1].type),
      this.vectorColumn(items, fields[2].type),
    ]);
  }

  /** One Arrow table of card items (agent, vector). */
  private arrowCards(items: CardItem[]): unknown {
    const fields = this.cardSchema!.fields as Array<{ type: ArrowType }>;
    return this.arrowBatch(this.cardSchema, items.length, [
      this.agentColumn(items, fields[0].type),
      this.vectorColumn(items, fields[1].type),
    ]);
  }

  /** The items' agent names as one UTF-8 column. */
  private agentColumn(items: readonly { agent: string }[], type: ArrowType): unknown {
    const encoder = new TextEncoder();
    const names = items.map((item) => encoder.encode(item.agent));
    const offsets = new Int32Array(items.length + 1);
    const bytes = new Uint8Array(names.reduce((sum, b) => sum + b.length, 0));
    for (let i = 0; i < names.length; i++) {
      bytes.set(names[i], offsets[i]);
      offsets[i + 1] = offsets[i] + names[i].length;
    }
    return this.arrow.makeData({
      type,
      length: items.length,
      nullCount: 0,
      valueOffsets: offsets,
      data: bytes,
    });
  }

  /** The items' vectors as one fixed-size-list column over a single Float32 buffer. */
  private vectorColumn(items: readonly { vector: Float32Array }[], type: ArrowType): unknown {
    const a = this.arrow;
    const dims = this.dimensions!;
    const n = items.length;
    const values = new Float32Array(n * dims);
    for (let i = 0; i < n; i++) values.set(items[i].vector, i * dims);
    const child = a.makeData({ type: new a.Float32(), length: n * dims, nullCount: 0, data: values });
    return a.makeData({ type, length: n, nullCount: 0, child });
  }

  /** A table of one record batch of `length` rows with these columns, in the schema's order. */
  private arrowBatch(
    schema: { fields: unknown[] } | undefined,
    length: number,
    children: unknown[],
  ): unknown {
    const a = this.arrow;
    const struct = a.makeData({ type: new a.Struct(schema!.fields), length, nullCount: 0, children });
    return new a.Table([new a.RecordBatch(schema, struct)]);
  }

  async upsertCards(items: CardItem[]): Promise<void> {
    if (items.length === 0) return;
    await this.serial(async () => {
      if (this.dimensions === undefined) this.useDimensions(items[0].vector.length);
      checkVectorLengths(items, this.dimensions, "card vector");
      const unique = [...new Map(items.map((item) => [item.agent, item])).values()];
      try {
        this.cards ??= await this.db.createEmptyTable(CARDS, this.cardSchema);
        await this.cards
          .mergeInsert("agent")
          .whenMatchedUpdateAll()
          .whenNotMatchedInsertAll()
          .execute(this.arrowCards(unique));
      } catch (err) {
        throw StorageError.from(err, "card vector write failed");
      }
      // Each write adds a fragment, and a read scans them all: compact now and then.
      if (++this.cardWritesSinceOptimize >= this.optimizeEveryWrites) {
        this.cardWritesSinceOptimize = 0;
        await this.cards.optimize({ cleanupOlderThan: new Date(Date.now() - 60_000) });
      }
    });
  }

  async cardScores(vector: Float32Array, agents: readonly string[]): Promise<Map<string, number>> {
    const cards = this.cards;
    const scores = new Map<string, number>();
    if (!cards || agents.length === 0) return scores;
    try {
      const rows = await cards
        .vectorSearch(vector)
        .distanceType("cosine")
        .where(`agent IN (${agents.map(sqlString).join(",")})`)
        .select(["agent", "_distance"])
        .limit(agents.length)
        .bypassVectorIndex()
        .toArray();
      for (const row of rows) scores.set(row.agent, 1 - row._distance);
    } catch (err) {
      throw StorageError.from(err, "card vector read failed");
    }
    return scores;
  }

  async deleteCards(agents: readonly string[]): Promise<void> {
    if (agents.length === 0) return;
    await this.serial(async () => {
      if (!this.cards) return;
      try {
        await this.cards.delete(`agent IN (${agents.map(sqlString).join(",")})`);
      } catch (err) {
        throw StorageError.from(err, "card vector delete failed");
      }
    });
  }

  async cardAgents(): Promise<Set<string>> {
    if (!this.cards) return new Set();
    const rows = await this.cards.query().select(["agent"]).toArray();
    return new Set(rows.map((row) => row.agent));
  }

  async upsert(items: VectorItem[]): Promise<void> {
    if (items.length === 0) return;
    await this.serial(async () => {
      if (this.dimensions === undefined) this.useDimensions(items[0].vector.length);
      checkVectorLengths(items, this.dimensions, "vector");
      for (const item of items) {
        if (!Number.isSafeInteger(item.id)) throw new Error(`vector id ${item.id} is not an integer`);
      }
      // One item per id: the last one wins, as a sequence of upserts would have it.
      const unique = [...new Map(items.map((item) => [item.id, item])).values()];
      try {
        this.table ??= await this.db.createEmptyTable(TABLE, this.schema);
        const result = await this.table
          .mergeInsert("id")
          .whenMatchedUpdateAll()
          .whenNotMatchedInsertAll()
          .execute(this.arrowTable(unique));
        this.rows += result.numInsertedRows;
        // A replaced row is rewritten, so it leaves the index until the next optimize.
        if (this.partitions > 0) this.indexed = Math.max(0, this.indexed - result.numUpdatedRows);
      } catch (err) {
        throw StorageError.from(err, "vector write failed");
      }
      this.writesSinceOptimize++;
    });
    this.scheduleMaintenance();
  }

  async query(vector: Float32Array, filter: VectorFilter, limit: number): Promise<VectorHit[]> {
    const table = this.table;
    if (!table || limit <= 0 || filter.agents?.size === 0) return [];
    if (vector.length !== this.dimensions) {
      throw new Error(`query vector of length ${vector.length} for a store of length ${this.dimensions}`);
    }
    const where = filter.agents ? `agent IN (${[...filter.agents].map(sqlString).join(",")})` : undefined;
    const search = (exact: boolean) => {
      let q = table
        .vectorSearch(vector)
        .distanceType("cosine")
        .select(["id", "agent", "_distance"])
        .limit(limit);
      if (where) q = q.where(where);
      if (exact) return q.bypassVectorIndex();
      // Rescoring the index's quantized candidates with the stored vectors also makes the scores exact.
      return q
        .nprobes(this.partitions)
        .ef(Math.max(this.efSearch, limit * this.refineFactor)) // LanceDB asks for ef >= the candidates fetched
        .refineFactor(this.refineFactor);
    };
    // Cosine distance is 1 - the inner product for unit vectors: the default store's score. (The
    // "dot" metric would be the same, but LanceDB 0.31's HNSW under it finds 0.01 of the true
    // neighbours of clustered data where "cosine" finds 0.94.)
    const toHits = (rows: LanceRow[]) =>
      rows.map((row) => ({ id: Number(row.id), agent: row.agent, score: 1 - row._distance }));
    try {
      const approximate =
        this.partitions > 0 && (!filter.agents || filter.agents.size > this.exactFilterAgents);
      if (!approximate) return toHits(await search(true).toArray());
      const hits = await search(false).toArray();
      // A graph search under a narrow filter can stop short: then the filtered rows are few, so scan them.
      if (where && hits.length < limit) return toHits(await search(true).toArray());
      return toHits(hits);
    } catch (err) {
      throw StorageError.from(err, "vector search failed");
    }
  }

  async delete(selector: VectorSelector): Promise<number> {
    const clauses: string[] = [];
    const ids = idList(selector.ids ?? []);
    if (ids) clauses.push(`id IN (${ids})`);
    const agents = [...(selector.agents ?? [])];
    if (agents.length > 0) clauses.push(`agent IN (${agents.map(sqlString).join(",")})`);
    if (clauses.length === 0) return 0;
    const removed = await this.serial(async () => {
      if (!this.table) return 0;
      try {
        const { numDeletedRows } = await this.table.delete(clauses.join(" OR "));
        this.rows -= numDeletedRows;
        this.writesSinceOptimize++;
        return numDeletedRows;
      } catch (err) {
        throw StorageError.from(err, "vector delete failed");
      }
    });
    this.scheduleMaintenance();
    return removed;
  }

  async count(): Promise<number> {
    return this.rows;
  }

  async clear(): Promise<void> {
    await this.indexIdle();
    await this.serial(async () => {
      if (this.table) {
        this.table.close();
        this.table = undefined;
        await this.db.dropTable(TABLE);
      }
      if (this.cards) {
        this.cards.close();
        this.cards = undefined;
        await this.db.dropTable(CARDS);
      }
      this.dimensions = undefined;
      this.schema = undefined;
      this.cardSchema = undefined;
      this.rows = 0;
      this.indexed = 0;
      this.partitions = 0;
      this.trainedRows = 0;
      this.writesSinceOptimize = 0;
    });
  }

  /** Vectors in the approximate index, vectors scanned exactly until they enter it, and whether it is being built. */
  status(): VectorIndexStatus {
    const indexed = Math.min(this.indexed, this.rows);
    return { indexed, pending: this.rows - indexed, building: this.maintaining !== undefined };
  }

  /** Resolves once background index work is done (every row indexed past the threshold). */
  async indexIdle(): Promise<void> {
    while (this.maintaining) await this.maintaining;
  }

  private scheduleMaintenance(): void {
    if (this.maintaining || this.closed || !this.table) return;
    let work: (() => Promise<void>) | undefined;
    if (this.partitions === 0) {
      if (this.rows >= this.threshold) work = () => this.buildIndex();
      else if (this.writesSinceOptimize >= this.optimizeEveryWrites)
        work = () => this.serial(() => this.optimize());
    } else if (this.rows > this.trainedRows * 4) {
      work = () => this.buildIndex(); // grown past what the partitions were trained for: retrain
    } else if (this.indexed < this.rows || this.writesSinceOptimize >= this.optimizeEveryWrites) {
      work = () => this.serial(() => this.optimize());
    }
    if (!work) return;
    let failed = false;
    this.maintaining = work()
      .catch((err) => {
        failed = true;
        this.logger.warn(
          { err },
          "LanceDB vector store: background index work failed; it is retried after the next write",
        );
      })
      .finally(() => {
        this.maintaining = undefined;
        if (!failed) this.scheduleMaintenance();
      });
  }

  /** Trains the IVF_HNSW_SQ index over the rows there are now; writes go on meanwhile. */
  private async buildIndex(): Promise<void> {
    const table = this.table!;
    const rows = this.rows;
    const partitions = Math.max(1, Math.ceil(rows / this.partitionSize));
    const started = performance.now();
    this.logger.info({ vectors: rows, partitions }, "building the LanceDB vector index in the background");
    await table.createIndex("vector", {
      name: VECTOR_INDEX,
      replace: true,
      config: this.lance.Index.hnswSq({
        distanceType: "cosine",
        numPartitions: partitions,
        m: this.m,
        efConstruction: this.efConstruction,
      }),
    });
    // Scalar indexes for the agent prefilter, deletes by agent and upserts matched on id.
    await table.createIndex("agent", { config: this.lance.Index.btree(), replace: true });
    await table.createIndex("id", { config: this.lance.Index.btree(), replace: true });
    if (this.table !== table) return; // cleared meanwhile
    this.partitions = partitions;
    this.trainedRows = rows;
    await this.refreshIndexStats();
    this.logger.info(
      { vectors: this.indexed, ms: Math.round(performance.now() - started) },
      "LanceDB vector index built",
    );
  }

  /** Compacts small fragments, adds new rows to the indexes and drops old table versions. */
  private async optimize(): Promise<void> {
    const table = this.table;
    if (!table || this.closed) return;
    this.writesSinceOptimize = 0;
    // Versions older than a minute: no query of this process still reads them.
    await table.optimize({ cleanupOlderThan: new Date(Date.now() - 60_000) });
    if (this.table === table) await this.refreshIndexStats();
  }

  private async refreshIndexStats(): Promise<void> {
    const stats = await this.table?.indexStats(VECTOR_INDEX);
    if (stats) this.indexed = stats.numIndexedRows;
  }

  /** Waits for background index work, then closes the table and the database. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.indexIdle();
    await this.writes;
    this.table?.close();
    this.table = undefined;
    this.cards?.close();
    this.cards = undefined;
    this.db.close();
  }
}
