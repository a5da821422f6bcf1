import { writeFileSync } from 'node:fs';
import type { ReinClient } from '@rein/client';
import type { ReplayCohortView, VersionImpact } from '@rein/contract';
import { cohortReport, nothingToJudge, sinceInstant, threshold } from './replay.js';

export interface DeployCheckOptions {
  version: string;
  against?: string;
  /** Agents to replay (default: every agent the candidate serves). */
  agents?: string[];
  since?: string;
  limit?: string;
  maxWithdrawn?: string;
  maxDiverged?: string;
  /** Where the Markdown report goes (stdout without it); `json`: where the JSON one goes. */
  report?: string;
  json?: string;
}

/** The check's outcome: the impact, each agent's replay cohort, and why it fails (empty: it passes). */
export interface DeployCheck {
  impact: VersionImpact;
  cohorts: ReplayCohortView[];
  failures: string[];
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Why the check fails against its thresholds (pure): too many withdrawals, too many divergences, nothing to judge. */
export function judge(impact: VersionImpact, cohorts: readonly ReplayCohortView[], maxWithdrawn: number, maxDiverged: number): string[] {
  const failures: string[] = [];
  if (impact.withdrawn.count > maxWithdrawn)
    failures.push(`${impact.withdrawn.count} approvals would be withdrawn (the threshold is ${maxWithdrawn})`);
  const replayed = cohorts.reduce((n, c) => n + c.summary.replayed, 0);
  const diverged = cohorts.reduce((n, c) => n + c.summary.diverged, 0);
  if (cohorts.every(nothingToJudge)) failures.push('nothing to judge: no recent run of any agent was replayed on the candidate');
  else if (diverged / replayed > maxDiverged)
    failures.push(
      `${diverged} of ${replayed} replays diverged (${((100 * diverged) / replayed).toFixed(1)}%; the threshold is ${(maxDiverged * 100).toFixed(1)}%)`,
    );
  return failures;
}

const names = (xs: readonly string[]) => (xs.length ? xs.map((x) => `\`${x}\``).join(', ') : '—');
const cell = (s: string) => s.replaceAll('|', '\\|');

/** The check as one Markdown report: the verdict, what the candidate changes, the work it touches, each replay cohort. */
export function deployReport(check: DeployCheck, maxDiverged: number): string {
  const { impact: i, cohorts, failures } = check;
  const lines = [
    `# Deploy check: ${i.version} against ${i.against}`,
    '',
    failures.length ? `**FAILED**: ${failures.join('; ')}.` : '**PASSED**',
    '',
    '| | added | removed | changed |',
    '| --- | --- | --- | --- |',
    `| tools | ${names(i.tools.added)} | ${names(i.tools.removed)} | ${names(i.tools.changed)} |`,
    `| agents | ${names(i.agents.added)} | ${names(i.agents.removed)} | ${names(i.agents.changed)} |`,
    `| MCP servers | ${names(i.mcpServers.added)} | ${names(i.mcpServers.removed)} | |`,
    '',
    `Approvals an upgrade would withdraw: **${i.withdrawn.count}**. Unfinished runs whose agent changed or is gone: **${i.runs.count}**. Schedules whose agent changed or is gone: **${i.schedules.count}**. (Counts are the fleet's; the rows below are your tenant's.)`,
  ];
  if (i.withdrawn.items.length)
    lines.push(
      '',
      '## Approvals that would be withdrawn',
      '',
      '| run | approval | tool | status | why | what differs |',
      '| --- | --- | --- | --- | --- | --- |',
      ...i.withdrawn.items.map(
        (w) =>
          `| \`${w.runId}\` | \`${w.approvalId}\` | \`${cell(w.tool)}\` | ${w.status} | ${w.why} | ${(w.difference ?? []).join(', ')} |`,
      ),
    );
  if (i.runs.items.length)
    lines.push(
      '',
      '## Runs whose agent changed',
      '',
      '| run | agent | status | why |',
      '| --- | --- | --- | --- |',
      ...i.runs.items.map((r) => `| \`${r.runId}\` | \`${cell(r.agent)}\` | ${r.status} | ${r.why} |`),
    );
  if (i.schedules.items.length)
    lines.push(
      '',
      '## Schedules whose agent changed',
      '',
      '| schedule | agent | why |',
      '| --- | --- | --- |',
      ...i.schedules.items.map((s) => `| \`${s.scheduleId}\` | \`${cell(s.agent)}\` | ${s.why} |`),
    );
  for (const c of cohorts) lines.push('', cohortReport(c, maxDiverged).replace(/^# /, '## ').trimEnd());
  return `${lines.join('\n')}\n`;
}

/**
 * `rein deploy check --version V`: asks the API what promoting V would change (nothing is
 * changed), replays each agent's recent runs on V as a cohort under the caller's tenant and
 * budget (a worker of V must be running: a canary), writes one report, and returns 1 past a
 * threshold or when there is nothing to judge (a CI gate), else 0.
 */
export async function deployCheck(rein: Pick<ReinClient, 'versions' | 'replays'>, o: DeployCheckOptions): Promise<number> {
  const maxWithdrawn = o.maxWithdrawn === undefined ? Number.POSITIVE_INFINITY : Number(o.maxWithdrawn);
  if (!Number.isInteger(maxWithdrawn) && maxWithdrawn !== Number.POSITIVE_INFINITY)
    throw new Error(`--max-withdrawn takes a whole number, not "${o.maxWithdrawn}"`);
  const maxDiverged = threshold(o.maxDiverged ?? '100%');
  const limit = Number(o.limit ?? '20');
  if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw new Error(`--limit takes 1 to 500, not "${o.limit}"`);
  const impact = await rein.versions.impact(o.version, o.against ? { against: o.against } : {});
  const agents = o.agents?.length ? o.agents : impact.agentsServed;
  const since = sinceInstant(o.since ?? '24h');
  const cohorts: ReplayCohortView[] = [];
  for (const agent of agents) {
    let view = await rein.replays.create({ agent, since, limit, version: o.version });
    while (view.status !== 'finished') {
      await pause(500);
      view = await rein.replays.get(view.id);
    }
    cohorts.push(view);
  }
  const check: DeployCheck = { impact, cohorts, failures: judge(impact, cohorts, maxWithdrawn, maxDiverged) };
  const report = deployReport(check, maxDiverged);
  if (o.report) writeFileSync(o.report, report);
  else process.stdout.write(report);
  if (o.json) writeFileSync(o.json, `${JSON.stringify(check, null, 2)}\n`);
  if (check.failures.length) {
    process.stderr.write(`rein deploy check: FAILED: ${check.failures.join('; ')}\n`);
    return 1;
  }
  process.stderr.write(`rein deploy check: passed (${impact.withdrawn.count} withdrawn, ${cohorts.length} cohorts)\n`);
  return 0;
}
