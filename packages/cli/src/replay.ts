import { readFileSync, writeFileSync } from 'node:fs';
import type { ReinClient, ReplayCohortView, RunDiff } from '@rein/client';
import { TERMINAL_STATUSES, type TerminalStatus } from '@rein/contract';

type DiffCall = RunDiff['toolCalls']['added'][number];

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
const callText = (c: DiffCall) => `${c.name}(${JSON.stringify(c.arguments)})${c.source && c.source !== 'recorded' ? ` [${c.source}]` : ''}`;
const sideLines = (side: RunDiff['steps'][number]['original']): string[] => {
  if (!side) return ['—'];
  if (side.calls.length === 0) return [side.thought ? `answer: ${side.thought.replace(/\s+/g, ' ')}` : 'answer'];
  // The source first: a long call is clipped at the column's end.
  return side.calls.map((c) => `${c.source && c.source !== 'recorded' ? `[${c.source}] ` : ''}${c.name}(${JSON.stringify(c.arguments)})`);
};

/** A diff as two columns, original | replay, one row per step, `≠` where the structure differs. */
export function renderDiff(diff: RunDiff, width = 60): string {
  const out: string[] = [];
  const row = (mark: string, left: string, right: string) => out.push(`${mark} ${clip(left, width).padEnd(width)} │ ${clip(right, width)}`);
  out.push(
    `replay of ${diff.replayOf}: ${diff.identical ? 'identical' : `diverged at step ${diff.divergedAtStep ?? '-'}`} (${diff.status})`,
  );
  row(' ', 'original', 'replay');
  row(' ', '─'.repeat(width), '─'.repeat(width));
  for (const step of diff.steps) {
    const [left, right] = [sideLines(step.original), sideLines(step.replay)];
    for (let i = 0; i < Math.max(left.length, right.length); i++)
      row(i === 0 ? (step.same ? ' ' : '≠') : ' ', `${i === 0 ? `${step.index}  ` : '   '}${left[i] ?? ''}`, right[i] ?? '');
  }
  out.push('');
  const t = diff.toolCalls;
  if (t.added.length) out.push(`added calls: ${t.added.map((c) => `${callText(c)} @${c.step}`).join('; ')}`);
  if (t.removed.length) out.push(`removed calls: ${t.removed.map((c) => `${callText(c)} @${c.step}`).join('; ')}`);
  for (const c of t.changedArguments)
    out.push(`changed arguments @${c.step} ${c.name}: ${JSON.stringify(c.original)} → ${JSON.stringify(c.replay)}`);
  for (const a of diff.approvals.wouldNeed)
    out.push(`would need approval @${a.step}: ${a.toolName} (risk ${a.risk}, role ${a.requiredRole})`);
  out.push(
    `tokens: ${diff.usage.original.totalTokens} → ${diff.usage.replay.totalTokens}; cost: $${diff.costUsd.original} → $${diff.costUsd.replay}`,
  );
  out.push(`final answer ${diff.finalAnswer.same ? 'the same' : 'differs'}:`);
  out.push(`  original: ${diff.finalAnswer.original ?? '—'}`);
  if (!diff.finalAnswer.same) out.push(`  replay:   ${diff.finalAnswer.replay ?? '—'}`);
  return `${out.join('\n')}\n`;
}

/** `24h`, `90m`, `7d` or an ISO instant → the ISO instant that far back from `now`. */
export function sinceInstant(since: string, now = Date.now()): string {
  const m = /^(\d+)([mhd])$/.exec(since);
  if (!m) {
    if (Number.isNaN(Date.parse(since))) throw new Error(`--since takes a duration (24h, 90m, 7d) or an ISO instant, not "${since}"`);
    return new Date(since).toISOString();
  }
  const unit = { m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 'm' | 'h' | 'd'];
  return new Date(now - Number(m[1]) * unit).toISOString();
}

/** `10%` or `0.1` → 0.1. */
export function threshold(text: string): number {
  const value = text.endsWith('%') ? Number(text.slice(0, -1)) / 100 : Number(text);
  if (!Number.isFinite(value) || value < 0 || value > 1) throw new Error(`--max-diverged takes a share (10% or 0.1), not "${text}"`);
  return value;
}

/** A cohort none of whose runs was replayed: a gate has nothing to judge, so it fails. */
export const nothingToJudge = (view: ReplayCohortView) => view.summary.replayed === 0;

/** Whether the cohort fails the gate: nothing replayed, or more diverged replays than `maxDiverged` of those replayed. */
export const crossed = (view: ReplayCohortView, maxDiverged: number) =>
  nothingToJudge(view) || view.summary.diverged / view.summary.replayed > maxDiverged;

/** Why a cohort with nothing replayed has nothing to judge, in the user's terms. */
const emptyReason = (view: ReplayCohortView) =>
  view.summary.total === 0
    ? 'no finished run of the agent in the window'
    : `none of its ${view.summary.total} runs was replayed (${view.summary.skipped} skipped)`;

