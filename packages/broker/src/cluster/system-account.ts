import { ErrorCode, type NatsConnection } from "nats";
import type { Logger } from "../logger.js";
import { connectToCluster } from "./cluster-connection.js";
import type { ClusterOptions, SystemAccountCredential } from "./cluster-options.js";

/** The first nats-server release with `$SYS.REQ.SERVER.<id>.KICK` (nats-server pull request 4298). */
export const KICK_SINCE = "2.10.0";

/** What a request to close a connection did. */
export type KickOutcome =
  /** nats-server closed it. */
  | { kind: "dropped" }
  /** nats-server knows no such connection (closed already, or dropped by another node). */
  | { kind: "gone"; why: string }
  /** The connection is not the one the node's news named: left alone. */
  | { kind: "refused"; why: string }
  /** No nats-server answers the request: older than KICK_SINCE, or unreachable. */
  | { kind: "unsupported"; why: string }
  | { kind: "failed"; why: string };

/** How long a system request may take before the node gives up on it. */
const REQUEST_MS = 2_000;

/**
 * A node's own connection as a user of the NATS system account (opt-in: `--nats-system-user`):
 * the one thing it does there is ask a nats-server to close another node's client connection.
 */
export class SystemAccount {
  private constructor(private readonly connection: NatsConnection) {}

  /**
   * Logs in as the system user and checks that it is one (the servers answer its PING);
   * throws a message that says what to fix otherwise.
   */
  static async connect(options: ClusterOptions, credential: SystemAccountCredential, logger: Logger) {
    const connection = await connectToCluster(
      {
        ...options,
        token: undefined,
        user: credential.user,
        password: credential.password,
        credsFile: credential.credsFile,
      },
      "system",
      logger,
    ).catch((err: Error) => {
      throw new Error(`the NATS system-account user (${who(credential)}): ${err.message}`, { cause: err });
    });
    try {
      await connection.request("$SYS.REQ.SERVER.PING", "", { timeout: REQUEST_MS });
    } catch (err) {
      await connection.close();
      const code = (err as { code?: string }).code;
      const why =
        code === ErrorCode.NoResponders || code === ErrorCode.Timeout
          ? "no nats-server answers its $SYS.REQ.SERVER.PING, so it is not a user of the system account"
          : (err as Error).message;
      throw new Error(
        `the NATS user ${who(credential)} cannot drop hung nodes: ${why}. Give --nats-system-user (or --nats-system-creds) a user of the nats-servers' system account ($SYS by default; docs/cluster.md, Hung nodes), or leave it out`,
        { cause: err },
      );
    }
    const version = connection.info?.version ?? "unknown";
    if (!atLeast(version, KICK_SINCE)) {
      logger.warn(
        `nats-server ${version} has no request to close a client connection ($SYS.REQ.SERVER.<id>.KICK came with nats-server ${KICK_SINCE}): this node cannot drop a hung node, it logs how to instead; upgrade the nats-servers to use --nats-system-user`,
      );
    }
    return new SystemAccount(connection);
  }

  /**
   * Asks the nats-server `serverId` to close its client connection `cid`, once CONNZ shows it is
   * open under `name`: presence news is only as trustworthy as the permissions on its subject, so
   * a connection that is not the named node's is left alone.
   */
  async kick(serverId: string, cid: number, name: string): Promise<KickOutcome> {
    const connz = await this.ask(serverId, "CONNZ", { cid });
    if ("kind" in connz) return connz;
    const open = (connz.data as { connections?: { cid?: number; name?: string }[] } | undefined)?.connections;
    const found = open?.find((c) => c.cid === cid);
    if (connz.error !== undefined || !found) {
      return { kind: "gone", why: connz.error ?? `nats-server ${serverId} has no open connection ${cid}` };
    }
    if (found.name !== name) {
      return {
        kind: "refused",
        why: `connection ${cid} on nats-server ${serverId} is named ${found.name || "(no name)"}, not ${name}: not that node's, so it is left alone (forged presence news? keep _mq9.cluster.> to the nodes' NATS users)`,
      };
    }
    const kicked = await this.ask(serverId, "KICK", { cid });
    if ("kind" in kicked) return kicked;
    if (kicked.error === undefined) return { kind: "dropped" };
    return /no such client/i.test(kicked.error)
      ? { kind: "gone", why: kicked.error }
      : { kind: "failed", why: kicked.error };
  }

  /** One system request to one server: its answer's data and error, or why there is none. */
  private async ask(
    serverId: string,
    request: "CONNZ" | "KICK",
    body: object,
  ): Promise<{ data?: unknown; error?: string } | KickOutcome> {
    const subject = `$SYS.REQ.SERVER.${serverId}.${request}`;
    let data: Uint8Array;
    try {
      data = (await this.connection.request(subject, JSON.stringify(body), { timeout: REQUEST_MS })).data;
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === ErrorCode.NoResponders || code === ErrorCode.Timeout) {
        const why = `no nats-server answers ${subject} (${code === ErrorCode.Timeout ? "timed out" : "no responders"})`;
        return request === "KICK"
          ? {
              kind: "unsupported",
              why: `${why}: nats-server older than ${KICK_SINCE}, or that server is gone`,
            }
          : { kind: "failed", why: `${why}: that server is gone or unreachable` };
      }
      return { kind: "failed", why: (err as Error).message };
    }
    try {
      const answer = JSON.parse(Buffer.from(data).toString("utf8")) as {
        data?: unknown;
        error?: { description?: string };
      };
      return { data: answer.data, error: answer.error ? (answer.error.description ?? "error") : undefined };
    } catch {
      return { kind: "failed", why: `nats-server's answer to ${subject} is not JSON` };
    }
  }

  async close(): Promise<void> {
    if (!this.connection.isClosed()) await this.connection.close();
  }
}

function who(credential: SystemAccountCredential): string {
  return credential.credsFile ? `of ${credential.credsFile}` : (credential.user ?? "");
}

/** Whether a nats-server version (`2.9.10`, `2.14.10-RC.1`) is at least `least`. */
export function atLeast(version: string, least: string): boolean {
  const parse = (v: string) => v.split(/[.-]/).slice(0, 3).map(Number);
  const [a, b] = [parse(version), parse(least)];
  for (let i = 0; i < 3; i++) {
    if (Number.isNaN(a[i])) return false;
    if (a[i] !== b[i]) return a[i] > b[i];
  }
  return true;
}
