import { z } from "zod";

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
  pageToken: z.string().optional(),
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

export const ArdListQuery = z.object({
  filter: z
    .string()
    .optional()
    .describe("e.g. type = 'application/a2a-agent-card+json' AND publisherId = agent.localhost"),
  orderBy: z
    .string()
    .optional()
    .describe("displayName, identifier, updatedAt, version or type, then ASC or DESC"),
  pageSize: z
    .string()
    .regex(/^\d+$/, "must be a whole number")
    .transform(Number)
    .pipe(pageSize)
    .optional()
    .describe("default 20, at most 100"),
  pageToken: z.string().optional(),
});

export const ArdIdentifierParams = z.object({ identifier: z.string().min(1) });

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
