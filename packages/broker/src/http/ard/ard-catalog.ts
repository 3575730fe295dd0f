import { Defaults, Subjects } from "@mq9/protocol";
import type { Principal } from "../../auth/principal.js";
import type { Mq9Service } from "../../service/mq9-service.js";
import { callMq9 } from "../rest/mq9-call.js";
import { type CatalogEntry, catalogEntryOf, type EntryContext, serverSegment } from "./ard-entry.js";

type Json = Record<string, unknown>;

/** A DISCOVER page's size while the catalog reads every match (DISCOVER's own maximum). */
const DISCOVER_PAGE = 1000;
/** ARD lists agents and MCP servers alike; DISCOVER answers agents alone unless asked. */
const EVERY_KIND = ["agent", "mcp-server"];
/** Most registrations one search, listing or facet count reads. */
export const MAX_MATCHES = 10_000;

/** A catalog entry with the relevance a search gave it (0..100). */
export interface ScoredEntry {
  entry: CatalogEntry;
  score: number;
}

/**
 * The registry as ARD catalog entries. Every read is a DISCOVER through the broker's own service,
 * as the caller: search ranks with DISCOVER's machinery (hybrid, calibrated, the same relevance
 * floor), and sees what DISCOVER lets that caller see, so the two never disagree.
 */
export class ArdCatalog {
  constructor(
    private readonly service: Mq9Service,
    /** The relevance floor (calibrated 0..1) of search and explore: one cutoff for both (§7.3). */
    private readonly minScore: number = Defaults.intentMinScore,
  ) {}

  /** Every live registration, agents and MCP servers, in name order. */
  async all(context: EntryContext, principal?: Principal): Promise<CatalogEntry[]> {
    const entries = await this.discover({ include_status: true, kind: EVERY_KIND }, principal);
    return entries.map((entry) => catalogEntryOf(entry, context));
  }

  /** One MCP server by its identifier's name segment (serverSegment of its URL), or undefined. */
  async server(
    segment: string,
    context: EntryContext,
    principal?: Principal,
  ): Promise<CatalogEntry | undefined> {
    const entries = await this.discover({ include_status: true, kind: "mcp-server" }, principal);
    const found = entries.find((entry) => serverSegment(String(entry.url)) === segment);
    return found === undefined ? undefined : catalogEntryOf(found, context);
  }

  /** One registration by mailbox, or undefined. */
  async one(
    mailbox: string,
    context: EntryContext,
    principal?: Principal,
  ): Promise<CatalogEntry | undefined> {
    const [entry] = await this.discover({ mailbox, include_status: true }, principal);
    return entry === undefined ? undefined : catalogEntryOf(entry, context);
  }

  /**
   * The registrations that match `text` at or above the relevance floor, best first, each with
   * a score 0..100: the calibrated score as a percentage; where no embedder runs (full text, no
   * comparable score), a score that falls with the rank.
   */
  async search(text: string, context: EntryContext, principal?: Principal): Promise<ScoredEntry[]> {
    const entries = await this.discover(
      {
        semantic: text,
        text,
        min_score: this.minScore,
        include_score: true,
        include_status: true,
        kind: EVERY_KIND,
      },
      principal,
    );
    return entries.map((entry, rank) => ({
      entry: catalogEntryOf(entry, context),
      score:
        typeof entry._score === "number"
          ? Math.round(100 * Math.min(1, Math.max(0, entry._score)))
          : Math.max(1, Math.round(100 * (1 - rank / entries.length))),
    }));
  }

  private async discover(body: Json, principal: Principal | undefined): Promise<Json[]> {
    const entries: Json[] = [];
    let offset = 0;
    for (;;) {
      const reply = await callMq9(
        this.service,
        Subjects.agentDiscover,
        { ...body, limit: DISCOVER_PAGE, offset },
        { principal },
      );
      entries.push(...(reply.agents as Json[]));
      if (reply.has_more !== true || typeof reply.next_offset !== "number" || entries.length >= MAX_MATCHES) {
        return entries.slice(0, MAX_MATCHES);
      }
      offset = reply.next_offset;
    }
  }
}
