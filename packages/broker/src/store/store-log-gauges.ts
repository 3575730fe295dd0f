import { Counter, Gauge, type Registry } from "prom-client";

/** What `/metrics` shows of the message log. */
export interface StoreLogStatus {
  segments: number;
  /** Header and payload bytes of the stored messages (deleted ones' bytes are not counted). */
  messageBytes: number;
  /** SENDs in the log whose rows are not in SQLite yet. */
  rowsWaiting: number;
  /** Records of the message log found corrupt since the store opened. */
  corruptRecords: number;
  /** Bytes of the message log's segment files. */
  logBytes: number;
  /** Bytes of the SQLite WAL file. */
  walBytes: number;
  /** Unused pages in the SQLite database file, in bytes (reused, or returned by incremental vacuum). */
  dbFreeBytes: number;
  /**
   * Bytes on disk that hold nothing live and are given back on the reclaim schedule: segment
   * bytes past the live messages, the WAL, and free database pages.
   */
  reclaimableBytes: number;
}

/**
 * Gauges of the embedded store's message log on `registry`: how big it is, and how far SQLite is
 * behind it (`status` is undefined for an in-memory store: every gauge reads 0).
 */
export function watchStoreLog(registry: Registry, status: () => StoreLogStatus | undefined): void {
  const gauge = (name: string, help: string, read: () => number): void => {
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(read());
      },
    });
  };
  gauge("mq9_store_log_segments", "segment files of the message log", () => status()?.segments ?? 0);
  gauge(
    "mq9_store_log_message_bytes",
    "header and payload bytes of stored messages in the message log",
    () => status()?.messageBytes ?? 0,
  );
  gauge(
    "mq9_store_rows_waiting",
    "SENDs in the message log whose rows are not in SQLite yet",
    () => status()?.rowsWaiting ?? 0,
  );
  gauge("mq9_store_log_bytes", "bytes of the message log's segment files", () => status()?.logBytes ?? 0);
  gauge("mq9_store_wal_bytes", "bytes of the SQLite WAL file", () => status()?.walBytes ?? 0);
  gauge(
    "mq9_store_db_free_bytes",
    "unused pages in the SQLite database file, in bytes",
    () => status()?.dbFreeBytes ?? 0,
  );
  gauge(
    "mq9_store_reclaimable_bytes",
    "bytes on disk holding nothing live (dead log bytes, the WAL, free database pages), given back on the reclaim schedule",
    () => status()?.reclaimableBytes ?? 0,
  );
  new Counter({
    name: "mq9_store_corrupt_records_total",
    help: "records of the message log whose bytes did not match their checksum (their messages are not served)",
    registers: [registry],
    collect() {
      // The store keeps the count; the counter shows it.
      this.reset();
      this.inc(status()?.corruptRecords ?? 0);
    },
  });
}
