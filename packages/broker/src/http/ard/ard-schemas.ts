import { z } from "zod";
import { queryInt } from "../rest/api-schemas.js";

/** A page token as this registry gives them out: where the next page starts. */
const pageTokenSchema = z
  .string()
  .regex(
    /^o[0-9]{1,9}$/,
    "is not a page token this registry gave out (send the previous answer's pageToken)",
  );
/** ARD's identifier rule (§4.2.1). */
export const ARD_IDENTIFIER = /^urn:air:[a-zA-Z0-9.-]+(:[a-zA-Z0-9._-]+)+$/;

/** ARD's error envelope (spec Appendix B; OpenAPI `Error`). */
export const ArdErrorBody = z
  .object({
    errorCode: z
      .string()
      .describe("INVALID_ARGUMENT, UNAUTHENTICATED, NOT_FOUND, RATE_LIMIT_EXCEEDED, INTERNAL_ERROR"),
    message: z.string().describe("what was wrong and what to do"),
  })
  .meta({ id: "ArdError" });

const filterValue = z.union([z.string(), z.array(z.string())]).transform((v) => (Array.isArray(v) ? v : [v]));

const ArdQuery = z.strictObject({
  text: z.string().optional().describe("natural-language description of the need"),
  filter: z
    .record(z.string().min(1), filterValue)
    .optional()
    .describe("dot-path keys; OR within a key, AND across keys; `publisher` is the identifier's"),
});

const pageSize = z.number().int().min(1).max(100);

export const ArdSearchBody = z.strictObject({
  query: ArdQuery.extend({
    text: z
      .string()
      .regex(/\S/, "give the text the search looks for")
      .describe("natural-language description of the need"),
  }),
  federation: z.enum(["auto", "referrals", "none"]).optional().describe("default auto"),
  pageSize: pageSize.optional().describe("default 10, at most 100"),
  pageToken: pageTokenSchema.optional(),
});

export const ArdExploreBody = z.strictObject({
  query: ArdQuery.optional(),
  resultType: z.strictObject({
    facets: z
      .array(
        z.strictObject({
          field: z.string().min(1),
          limit: z.number().int().min(1).max(1000).optional().describe("default 20"),
          minCount: z.number().int().min(1).optional().describe("default 1"),
        }),
      )
      .min(1),
  }),
});

// A bare value holds no white space at all, as the listing's reader (parseListFilter) takes it.
const LIST_VALUE = `(?:'[^']*'|"[^"]*"|[^\\s'"]+)`;
const LIST_DATE = `\\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\\d|3[01])(?:T(?:[01]\\d|2[0-3]):[0-5]\\d(?::[0-5]\\d(?:\\.\\d{1,3})?)?(?:Z|[+-](?:[01]\\d|2[0-3]):[0-5]\\d))?`;
const LIST_CLAUSE = `(?:(?:type|publisherId|displayName|tags|capabilities|version|identifier) *[=:] *${LIST_VALUE}|updatedAfter *> *(?:'${LIST_DATE}'|"${LIST_DATE}"|${LIST_DATE}))`;
/** Appendix A's filter as the listing reads it: clauses joined by AND. */
const LIST_FILTER = new RegExp(`^(?:${LIST_CLAUSE}(?: +AND +${LIST_CLAUSE})*)?$`);

export const ArdListQuery = z.object({
  filter: z
    .string()
    .regex(
      LIST_FILTER,
      "must be clauses joined by AND: type, publisherId, displayName, tags, capabilities, version or identifier = value (a,b for either), or updatedAfter > an ISO 8601 time",
    )
    .optional()
    .describe("e.g. type = 'application/a2a-agent-card+json' AND publisherId = agent.localhost"),
  orderBy: z
    .string()
    .regex(
      /^(displayName|identifier|updatedAt|version|type)( (ASC|DESC|asc|desc))?$/,
      "must be displayName, identifier, updatedAt, version or type, optionally followed by ASC or DESC",
    )
    .optional()
    .describe("displayName, identifier, updatedAt, version or type, then ASC or DESC"),
  pageSize: queryInt(1, 100).optional().describe("default 20, at most 100"),
  pageToken: pageTokenSchema.optional(),
});

export const ArdIdentifierParams = z.object({
  identifier: z.string().regex(ARD_IDENTIFIER, "must read urn:air:<publisher domain>:<namespace>:<name>"),
});

export const CatalogEntrySchema = z.looseObject({
  identifier: z.string(),
  displayName: z.string(),
  type: z.string(),
  url: z.string().optional(),
  data: z.record(z.string(), z.unknown()).optional(),
});

export const ArdSearchResponse = z.object({
  results: z.array(
    CatalogEntrySchema.extend({ score: z.number().int().min(0).max(100), source: z.string() }),
  ),
  referrals: z.array(CatalogEntrySchema).optional(),
  pageToken: z.string().optional(),
});

export const ArdListResponse = z.object({
  items: z.array(CatalogEntrySchema),
  total: z.number().int(),
  pageToken: z.string().optional(),
});

export const ArdExploreResponse = z.object({
  resultType: z.literal("facets"),
  facets: z.record(
    z.string(),
    z.object({
      buckets: z.array(z.object({ value: z.string(), count: z.number().int() })),
      otherCount: z.number().int().optional(),
    }),
  ),
});

export const ArdManifest = z.looseObject({
  specVersion: z.string(),
  host: z.object({ displayName: z.string() }).loose(),
  entries: z.array(CatalogEntrySchema),
});

export const ArdManifestQuery = z.object({
  page: z
    .string()
    .regex(/^[1-9]\d*$/, "must be a page number from 1")
    .transform(Number)
    .optional(),
});

export const ArdImportBody = z.strictObject({
  source: z
    .string()
    .regex(
      /^(?:https?:\/\/)?[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*(?::(?:6553[0-5]|655[0-2]\d|65[0-4]\d{2}|6[0-4]\d{3}|[1-5]\d{4}|[1-9]\d{0,3}))?(?:\/[!-~]*)?$/,
      "must be a domain or an http(s) URL, e.g. agents.example.com or https://agents.example.com/catalog.json",
    )
    .describe("a domain, a site URL (its /.well-known/ard.json, then ai-catalog.json) or a manifest URL"),
  mailbox: z
    .string()
    .min(1)
    .optional()
    .describe(
      "the mailbox each A2A card is registered under; {name} is the card's name in mailbox form (needed when the manifest lists A2A cards; MCP servers are registered by URL)",
    ),
  ttl: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe("seconds without REGISTER or REPORT before each expires; 0 = never"),
});

export const ArdImportResponse = z.object({
  imported: z.array(z.object({ identifier: z.string(), name: z.string(), mailbox: z.string() })),
  servers: z
    .array(z.object({ identifier: z.string(), name: z.string(), url: z.string() }))
    .describe("the MCP servers registered, by URL"),
  skipped: z.array(z.object({ identifier: z.string(), type: z.string() })),
  from: z.string(),
});
