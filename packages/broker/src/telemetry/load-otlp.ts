import { createRequire } from "node:module";

/** The broker's package.json: the SDK packages are its optional peers, at the versions it is tested with. */
const manifest = createRequire(import.meta.url)("../../package.json") as {
  peerDependencies?: Record<string, string>;
};

/** `npm install` arguments for the OpenTelemetry SDK packages OTLP export loads. */
export function otlpPackages(): string[] {
  return Object.entries(manifest.peerDependencies ?? {})
    .filter(([name]) => name.startsWith("@opentelemetry/"))
    .map(([name, version]) => `${name}@${version}`);
}

/**
 * Loads OTLP export. Its OpenTelemetry SDK packages are optional peers, left out of a default
 * install (the checkout has them): when one is missing, the error says what to install.
 */
export async function loadOtlpTelemetry(): Promise<typeof import("./otlp-telemetry.js")> {
  try {
    return await import("./otlp-telemetry.js");
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code !== "ERR_MODULE_NOT_FOUND" || !String((err as Error).message).includes("@opentelemetry/"))
      throw err;
    throw new Error(
      `OTLP export needs the OpenTelemetry SDK, which a default install leaves out: npm install ${otlpPackages().join(" ")}`,
      { cause: err },
    );
  }
}
