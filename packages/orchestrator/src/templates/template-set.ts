import { existsSync, type FSWatcher, readdirSync, readFileSync, watch } from "node:fs";
import { join } from "node:path";
import type { TaskTemplate, TemplateProblem } from "./task-template.js";
import { parseTemplate } from "./template-loader.js";

const isTemplateFile = (name: string) => name.endsWith(".yaml") || name.endsWith(".yml");

/** Reads every template of a folder; one file's problems never hide another's templates. */
export function loadTemplateFolder(folder: string): {
  templates: Map<string, TaskTemplate>;
  problems: TemplateProblem[];
} {
  const templates = new Map<string, TaskTemplate>();
  const problems: TemplateProblem[] = [];
  let names: string[];
  try {
    names = readdirSync(folder).filter(isTemplateFile).sort();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === "ENOENT" ? "no such folder" : code === "ENOTDIR" ? "not a folder" : (err as Error).message;
    problems.push({ file: folder, line: 0, column: 0, message: `cannot read the templates folder: ${why}` });
    return { templates, problems };
  }
  for (const name of names) {
    const file = join(folder, name);
    const parsed = parseTemplate(readFileSync(file, "utf8"), file);
    problems.push(...parsed.problems);
    if (!parsed.template) continue;
    const clash = templates.get(parsed.template.name);
    if (clash) {
      problems.push({
        file,
        line: 1,
        column: 1,
        message: `task type '${parsed.template.name}' is also defined in ${clash.file}`,
      });
      continue;
    }
    templates.set(parsed.template.name, parsed.template);
  }
  return { templates, problems };
}

export interface TemplateSetOptions {
  folder: string;
  /** Told about the problems of every (re)load. */
  onProblems?: (problems: TemplateProblem[]) => void;
  /** Told the task types in force after each reload (not the first load). */
  onReload?: (names: string[]) => void;
  /** Re-read the folder when a file changes; a folder that does not exist yet is picked up when it appears. */
  watch?: boolean;
  /** How often a missing folder is looked for (default 1 000 ms). */
  appearPollMs?: number;
}

/**
 * The task templates in force. A reload that finds problems keeps the last good
 * version of each broken template, so a typo never takes a running task type away.
 */
export class TemplateSet {
  private templates = new Map<string, TaskTemplate>();
  private watcher?: FSWatcher;
  private pending?: NodeJS.Timeout;
  private lookForFolder?: NodeJS.Timeout;
  private closed = false;
  private lastProblems: TemplateProblem[] = [];

  constructor(private readonly options: TemplateSetOptions) {
    this.reload();
    this.loaded = true;
    if (options.watch) this.watch();
  }

  /** Set once the first load is done: later loads are reloads. */
  private loaded = false;

  private watch(): void {
    if (this.closed) return;
    try {
      this.watcher = watch(this.options.folder, () => {
        // Editors write in several steps; settle before reading.
        clearTimeout(this.pending);
        this.pending = setTimeout(() => this.reload(), 100);
      });
      this.watcher.on("error", () => {});
    } catch {
      // Not there yet (a folder cannot be watched before it exists): look again shortly.
      this.lookForFolder = setInterval(() => {
        if (!existsSync(this.options.folder)) return;
        clearInterval(this.lookForFolder);
        this.reload();
        this.watch();
      }, this.options.appearPollMs ?? 1_000);
      this.lookForFolder.unref?.();
    }
  }

  get(name: string): TaskTemplate | undefined {
    return this.templates.get(name);
  }

  names(): string[] {
    return [...this.templates.keys()].sort();
  }

  /** What the last (re)load found wrong, file by file (a broken file's last good templates stay in force). */
  problems(): TemplateProblem[] {
    return [...this.lastProblems];
  }

  /** Re-reads the folder now; returns the problems found. */
  reload(): TemplateProblem[] {
    // A watched folder that is not there yet holds no templates; that is not a problem.
    if (this.options.watch && !existsSync(this.options.folder)) return [];
    const { templates, problems } = loadTemplateFolder(this.options.folder);
    const broken = new Set(problems.map((p) => p.file));
    for (const [name, previous] of this.templates) {
      if (!templates.has(name) && broken.has(previous.file)) templates.set(name, previous);
    }
    this.templates = templates;
    this.lastProblems = problems;
    if (problems.length > 0) this.options.onProblems?.(problems);
    if (this.loaded) this.options.onReload?.(this.names());
    return problems;
  }

  close(): void {
    this.closed = true;
    clearInterval(this.lookForFolder);
    clearTimeout(this.pending);
    this.watcher?.close();
  }
}
