import { readFileSync, statSync } from "node:fs";
import type { StepSchedule, TaskTemplate, TemplateProblem } from "@mq9/orchestrator";
import type { Command } from "commander";
import { ExitCode, usageExit } from "../shared/client-command.js";
import { printJson, sayLine } from "../shared/output.js";
import { DEFAULT_TEMPLATES_FOLDER } from "../shared/templates-folder.js";

/** `mq9 templates check [folder]`: validates task templates, with file:line:column for each problem. */
export function registerTemplates(program: Command): void {
  const templates = program
    .command("templates")
    .description("the orchestrator's task templates (YAML)")
    .exitOverride(usageExit);
  templates
    .command("check")
    .description("validate every template of a folder, or one template file; exits 1 when one has a problem")
    .argument(
      "[path]",
      "templates folder or one template file (env MQ9_TEMPLATES)",
      process.env.MQ9_TEMPLATES ?? DEFAULT_TEMPLATES_FOLDER,
    )
    .option("--json", "machine-readable output (JSON)")
    .exitOverride(usageExit)
    .addHelpText(
      "after",
      "\nEach step is listed with what it waits for (after:) and what may run beside it (parallel with:);\na step without mode or depends_on does not wait for the step before it.\n\nExamples:\n  mq9 templates check ./mq9-templates\n  mq9 templates check ./mq9-templates/content_analysis.yaml",
    )
    .action(async (path: string, flags: { json?: boolean }) => {
      const { formatProblem, loadTemplateFolder, parseTemplate, stepSchedule } = await import(
        "@mq9/orchestrator"
      );
      const { templates: found, problems } = statSync(path, { throwIfNoEntry: false })?.isFile()
        ? oneFile(path, parseTemplate)
        : loadTemplateFolder(path);
      if (flags.json) {
        printJson({
          ok: problems.length === 0,
          templates: [...found.values()].map((t) => ({
            name: t.name,
            file: t.file,
            steps: t.order,
            schedule: stepSchedule(t).map((s) => ({
              step: s.step,
              after: s.after,
              parallel_with: s.parallelWith,
            })),
          })),
          problems,
        });
      } else {
        for (const t of found.values()) {
          process.stdout.write(`ok   ${t.name} (${t.file}): ${stages(t)}\n`);
          for (const line of scheduleLines(stepSchedule(t))) process.stdout.write(`  ${line}\n`);
        }
        for (const p of problems) sayLine(formatProblem(p));
        process.stdout.write(
          `${found.size} template${found.size === 1 ? "" : "s"} ok, ${problems.length} problem${problems.length === 1 ? "" : "s"}\n`,
        );
      }
      process.exitCode = problems.length === 0 ? ExitCode.ok : ExitCode.brokerError;
    });
}

/** One template file checked on its own, in the shape a folder's check gives. */
function oneFile(
  file: string,
  parse: (text: string, file: string) => { template?: TaskTemplate; problems: TemplateProblem[] },
): { templates: Map<string, TaskTemplate>; problems: TemplateProblem[] } {
  const { template, problems } = parse(readFileSync(file, "utf8"), file);
  return { templates: new Map(template ? [[template.name, template]] : []), problems };
}

/**
 * The steps as they run: those that run at once joined by " + ", each group after the
 * groups it waits for (" -> "), so a fan-out does not read like a pipeline.
 */
function stages(template: TaskTemplate): string {
  const depth = new Map<string, number>();
  const byDepth: string[][] = [];
  for (const id of template.order) {
    const step = template.steps.find((s) => s.id === id);
    const d = Math.max(-1, ...(step?.dependsOn ?? []).map((dep) => depth.get(dep) ?? -1)) + 1;
    depth.set(id, d);
    byDepth[d] ??= [];
    byDepth[d].push(id);
  }
  return byDepth.map((group) => group.join(" + ")).join(" -> ");
}

/**
 * One line per step, in the file's order: `2. count  after: shout; parallel with: log`.
 * A step that neither waits nor has company is the whole task's start: `first`.
 */
function scheduleLines(schedule: StepSchedule[]): string[] {
  const width = Math.max(...schedule.map((s) => s.step.length));
  return schedule.map((s, index) => {
    const parts = [
      ...(s.after.length > 0 ? [`after: ${s.after.join(", ")}`] : []),
      ...(s.parallelWith.length > 0 ? [`parallel with: ${s.parallelWith.join(", ")}`] : []),
    ];
    return `${index + 1}. ${s.step.padEnd(width)}  ${parts.length > 0 ? parts.join("; ") : "first"}`;
  });
}
