import { parseRegisterRequest } from "@mq9/protocol";

type Json = Record<string, unknown>;

/** The registry calls an import makes, as the caller: over NATS (the CLI) or in-process (REST). */
export interface RegistrationCalls {
  register(body: Json): Promise<void>;
  /** An agent by its mailbox, an MCP server by its url. */
  unregister(selector: { mailbox: string } | { url: string }): Promise<void>;
  /** The registration under a key (a mailbox or an MCP server's key), as DISCOVER answers it. */
  lookup(key: string): Promise<Json | undefined>;
}

/** The DISCOVER body that finds the one registration under a key, either kind, as registered. */
export function lookupRequest(key: string): Json {
  return { mailbox: key, kind: ["agent", "mcp-server"], include_agent_info: false, limit: 1 };
}

const encoder = new TextEncoder();

/** A REGISTER body's registry key, or undefined when the registry would refuse the body. */
function keyOf(body: Json): string | undefined {
  const parsed = parseRegisterRequest(encoder.encode(JSON.stringify(body)));
  return parsed.ok ? parsed.value.mailbox : undefined;
}

function selectorOf(body: Json): { mailbox: string } | { url: string } {
  return body.kind === "mcp-server" ? { url: String(body.url) } : { mailbox: String(body.mailbox) };
}

/**
 * Registers every body, all or nothing: when one is refused, the ones registered before it are
 * put back as they were — the registration they replaced registered again, a new one removed —
 * and the refusal is thrown.
 */
export async function registerAll(calls: RegistrationCalls, bodies: readonly Json[]): Promise<void> {
  const done: { body: Json; before: Json | undefined }[] = [];
  try {
    for (const body of bodies) {
      const key = keyOf(body);
      const before = key === undefined ? undefined : await calls.lookup(key);
      await calls.register(body);
      done.push({ body, before });
    }
  } catch (err) {
    // Newest first, so a body listed twice ends as it was before the first.
    for (const { body, before } of done.reverse()) {
      const undo = before === undefined ? calls.unregister(selectorOf(body)) : calls.register(before);
      await undo.catch(() => {});
    }
    throw err;
  }
}
