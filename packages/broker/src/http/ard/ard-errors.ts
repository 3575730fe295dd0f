import type { FastifyInstance } from "fastify";
import { ApiError } from "../rest/api-error.js";
import type { ErrorFormat } from "../rest/rest-router.js";
import { ArdErrorBody } from "./ard-schemas.js";

/** Where the ARD REST API lives on the broker's HTTP port (the `application/ai-registry+json` entry's url). */
export const ARD_API_PATH = "/api/v1/ard";

/** ARD's error codes (Appendix B) by HTTP status; the statuses it does not name keep a code of the same style. */
const ARD_CODES: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  429: "RATE_LIMIT_EXCEEDED",
  501: "UNIMPLEMENTED",
  503: "UNAVAILABLE",
};

/** ARD's `{errorCode, message}` for a status and a message. */
export function ardErrorBody(status: number, message: string): { errorCode: string; message: string } {
  return { errorCode: ARD_CODES[status] ?? "INTERNAL_ERROR", message };
}

/** The router's error format for ARD routes. */
export const ARD_ERRORS: ErrorFormat = {
  schema: ArdErrorBody,
  body: (failure: ApiError) => ardErrorBody(failure.status, failure.message),
};

export function invalidArgument(message: string): ApiError {
  return new ApiError(400, "INVALID_ARGUMENT", message);
}

export function notFound(message: string): ApiError {
  return new ApiError(404, "NOT_FOUND", message);
}

/** Whether a path is ARD's: the manifest or the ARD API. */
export function isArdPath(path: string): boolean {
  return (
    path.startsWith(`${ARD_API_PATH}/`) ||
    path === "/.well-known/ard.json" ||
    path === "/.well-known/ai-catalog.json"
  );
}

/**
 * The HTTP server's own refusals (401, 403, 429 of its credentials check, 405 of the router,
 * before any route runs) in ARD's envelope on ARD's paths, so an ARD client reads them all alike.
 */
export function ardRefusals(app: FastifyInstance): void {
  app.addHook("onSend", async (request, reply, payload) => {
    if (reply.statusCode < 400 || typeof payload !== "string" || !isArdPath(request.url.split("?")[0]))
      return payload;
    let body: unknown;
    try {
      body = JSON.parse(payload);
    } catch {
      return payload;
    }
    const { error } = body as { error?: unknown; errorCode?: unknown };
    if (typeof error !== "string" || (body as { errorCode?: unknown }).errorCode !== undefined)
      return payload;
    return JSON.stringify(ardErrorBody(reply.statusCode, error));
  });
}
