import { Subjects } from "@mq9/protocol";
import type { Principal } from "../../auth/principal.js";
import type { Mq9Service } from "../../service/mq9-service.js";
import { ApiError } from "../rest/api-error.js";
import { callMq9 } from "../rest/mq9-call.js";
import { invalidArgument } from "./ard-errors.js";
import {
  ArdManifestError,
  fetchJsonDocument,
  isManifest,
  MANIFEST_PATHS,
  mailboxFor,
  readManifest,
  serverRegistration,
} from "./ard-manifest.js";
import { lookupRequest, type RegistrationCalls, registerAll } from "./register-all.js";

/** How long each document of an import (the manifest, a nested catalog, a card) may take to arrive. */
const FETCH_TIMEOUT_MS = 10_000;

/** What an import registered and what it left aside. */
export interface ImportOutcome {
  imported: { identifier: string; name: string; mailbox: string }[];
  /** MCP servers, registered by URL. */
  servers: { identifier: string; name: string; url: string }[];
  skipped: { identifier: string; type: string }[];
  from: string;
}

/** No manifest at the source: ARD's NOT_FOUND (a registry or catalog that does not exist). */
function unreachable(message: string): ApiError {
  return new ApiError(404, "NOT_FOUND", message);
}

const fetchJson = (url: string) => fetchJsonDocument(url, FETCH_TIMEOUT_MS);

/** A publisher's manifest: a .json URL as is, a site (or bare domain) by its well-known names. */
async function fetchManifest(source: string): Promise<{ manifest: unknown; from: string }> {
  const site = /^https?:\/\//i.test(source) ? source : `https://${source}`;
  let url: URL;
  try {
    url = new URL(site);
  } catch {
    throw invalidArgument(`source '${source}' is neither a domain nor an http(s) URL`);
  }
  const candidates = url.pathname.endsWith(".json")
    ? [url.href]
    : MANIFEST_PATHS.map((path) => new URL(path, url.href.endsWith("/") ? url.href : `${url.href}/`).href);
  const errors: string[] = [];
  for (const candidate of candidates) {
    try {
      return { manifest: await fetchJson(candidate), from: candidate };
    } catch (err) {
      errors.push((err as Error).message);
    }
  }
  throw unreachable(`no ARD manifest found: ${errors.join("; ")}`);
}

/**
 * Reads a publisher's manifest, checks it whole, and registers its A2A cards and MCP servers as
 * the caller, all or nothing: a REGISTER refused midway puts back what the ones before it replaced.
 */
export async function importManifest(
  service: Mq9Service,
  request: { source: string; mailbox?: string; ttl?: number },
  principal: Principal | undefined,
): Promise<ImportOutcome> {
  const { manifest, from } = await fetchManifest(request.source);
  if (!isManifest(manifest))
    throw invalidArgument(`${from} is not an ARD manifest (specVersion and entries)`);
  let contents: Awaited<ReturnType<typeof readManifest>>;
  try {
    contents = await readManifest(manifest, from, fetchJson);
  } catch (err) {
    if (err instanceof ArdManifestError) throw invalidArgument(err.message);
    throw err;
  }
  const template = request.mailbox;
  if (contents.cards.length > 0 && template === undefined) {
    throw invalidArgument(`${from} lists A2A cards: give the mailbox they are registered under`);
  }
  if (contents.cards.length > 1 && !template!.includes("{name}")) {
    throw invalidArgument(`${from} lists ${contents.cards.length} cards: give a mailbox with {name} in it`);
  }
  const bodies = contents.cards.map(({ identifier, card }) => ({
    identifier,
    name: String(card.name),
    body: {
      ...card,
      mailbox: mailboxFor(template!, String(card.name)),
      ...(request.ttl !== undefined ? { ttl: request.ttl } : {}),
    },
  }));
  const calls: RegistrationCalls = {
    register: async (body) => {
      await callMq9(service, Subjects.agentRegister, body, { principal });
    },
    unregister: async (selector) => {
      await callMq9(service, Subjects.agentUnregister, selector, { principal });
    },
    lookup: async (key) => {
      const reply = await callMq9(service, Subjects.agentDiscover, lookupRequest(key), { principal });
      return (reply.agents as Record<string, unknown>[])[0];
    },
  };
  await registerAll(calls, [
    ...bodies.map(({ body }) => body),
    ...contents.servers.map((server) => serverRegistration(server, request.ttl)),
  ]);
  return {
    imported: bodies.map(({ identifier, name, body }) => ({ identifier, name, mailbox: body.mailbox })),
    servers: contents.servers.map(({ identifier, name, url }) => ({ identifier, name, url })),
    skipped: contents.skipped,
    from,
  };
}
