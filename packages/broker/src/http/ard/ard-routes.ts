import type { FastifyRequest } from "fastify";
import type { Logger } from "../../logger.js";
import type { Registry } from "../../registry.js";
import type { Mq9Service } from "../../service/mq9-service.js";
import { ApiError } from "../rest/api-error.js";
import type { RestRouter } from "../rest/rest-router.js";
import { ArdCatalog } from "./ard-catalog.js";
import { ArdTypes, type CatalogEntry, type EntryContext } from "./ard-entry.js";
import { ARD_API_PATH, ARD_ERRORS, invalidArgument, notFound } from "./ard-errors.js";
import { ArdFederation, type ArdUpstream, DEFAULT_FEDERATION_TIMEOUT_MS } from "./ard-federation.js";
import { type ArdFilter, matchesFilter, valuesAt } from "./ard-filter.js";
import { ardIdentifier, DEFAULT_ARD_PUBLISHER, parseArdIdentifier } from "./ard-identifier.js";
import { importManifest } from "./ard-import.js";
import { orderEntries, parseListFilter } from "./ard-list-filter.js";
import {
  ArdExploreBody,
  ArdExploreResponse,
  ArdIdentifierParams,
  ArdImportBody,
  ArdImportResponse,
  ArdListQuery,
  ArdListResponse,
  ArdManifest,
  ArdManifestQuery,
  ArdSearchBody,
  ArdSearchResponse,
  CatalogEntrySchema,
} from "./ard-schemas.js";

/** How the broker speaks ARD (docs/registry.md, "ARD"). */
export interface ArdOptions {
  /** The domain that anchors every identifier (`urn:air:<publisher>:…`); default agent.localhost. */
  publisher?: string;
  /** The path of an agent's card on this HTTP port (the A2A gateway's); without it cards are inline. */
  cardPath?: (mailbox: string) => string;
  /** Agents per manifest page; more go to nested pages (`?page=2`, …). Default 100. */
  manifestPageSize?: number;
  /** The relevance floor (calibrated 0..1) of search and explore; default `Defaults.intentMinScore`. */
  minScore?: number;
  /** Upstream ARD registries (their API base URLs): referrals, or queried by `federation: "auto"`. */
  upstreams?: readonly (string | ArdUpstream)[];
  /** How long `auto` waits for an upstream before answering without it; default 2000 ms. */
  federationTimeoutMs?: number;
}

const MANIFEST_PATHS = ["/.well-known/ard.json", "/.well-known/ai-catalog.json"];
const DEFAULT_MANIFEST_PAGE = 100;

type Json = Record<string, unknown>;

/** A page token: where the next page starts (its form is in the schemas, so a client may check it). */
function pageToken(offset: number): string {
  return `o${offset}`;
}

function offsetOf(token: string | undefined): number {
  return token === undefined ? 0 : Number(token.slice(1));
}

