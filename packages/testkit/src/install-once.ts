import { mkdirSync, rmSync, statSync } from "node:fs";
import { dirname } from "node:path";

const STALE_LOCK_MS = 20 * 60_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `install` unless `ready()` says it is done. Test files run in parallel processes: one
 * installs under the lock directory `lock`, the others wait for it; a lock older than 20 minutes
 * belongs to a run that died and is taken over.
 */
export async function installOnce(lock: string, ready: () => boolean, install: () => void): Promise<void> {
  for (;;) {
    if (ready()) return;
    // A fresh clone has no .cache yet: the lock directory needs its parent.
    mkdirSync(dirname(lock), { recursive: true });
    try {
      mkdirSync(lock);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      let age = 0;
      try {
        age = Date.now() - statSync(lock).mtimeMs;
      } catch {
        // Gone already: its installer finished; look again.
      }
      if (age > STALE_LOCK_MS) rmSync(lock, { recursive: true, force: true });
      await sleep(2_000);
      continue;
    }
    try {
      if (!ready()) install();
      return;
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
}
