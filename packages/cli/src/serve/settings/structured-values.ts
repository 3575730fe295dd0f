// The config file's structured settings: users with permissions, and webhooks.
import { WEBHOOK_EVENTS } from "@mq9/orchestrator/defaults";
import { z } from "zod";

const WHOLE_ABOVE_ZERO = "must be a whole number above 0";
const positiveInt = z.number().int({ error: WHOLE_ABOVE_ZERO }).positive({ error: WHOLE_ABOVE_ZERO });

export const EMPTY_PASSWORD =
  "an empty password is refused: set a password (or a bcrypt hash of one), or use a token";
export const EMPTY_TOKEN = "an empty token is refused";

/** nats-server's allow/deny lists: a bare list is an allow list. */
const subjectRules = z.union([
  z.array(z.string().min(1)),
  z
    .object({ allow: z.array(z.string().min(1)).optional(), deny: z.array(z.string().min(1)).optional() })
    .strict(),
]);
const allowResponses = z.union([
  z.boolean(),
  z.object({ max: positiveInt.optional(), expiresMs: z.number().int().min(0).optional() }).strict(),
]);

/** A user's permissions: a preset, or nats-server's publish/subscribe rules. */
export const permissions = z.union([
  z.enum(["all", "agent"]),
  z
    .object({
      publish: subjectRules.optional(),
      subscribe: subjectRules.optional(),
      allowResponses: allowResponses.optional(),
      /** nats-server's spelling, accepted as well. */
      allow_responses: allowResponses.optional(),
    })
    .strict()
    .transform(({ allow_responses, ...rest }) => ({
      ...rest,
      allowResponses: rest.allowResponses ?? allow_responses,
    })),
]);

const userEntry = z
  .object({
    user: z.string().min(1).optional(),
    password: z.string().min(1, EMPTY_PASSWORD).optional(),
    token: z.string().min(1, EMPTY_TOKEN).optional(),
    nkey: z.string().min(1).optional(),
    admin: z.boolean().optional(),
    permissions: permissions.optional(),
    /** Mail-address patterns this user may read and manage like their owner. */
    mailboxes: z.array(z.string().min(1)).optional(),
  })
  .strict();

/** Several users, each with a password, token or nkey and permissions (docs/security.md). */
export const users = z.array(userEntry);

/** The orchestrator's webhooks: a URL, the events it wants, and how hard to try. */
export const webhooks = z.array(
  z
    .object({
      url: z.url(),
      events: z.array(z.enum(WEBHOOK_EVENTS)).optional(),
      /** Shared secret: bodies are signed with HMAC-SHA256 in x-mq9-signature. */
      secret: z.string().min(1).optional(),
      maxAttempts: positiveInt.optional(),
      backoffMs: positiveInt.optional(),
    })
    .strict(),
);