/** A cohort's Markdown report: the summary, then every run that diverged, would need an approval or now fails. */
export function cohortReport(view: ReplayCohortView, maxDiverged: number): string {
  const s = view.summary;
  const pct = (n: number) => (s.replayed ? `${((100 * n) / s.replayed).toFixed(1)}%` : '-');
  const lines = [
    `# Replay of ${view.agent}`,
    '',
    `Cohort \`${view.id}\`, created ${view.createdAt}; ${
      Object.entries(view.settings)
        .map(([k, v]) => `${k}: ${k === 'instructions' ? `${String(v).length} chars` : v}`)
        .join(', ') || 'no overrides'
    }.`,
    '',
    nothingToJudge(view)
      ? `**FAILED**: nothing to judge: ${emptyReason(view)}.`
      : `**${crossed(view, maxDiverged) ? 'FAILED' : 'PASSED'}**: ${s.diverged} of ${s.replayed} diverged (${pct(s.diverged)}; the threshold is ${(maxDiverged * 100).toFixed(1)}%).`,
    '',
    '| replayed | identical | diverged | would need approval | would now fail | skipped | tokens (original → replay) | cost USD |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    `| ${s.replayed} of ${s.total} | ${s.identical} | ${s.diverged} | ${s.wouldNeedApprovals} | ${s.nowFail} | ${s.skipped} | ${s.tokens.original} → ${s.tokens.replay} | ${s.costUsd.original.toFixed(4)} → ${s.costUsd.replay.toFixed(4)} |`,
  ];
  const notable = view.runs.filter((r) => r.identical === false || (r.wouldNeedApprovals ?? 0) > 0 || r.nowFails);
  if (notable.length) {
    lines.push(
      '',
      '## Runs that changed',
      '',
      '| original | replay | diverged at | how | approvals needed | now fails |',
      '| --- | --- | --- | --- | --- | --- |',
    );
    for (const r of notable)
      lines.push(
        `| \`${r.original}\` | \`${r.replay ?? ''}\` | ${r.divergedAtStep ?? '-'} | ${(r.divergence ?? '').replaceAll('|', '\\|')} | ${r.wouldNeedApprovals ?? 0} | ${r.nowFails ? 'yes' : ''} |`,
      );
  }
  return `${lines.join('\n')}\n`;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface ReplayOptions {
  model?: string;
  instructionsFile?: string;
  agent?: string;
  since?: string;
  until?: string;
  limit?: string;
  status?: string;
  version?: string;
  maxDiverged?: string;
  report?: string;
}

/**
 * `rein replay <runId>`: replays one run and prints the diff side by side. `rein replay
 * --agent A --since 24h ...`: a cohort; waits for it, writes the report, and returns 1 when
 * more than --max-diverged of its replays diverged or none was replayed (a CI gate), else 0.
 */
export async function replay(rein: ReinClient, runId: string | undefined, o: ReplayOptions): Promise<number> {
  const overrides = {
    ...(o.model ? { model: o.model } : {}),
    ...(o.instructionsFile ? { instructions: readFileSync(o.instructionsFile, 'utf8') } : {}),
    ...(o.version ? { version: o.version } : {}),
  };
  if (runId) {
    const started = await rein.runs.replay(runId, overrides);
    let run = await rein.runs.get(started.id);
    while (!TERMINAL_STATUSES.includes(run.status)) {
      await pause(250);
      run = await rein.runs.get(started.id);
    }
    process.stdout.write(renderDiff(await rein.runs.diff(started.id)));
    return 0;
  }
  if (!o.agent || !o.since || !o.limit) throw new Error('rein replay needs a run id, or --agent, --since and --limit');
  const max = threshold(o.maxDiverged ?? '100%');
  let view = await rein.replays.create({
    agent: o.agent,
    since: sinceInstant(o.since),
    ...(o.until ? { until: sinceInstant(o.until) } : {}),
    limit: Number(o.limit),
    ...(o.status ? { status: o.status as TerminalStatus } : {}),
    ...overrides,
  });
  while (view.status !== 'finished') {
    await pause(500);
    view = await rein.replays.get(view.id);
  }
  const report = cohortReport(view, max);
  if (o.report) writeFileSync(o.report, report);
  else process.stdout.write(report);
  const s = view.summary;
  if (nothingToJudge(view)) {
    process.stderr.write(`rein replay: nothing to judge: ${emptyReason(view)}\n`);
    return 1;
  }
  const verdict = `${s.diverged} of ${s.replayed} replays diverged; ${s.wouldNeedApprovals} new approvals; ${s.nowFail} would now fail`;
  if (crossed(view, max)) {
    process.stderr.write(`rein replay: over the threshold (${o.maxDiverged}): ${verdict}\n`);
    return 1;
  }
  process.stdout.write(`${verdict}\n`);
  return 0;
}
