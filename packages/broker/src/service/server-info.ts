import { type Dirent, readdirSync, readFileSync, statfsSync, statSync } from "node:fs";
import { join } from "node:path";
import type { ServerInfoReply } from "@mq9/protocol";

/** What SERVER.INFO reports of a broker, gathered from its parts by Broker.start. */
export interface ServerInfoSources {
  /** The store as it describes itself (Store.describe). */
  store: () => string;
  connections: () => number;
  /** Undefined where the broker has no listener of its own (a cluster node). */
  subscriptions: () => number | undefined;
  /** The embedded store's data directory; undefined when the store keeps no files here. */
  dataDir?: string;
  cluster: () => ServerInfoReply["cluster"];
}

/** The version of @mq9/broker, from its package.json; "unknown" where it is not beside the code. */
function packageVersion(): string {
  try {
    const text = readFileSync(new URL("../../package.json", import.meta.url), "utf8");
    const version = (JSON.parse(text) as { version?: unknown }).version;
    return typeof version === "string" ? version : "unknown";
  } catch {
    return "unknown";
  }
}

/** Bytes of the files under `dir` (not following links); 0 when it cannot be read. */
function bytesUnder(dir: string): number {
  let total = 0;
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    try {
      if (entry.isDirectory()) total += bytesUnder(path);
      else if (entry.isFile()) total += statSync(path).size;
    } catch {
      // A file removed while counting (a compacted segment) counts for nothing.
    }
  }
  return total;
}

/** Answers SERVER.INFO: the broker's version, uptime, store, connections, memory, disk and cluster. */
export class ServerInfo {
  private readonly version = packageVersion();
  private readonly startedMs = Date.now();

  constructor(private readonly sources: ServerInfoSources) {}

  reply(): Omit<ServerInfoReply, "error" | "code"> {
    const { sources } = this;
    const memory = process.memoryUsage();
    const now = Date.now();
    return {
      version: this.version,
      started_at: this.startedMs,
      uptime_s: Math.floor((now - this.startedMs) / 1000),
      store: sources.store(),
      connections: sources.connections(),
      subscriptions: sources.subscriptions() ?? null,
      memory: { rss: memory.rss, heap_used: memory.heapUsed, heap_total: memory.heapTotal },
      disk: this.disk(),
      cluster: sources.cluster(),
    };
  }

  private disk(): ServerInfoReply["disk"] {
    const dir = this.sources.dataDir;
    if (dir === undefined) return null;
    try {
      const fs = statfsSync(dir);
      return { data_dir: dir, free_bytes: fs.bavail * fs.bsize, used_bytes: bytesUnder(dir) };
    } catch {
      return null;
    }
  }
}
