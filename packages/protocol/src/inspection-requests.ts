import { Errors } from "./errors.js";
import type {
  GroupInfoRequest,
  GroupReleaseRequest,
  GroupResetRequest,
  MailboxListRequest,
  MailboxPurgeRequest,
} from "./inspection-messages.js";
import { isPriority, PRIORITIES, type Priority } from "./priority.js";
import {
  BodyError,
  type JsonObject,
  optionalString,
  optionalUInt,
  type Parsed,
  parseWith,
  readJsonObject,
} from "./validate.js";

/** Most mailboxes one LIST answers with. */
export const MAX_MAILBOX_LIST_LIMIT = 1000;
/** How many a LIST without `limit` answers with. */
export const DEFAULT_MAILBOX_LIST_LIMIT = 200;

/** Refuses fields the request does not know: a misspelt filter must not widen a PURGE. */
function onlyFields(obj: JsonObject, known: readonly string[]): void {
  for (const field of Object.keys(obj)) {
    if (!known.includes(field)) {
      throw new BodyError(`unknown field '${field}' (known: ${known.join(", ")})`);
    }
  }
}

function requiredGroup(obj: JsonObject): string {
  const group = optionalString(obj, "group_name");
  if (group === undefined || group === "") throw new BodyError("missing field 'group_name'");
  return group;
}

export function parseMailboxListRequest(body: Uint8Array): Parsed<MailboxListRequest> {
  return parseWith(
    () => {
      const { obj } = readJsonObject(body, { emptyAsObject: true });
      onlyFields(obj, ["search", "limit"]);
      const limit = optionalUInt(obj, "limit");
      if (limit !== undefined && (limit < 1 || limit > MAX_MAILBOX_LIST_LIMIT)) {
        throw new BodyError(`'limit' must be 1 to ${MAX_MAILBOX_LIST_LIMIT}, got ${limit}`);
      }
      return { search: optionalString(obj, "search"), limit };
    },
    (reason) => Errors.invalidPayload("MAILBOX.LIST", reason),
  );
}

export function parseMailboxPurgeRequest(body: Uint8Array): Parsed<MailboxPurgeRequest> {
  return parseWith(
    () => {
      const { obj } = readJsonObject(body, { emptyAsObject: true });
      onlyFields(obj, ["key", "tag", "priority", "older_than_s"]);
      const priority = optionalString(obj, "priority");
      if (priority !== undefined && !isPriority(priority)) {
        throw new BodyError(`'priority' must be one of ${PRIORITIES.join(", ")}, got '${priority}'`);
      }
      return {
        key: optionalString(obj, "key"),
        tag: optionalString(obj, "tag"),
        priority: priority as Priority | undefined,
        older_than_s: optionalUInt(obj, "older_than_s"),
      };
    },
    (reason) => Errors.invalidPayload("MAILBOX.PURGE", reason),
  );
}

export function parseGroupInfoRequest(body: Uint8Array): Parsed<GroupInfoRequest> {
  return parseWith(
    () => {
      const { obj } = readJsonObject(body);
      onlyFields(obj, ["group_name"]);
      return { group_name: requiredGroup(obj) };
    },
    (reason) => Errors.invalidPayload("GROUP.INFO", reason),
  );
}

export function parseGroupReleaseRequest(body: Uint8Array): Parsed<GroupReleaseRequest> {
  return parseWith(
    () => {
      const { obj } = readJsonObject(body);
      onlyFields(obj, ["group_name", "member"]);
      const member = optionalString(obj, "member");
      return member === undefined
        ? { group_name: requiredGroup(obj) }
        : { group_name: requiredGroup(obj), member };
    },
    (reason) => Errors.invalidPayload("GROUP.RELEASE", reason),
  );
}

const RESET_STARTS = ["from_id", "from_time", "deliver"] as const;

export function parseGroupResetRequest(body: Uint8Array): Parsed<GroupResetRequest> {
  return parseWith(
    () => {
      const { obj } = readJsonObject(body);
      onlyFields(obj, ["group_name", ...RESET_STARTS]);
      const group = requiredGroup(obj);
      const given = RESET_STARTS.filter((field) => obj[field] !== undefined && obj[field] !== null);
      if (given.length !== 1) {
        throw new BodyError(
          `give exactly one of 'from_id', 'from_time' or 'deliver' ("earliest" or "latest"), got ${given.length === 0 ? "none" : given.join(" and ")}`,
        );
      }
      const deliver = optionalString(obj, "deliver");
      if (deliver !== undefined && deliver !== "earliest" && deliver !== "latest") {
        throw new BodyError(`'deliver' must be "earliest" or "latest", got '${deliver}'`);
      }
      return {
        group_name: group,
        from_id: optionalUInt(obj, "from_id"),
        from_time: optionalUInt(obj, "from_time"),
        deliver,
      };
    },
    (reason) => Errors.invalidPayload("GROUP.RESET", reason),
  );
}
