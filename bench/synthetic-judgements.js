// Which synthetic agents (bench/synthetic-skills.js) really do the job a labelled query asks for,
// so that part S does not count them as errors. Judged by hand from the queries the strict count
// misses (BENCH_REG_SCORES_DUMP=1 node bench/registry-agent-scores.js), with one rule: a synthetic
// skill is a right answer when it could stand in for the labelled agent, that is, its action is
// the labelled skill's job and its object is the kind of thing that agent works on. A synthetic
// skill that only shares the topic ("Sample meeting minutes" for a transcriber, "Grade customer
// complaints" for a sentiment analyser) is not. Queries of labelled agents not listed here count
// their labelled agent only.

/** Per labelled agent: the synthetic (action, objects) pairs that do its job; no objects: any. */
const STAND_INS = {
  // "Proofread", "fix the typos in my cover letter": every synthetic object is a text to proofread.
  "grammar-checker": [["Proofread"]],
  // "Triage" (of bug reports): triage of failures, crashes and tickets is the same job.
  "bug-triager": [["Triage", ["unit test failures", "stack traces", "support tickets"]]],
  // "SEO audit", "why doesn't our site show up on google".
  "seo-auditor": [["Audit", ["SEO keywords"]]],
  // "Prepare return", "help me do my annual return to the IRS".
  "tax-filer": [
    ["Draft", ["tax filings"]],
    ["Compile", ["tax filings"]],
  ],
  // "Write article" (help-centre how-tos).
  "kb-writer": [["Draft", ["knowledge base articles"]]],
  // "Clean CSV", "the spreadsheet has broken characters and inconsistent dates".
  "csv-cleaner": [
    ["Clean", ["CSV exports"]],
    ["Normalize", ["CSV exports"]],
  ],
  // "Score leads", "which prospects are most likely to buy".
  "lead-scorer": [
    ["Score", ["sales leads"]],
    ["Rank", ["sales leads"]],
  ],
  // "Route ticket", "send this help request to the right team".
  "ticket-router": [["Route", ["support tickets"]]],
  // "Forecast" (next quarter's sales), "how much will we sell next quarter".
  "demand-forecaster": [["Forecast", ["quarterly pipeline reports"]]],
  // "Review PR", "look over my pull request before I merge it".
  "code-reviewer": [
    ["Audit", ["pull requests"]],
    ["Inspect", ["pull requests"]],
  ],
};

/** Whether synthetic `skill` ({ name: "<Action> <object>" }) does what a query for `expect` asks. */
export function doesTheJob(expect, _query, skill) {
  const standIns = STAND_INS[expect];
  if (standIns === undefined) return false;
  return standIns.some(
    ([action, objects]) =>
      skill.name.startsWith(`${action} `) &&
      (objects === undefined || objects.includes(skill.name.slice(action.length + 1))),
  );
}
