// The repository's examples as test fixtures: the tests run them as a user would, so the
// examples cannot rot. They are loaded from the examples folder, not copied.
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** The repository's root folder. */
export const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));

/** The content-analysis example's templates folder (`examples/content-analysis/templates`). */
export const contentAnalysisTemplates = join(repoRoot, "examples/content-analysis/templates");

/** One running example agent: what the tests need of the Agent SDK's class. */
export interface SampleAgent {
  readonly name: string;
  stop(): Promise<void>;
}

/** Options the example agents pass to the Agent SDK (heartbeat, error handler, …). */
export type SampleAgentOptions = Record<string, unknown>;

/** Starts the content-analysis example's three agents (summarizer, keywords, quality) against `server`. */
export async function startContentAnalysisAgents(
  server: string,
  options: SampleAgentOptions = {},
): Promise<SampleAgent[]> {
  const module = (await import(
    pathToFileURL(join(repoRoot, "examples/content-analysis/agents.js")).href
  )) as {
    startAgents(server: string, options: SampleAgentOptions): Promise<SampleAgent[]>;
  };
  return module.startAgents(server, options);
}
