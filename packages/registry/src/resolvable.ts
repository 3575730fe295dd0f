import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

/** Whether a package can be loaded from here, checked without loading it. */
export function resolvable(pkg: string): boolean {
  try {
    require.resolve(pkg);
    return true;
  } catch {
    return false;
  }
}
