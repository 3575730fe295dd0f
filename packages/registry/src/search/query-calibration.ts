import { dot, type Embedder } from "../embedding/embedder.js";
import { languageOf } from "./text-terms.js";

/**
 * Skill-like sentences from many fields. A query's mean similarity to them is
 * how close it sits to "any agent at all" in this model's space: raw cosines
 * of one model run high for some queries (long, generic ones, or words the
 * model barely knows) and low for others, so a fixed cosine cut means
 * different things per query. Subtracting this baseline makes scores of
 * different queries comparable (see calibrate). Few enough that they, UNREADABLE and a
 * first query fit in one batch of the threaded embedder (32 texts).
 */
const REFERENCE_SKILLS = [
  "Translate a document into another language",
  "Summarize a long report in one paragraph",
  "Check an invoice against its purchase order",
  "Calculate payroll and produce payslips",
  "Forecast tomorrow's weather for a city",
  "Book a flight and a hotel for a trip",
  "Review Python code for bugs and style",
  "Deploy a container to a Kubernetes cluster",
  "Answer questions about a company's HR policy",
  "Generate an image from a text description",
  "Transcribe a meeting recording into text",
  "Track the delivery status of a parcel",
  "Schedule a meeting when everyone is free",
  "Monitor server logs and alert on errors",
  "Write marketing copy for a product launch",
  "Recommend recipes from the ingredients at hand",
  "Explain a math problem step by step",
  "Detect fraudulent credit card transactions",
  "Convert an amount between currencies",
  "Scan a repository for leaked passwords",
  "Classify customer support tickets by topic",
  "Extract tables from scanned PDF files",
  "Find legal clauses that carry risk in a contract",
  "Query a SQL database and chart the result",
];

/** Texts a model cannot read: made-up words and bare symbols. Their vectors are what "not understood" looks like. */
const UNREADABLE = ["zxqv blorf wimple", "qqq jjj kkk", "### ??? !!!", "asdfgh jkl"];

/** Calibrated scores of a query's hits, and whether the model could read the query at all. */
export interface QueryScale {
  /** Maps a raw cosine of this query to a score in 0..1. */
  calibrate(cosine: number): number;
  /** Why the query is outside what the embedder understands; undefined when it is within. */
  notUnderstood?: string;
}

/** The share of a query's letters that are in scripts other than Latin (0..1). */
function nonLatinShare(text: string): number {
  let letters = 0;
  let other = 0;
  for (const char of text) {
    if (!/\p{L}/u.test(char)) continue;
    letters++;
    if (!/\p{Script=Latin}/u.test(char)) other++;
  }
  return letters === 0 ? 0 : other / letters;
}

/** How near a query may sit to the unreadable texts before it counts as unreadable itself. */
const UNREADABLE_SIMILARITY = 0.8;
/**
 * The same bar for a model whose unrelated texts already sit close together (E5's cosines rarely
 * fall under 0.7): a share of the way from that level to 1. It stays under UNREADABLE_SIMILARITY
 * for the models whose unrelated texts are far apart (USE-lite, MiniLM), which keep that bar.
 */
const UNREADABLE_SHARE_ABOVE_UNRELATED = 0.7;

/**
 * The mean cosine of two different REFERENCE_SKILLS, read off their centroid: |c|² is the mean of
 * all n² pairs, n of them a text with itself.
 */
function unrelatedSimilarity(centroid: Float32Array): number {
  const n = REFERENCE_SKILLS.length;
  return (n * dot(centroid, centroid) - 1) / (n - 1);
}

/** What calibration needs of a model: the mean of the reference vectors, and the unreadable texts' vectors. */
export interface CalibrationVectors {
  /** The mean of REFERENCE_SKILLS' vectors: a query's dot product with it is its mean similarity to them. */
  centroid: Float32Array;
  unreadable: Float32Array[];
}

/** Embeds the reference and unreadable texts with `embedder` (as queries: see QueryCalibration.load). */
export async function computeCalibration(embedder: Embedder): Promise<CalibrationVectors> {
  const vectors = await embedder.embed([...REFERENCE_SKILLS, ...UNREADABLE], { purpose: "query" });
  const centroid = new Float32Array(vectors[0].length);
  for (const v of vectors.slice(0, REFERENCE_SKILLS.length)) {
    for (let i = 0; i < v.length; i++) centroid[i] += v[i] / REFERENCE_SKILLS.length;
  }
  return { centroid, unreadable: vectors.slice(REFERENCE_SKILLS.length) };
}

/**
 * Per-query score calibration for one embedder: the baseline is the query's
 * mean similarity to REFERENCE_SKILLS; a hit's score is how far its cosine
 * rises above that baseline, as a share of the way to 1. Unrelated agents then
 * sit near 0 whatever the query, and a cut such as 0.2 means the same for
 * every query.
 */
export class QueryCalibration {
  private vectors?: Promise<CalibrationVectors>;
  /** Scales of repeated queries: the registry hands back the same vector object for the same text. */
  private readonly scales = new WeakMap<Float32Array, { text: string; scale: QueryScale }>();

  constructor(
    private readonly embedder: Embedder,
    /** The embedder reads English only (the default one): other languages are answered by full-text. */
    private readonly englishOnly: boolean,
    /** The vectors for this embedder's model when known ahead (the default model's ship with the broker). */
    shipped?: CalibrationVectors,
  ) {
    if (shipped) this.vectors = Promise.resolve(shipped);
  }

  /** The reference vectors, embedded once (again after a failure) unless they were shipped. */
  load(): Promise<CalibrationVectors> {
    // As queries: a threaded embedder serves those ahead of the skills waiting to be embedded,
    // and the first semantic query must not wait behind that backlog for its baseline.
    this.vectors ??= computeCalibration(this.embedder);
    this.vectors.catch(() => {
      this.vectors = undefined;
    });
    return this.vectors;
  }

  /** The scale of one query (its text and its vector). */
  async scale(text: string, query: Float32Array): Promise<QueryScale> {
    const kept = this.scales.get(query);
    if (kept?.text === text) return kept.scale;
    const scale = await this.measure(text, query);
    this.scales.set(query, { text, scale });
    return scale;
  }

  private async measure(text: string, query: Float32Array): Promise<QueryScale> {
    const { centroid, unreadable } = await this.load();
    const baseline = Math.min(0.95, dot(query, centroid));
    const calibrate = (cosine: number) => Math.max(0, Math.min(1, (cosine - baseline) / (1 - baseline)));
    const unrelated = unrelatedSimilarity(centroid);
    const unreadableBar = Math.max(
      UNREADABLE_SIMILARITY,
      unrelated + (1 - unrelated) * UNREADABLE_SHARE_ABOVE_UNRELATED,
    );
    let notUnderstood: string | undefined;
    if (this.englishOnly && nonLatinShare(text) > 0.5) {
      notUnderstood = "the embedder reads English only and the query is in another script";
    } else if (this.englishOnly && languageOf(text) === "de") {
      notUnderstood = "the embedder reads English only and the query reads as German";
    } else if (Math.max(...unreadable.map((u) => dot(query, u))) >= unreadableBar) {
      notUnderstood = "the embedder recognises no word of the query";
    }
    return { calibrate, notUnderstood };
  }
}
