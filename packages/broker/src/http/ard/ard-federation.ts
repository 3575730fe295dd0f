import type { Logger } from "../../logger.js";
import { ArdTypes, type CatalogEntry } from "./ard-entry.js";
import { ardIdentifier } from "./ard-identifier.js";

/** An upstream ARD registry: the base URL of its REST API (…/search is appended). */
export interface ArdUpstream {
  url: string;
  displayName?: string;
}

/** A search result of any registry: an entry with its score and where it was indexed. */
export type SearchResult = CatalogEntry & { score: number; source: string };

type Json = Record<string, unknown>;

/** The default bound on an upstream's answer: past it, the local answer goes out without it. */
export const DEFAULT_FEDERATION_TIMEOUT_MS = 2_000;
/** Results asked of each upstream (ARD's largest page). */
const UPSTREAM_PAGE = 100;

/** The upstream registries of a search: as referrals, or queried and merged (`auto`). */
export class ArdFederation {
  constructor(
    private readonly upstreams: readonly ArdUpstream[],
    private readonly timeoutMs: number,
    private readonly logger: Logger,
  ) {
    for (const { url } of upstreams) {
      if (!/^https?:\/\/[^\s/]+(\/\S*)?$/i.test(url)) {
        throw new Error(
          `the ARD upstream '${url}' is not an http(s) URL: give the base URL of its ARD API, e.g. http://other-broker:8332/api/v1/ard`,
        );
      }
    }
  }

  /** The upstreams as registry entries, for `federation: "referrals"`. */
  referrals(): CatalogEntry[] {
    return this.upstreams.map((upstream, index) => ({
      identifier: ardIdentifier(new URL(upstream.url).hostname, "registry", `upstream-${index + 1}`),
      displayName: upstream.displayName ?? `ARD registry at ${new URL(upstream.url).host}`,
      type: ArdTypes.registry,
      url: upstream.url,
    }));
  }

  /**
   * `local` merged with every upstream's answer to the same query, re-ranked by score (a tie
   * keeps the local one first), each result's `source` kept; an identifier listed twice keeps
   * its first. An upstream that fails or is slower than the bound is left out (and logged):
   * it never holds the local answer back.
   */
  async merge(local: SearchResult[], query: Json): Promise<SearchResult[]> {
    const answers = await Promise.all(this.upstreams.map((upstream) => this.ask(upstream, query)));
    const merged = [...local, ...answers.flat()];
    const seen = new Set<string>();
    return merged
      .map((result, order) => ({ result, order }))
      .sort((a, b) => b.result.score - a.result.score || a.order - b.order)
      .map(({ result }) => result)
      .filter((result) => !seen.has(result.identifier) && seen.add(result.identifier));
  }

  private async ask(upstream: ArdUpstream, query: Json): Promise<SearchResult[]> {
    const url = `${upstream.url.replace(/\/+$/, "")}/search`;
    try {
      const response = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        // `none` upstream: a ring of registries federating with each other ends after one hop.
        body: JSON.stringify({ query, federation: "none", pageSize: UPSTREAM_PAGE }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const body = (await response.json()) as { results?: unknown };
      if (!Array.isArray(body.results)) throw new Error("its answer has no results array");
      return body.results.flatMap((item): SearchResult[] => {
        const result = item as Json;
        if (typeof result.identifier !== "string" || typeof result.score !== "number") return [];
        return [{ ...(result as unknown as SearchResult), source: String(result.source ?? upstream.url) }];
      });
    } catch (err) {
      this.logger.warn(
        { upstream: url, err: (err as Error).message },
        "ARD federation: an upstream registry did not answer in time; searching without it",
      );
      return [];
    }
  }
}