/** The registry's ARD face: the manifest at /.well-known and the REST API under /api/v1/ard. */
export function mountArdRoutes(
  router: RestRouter,
  service: Mq9Service,
  registry: Registry | undefined,
  options: ArdOptions,
  logger: Logger,
): void {
  const publisher = options.publisher ?? DEFAULT_ARD_PUBLISHER;
  const catalog = new ArdCatalog(service, options.minScore);
  const manifestPage = options.manifestPageSize ?? DEFAULT_MANIFEST_PAGE;
  const federation = new ArdFederation(
    (options.upstreams ?? []).map((upstream) =>
      typeof upstream === "string" ? { url: upstream } : upstream,
    ),
    options.federationTimeoutMs ?? DEFAULT_FEDERATION_TIMEOUT_MS,
    logger,
  );

  const contextOf = (request: FastifyRequest): EntryContext & { api: string } => {
    const origin = `${request.protocol}://${request.headers.host}`;
    return { publisher, origin, cardPath: options.cardPath, api: `${origin}${ARD_API_PATH}` };
  };
  const registryOn = () => {
    if (!registry) {
      throw new ApiError(
        503,
        "UNAVAILABLE",
        "the agent registry is turned off in this broker; start mq9 serve without turning it off to search its agents",
      );
    }
  };
  const registryEntry = (api: string): CatalogEntry => ({
    identifier: ardIdentifier(publisher, "registry", "mq9"),
    displayName: "mq9 agent registry",
    type: ArdTypes.registry,
    url: api,
    description:
      "Search this broker's agents by meaning (ARD REST API: POST /search, GET /agents, POST /explore)",
    tags: ["registry", "search"],
  });

  for (const path of MANIFEST_PATHS) {
    router.add({
      method: "GET",
      path,
      tag: "ARD",
      summary:
        "The broker's ARD capability manifest: every live registration, nested pages past manifestPageSize",
      query: ArdManifestQuery,
      responses: { 200: { description: "the manifest", schema: ArdManifest } },
      errors: [404, 503],
      errorFormat: ARD_ERRORS,
      handler: async ({ query, principal }, request) => {
        registryOn();
        const context = contextOf(request);
        const page = query.page ?? 1;
        const all = await catalog.all(context, principal);
        const pages = Math.max(1, Math.ceil(all.length / manifestPage));
        if (page > pages) throw notFound(`the manifest has ${pages} page(s); page ${page} does not exist`);
        const entries: CatalogEntry[] = page === 1 ? [registryEntry(context.api)] : [];
        entries.push(...all.slice((page - 1) * manifestPage, page * manifestPage));
        if (page < pages) {
          entries.push({
            identifier: ardIdentifier(publisher, "catalog", `page-${page + 1}`),
            displayName: `mq9 agents, page ${page + 1} of ${pages}`,
            type: ArdTypes.catalog,
            url: `${context.origin}${path}?page=${page + 1}`,
            description: "The next registrations of this broker's catalog",
          });
        }
        return {
          status: 200,
          body: {
            specVersion: "1.0",
            host: { displayName: "mq9 broker", identifier: publisher },
            entries,
          },
        };
      },
    });
  }

  router.add({
    method: "POST",
    path: `${ARD_API_PATH}/search`,
    tag: "ARD",
    summary: "ARD search: registrations ranked by meaning (DISCOVER's hybrid ranking), filtered, paged",
    body: ArdSearchBody,
    responses: { 200: { description: "the best matches first", schema: ArdSearchResponse } },
    errors: [400, 503],
    errorFormat: ARD_ERRORS,
    handler: async ({ body, principal }, request) => {
      registryOn();
      const context = contextOf(request);
      const offset = offsetOf(body.pageToken);
      const size = body.pageSize ?? 10;
      const ranked = (await catalog.search(body.query.text, context, principal)).filter(({ entry }) =>
        matchesFilter(entry as unknown as Json, body.query.filter as ArdFilter | undefined),
      );
      const local = ranked.map(({ entry, score }) => ({ ...entry, score, source: context.api }));
      const mode = body.federation ?? "auto";
      const merged =
        mode === "auto" && options.upstreams?.length ? await federation.merge(local, body.query) : local;
      const answer: Json = { results: merged.slice(offset, offset + size) };
      if (mode === "referrals") answer.referrals = federation.referrals();
      if (offset + size < merged.length) answer.pageToken = pageToken(offset + size);
      return { status: 200, body: answer };
    },
  });

  router.add({
    method: "GET",
    path: `${ARD_API_PATH}/agents`,
    tag: "ARD",
    summary: "ARD listing: every registration, filtered (Appendix A) and ordered, paged",
    query: ArdListQuery,
    responses: { 200: { description: "a page of entries", schema: ArdListResponse } },
    errors: [400, 503],
    errorFormat: ARD_ERRORS,
    handler: async ({ query, principal }, request) => {
      registryOn();
      let filter: ReturnType<typeof parseListFilter>;
      let ordered: CatalogEntry[];
      const offset = offsetOf(query.pageToken);
      const size = query.pageSize ?? 20;
      try {
        filter = parseListFilter(query.filter ?? "");
      } catch (err) {
        throw invalidArgument(`invalid filter: ${(err as Error).message}`);
      }
      const all = (await catalog.all(contextOf(request), principal)).filter((entry) =>
        filter(entry as unknown as Json),
      );
      try {
        ordered = orderEntries(all as unknown as Json[], query.orderBy) as unknown as CatalogEntry[];
      } catch (err) {
        throw invalidArgument((err as Error).message);
      }
      const answer: Json = { items: ordered.slice(offset, offset + size), total: ordered.length };
      if (offset + size < ordered.length) answer.pageToken = pageToken(offset + size);
      return { status: 200, body: answer };
    },
  });

  router.add({
    method: "GET",
    path: `${ARD_API_PATH}/agents/:identifier`,
    tag: "ARD",
    summary:
      "One registration by its ARD identifier (urn:air:<publisher>:agent:<mailbox>, or urn:air:<publisher>:mcp:<host-path> for an MCP server)",
    params: ArdIdentifierParams,
    responses: { 200: { description: "the entry", schema: CatalogEntrySchema } },
    errors: [400, 404, 503],
    errorFormat: ARD_ERRORS,
    handler: async ({ params, principal }, request) => {
      registryOn();
      const parsed = parseArdIdentifier(params.identifier);
      if ("problem" in parsed) throw invalidArgument(parsed.problem);
      const [kind, name] = parsed.segments;
      const missing = `no registration has the identifier ${params.identifier}`;
      if (
        parsed.publisher !== publisher ||
        parsed.segments.length !== 2 ||
        (kind !== "agent" && kind !== "mcp")
      ) {
        throw notFound(
          `${missing}: this registry's identifiers read urn:air:${publisher}:agent:<mailbox> or urn:air:${publisher}:mcp:<server>`,
        );
      }
      if (kind === "mcp") {
        const server = await catalog.server(name, contextOf(request), principal);
        if (!server) throw notFound(`${missing} (no live MCP server has it)`);
        return { status: 200, body: server };
      }
      const entry = await catalog.one(name, contextOf(request), principal);
      if (!entry) throw notFound(`${missing} (no live agent registered mailbox ${name})`);
      return { status: 200, body: entry };
    },
  });

  router.add({
    method: "POST",
    path: `${ARD_API_PATH}/import`,
    tag: "ARD",
    summary: "mq9 extension: register the A2A agents of a publisher's ARD manifest, all or nothing",
    body: ArdImportBody,
    responses: {
      200: { description: "what was registered and what was skipped", schema: ArdImportResponse },
    },
    errors: [400, 404, 503],
    errorFormat: ARD_ERRORS,
    handler: async ({ body, principal }) => {
      registryOn();
      return { status: 200, body: await importManifest(service, body, principal) };
    },
  });

  router.add({
    method: "POST",
    path: `${ARD_API_PATH}/explore`,
    tag: "ARD",
    summary: "ARD explore: facet counts over the registrations a query matches",
    body: ArdExploreBody,
    responses: { 200: { description: "the facets", schema: ArdExploreResponse } },
    errors: [400, 503],
    errorFormat: ARD_ERRORS,
    handler: async ({ body, principal }, request) => {
      registryOn();
      const context = contextOf(request);
      const text = body.query?.text;
      const matched = (
        text !== undefined && /\S/.test(text)
          ? (await catalog.search(text, context, principal)).map(({ entry }) => entry)
          : await catalog.all(context, principal)
      ).filter((entry) =>
        matchesFilter(entry as unknown as Json, body.query?.filter as ArdFilter | undefined),
      );
      const facets: Record<string, { buckets: { value: string; count: number }[]; otherCount?: number }> = {};
      for (const { field, limit = 20, minCount = 1 } of body.resultType.facets) {
        const counts = new Map<string, number>();
        for (const entry of matched) {
          for (const value of new Set(valuesAt(entry as unknown as Json, field))) {
            counts.set(value, (counts.get(value) ?? 0) + 1);
          }
        }
        const buckets = [...counts]
          .filter(([, count]) => count >= minCount)
          .sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1))
          .map(([value, count]) => ({ value, count }));
        const kept = buckets.slice(0, limit);
        const other = buckets.slice(limit).reduce((sum, bucket) => sum + bucket.count, 0);
        facets[field] = other > 0 ? { buckets: kept, otherCount: other } : { buckets: kept };
      }
      return { status: 200, body: { resultType: "facets", facets } };
    },
  });
}
