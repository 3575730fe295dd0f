// The broker's tests speak the protocol through plain `nats` clients: each test broker (of the
// testkit's three kinds) comes with one connected client, `nc`, that `request` uses.
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type BrokerPlacement,
  type ConnectedTestBroker,
  connected,
  onEachBrokerKind,
  startBroker,
  type TestBrokerOptions,
} from "@mq9/testkit";

export { type Body, encodeBody, sleep, type TestBrokerOptions, texts } from "@mq9/testkit";

export type TestBroker = ConnectedTestBroker;

export function tempDir(prefix = "mq9-test-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Starts a real embedded broker on a free port with a fresh data directory, plus one connected client. */
export function startTestBroker(options: TestBrokerOptions = {}): Promise<TestBroker> {
  return connected(startBroker(options));
}

/** Starts a test broker on one kind of store. */
export type StartTestBroker = (options?: TestBrokerOptions) => Promise<TestBroker>;

/**
 * Declares a protocol suite once per kind of broker (embedded, PostgreSQL, two cluster nodes):
 * the testkit's `onEachBrokerKind`, each broker with its connected client.
 */
export function onEachStore(suite: (startBroker: StartTestBroker, where: BrokerPlacement) => void): void {
  onEachBrokerKind((start, where) => suite((options) => connected(start(options)), where));
}

/**
 * Flips one byte (`offset` bytes in) of the first occurrence of `text` in the log segments of a
 * store that is closed: damage its checksum must find.
 */
export function flipByteOf(dataDir: string, text: string, offset = 1): void {
  const dir = join(dataDir, "log");
  for (const name of readdirSync(dir)) {
    const file = join(dir, name);
    const bytes = readFileSync(file);
    const at = bytes.indexOf(text);
    if (at < 0) continue;
    bytes[at + offset] ^= 0x20;
    writeFileSync(file, bytes);
    return;
  }
  throw new Error(`"${text}" is in no segment`);
}
