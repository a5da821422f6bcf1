import { createArchivePool, loadMigrations, loadOptionsOrExit, migrateArchive } from '@rein/core/cli';
import { fleetClient } from './fleet-client.js';

/** `rein migrate`: applies the archive's migrations not yet applied (several at once are safe: they queue on a lock). */
export async function migrate(): Promise<string> {
  const { archive } = loadOptionsOrExit();
  // Nothing to do rather than a failure: a deployment (compose) may run it with the archive off.
  if (!archive.url) return 'no archive configured (REIN_ARCHIVE_URL is unset): nothing to migrate';
  const pool = createArchivePool(archive.url, { max: 1, applicationName: 'rein-migrate', statementTimeoutMs: 0 });
  try {
    const ran = await migrateArchive(pool);
    const latest = loadMigrations().length;
    return ran.length
      ? `applied ${ran.map((v) => String(v).padStart(4, '0')).join(', ')}; the archive is at version ${latest}`
      : `the archive is up to date (version ${latest})`;
  } finally {
    await pool.end();
  }
}

const DAY_MS = 86_400_000;

/** `rein usage`: the tenant's usage from the archive, as a table (the caller must be an approver or admin). */
export async function usage(opts: { from?: string; to?: string; groupBy?: string }): Promise<string> {
  const to = opts.to ?? new Date().toISOString();
  const from = opts.from ?? new Date(Date.parse(to) - 7 * DAY_MS).toISOString();
  const groupBy = (opts.groupBy ?? 'day') as 'agent' | 'model' | 'user' | 'day' | 'mode';
  const { rows } = await fleetClient().rein.usage({ from, to, groupBy });
  const header = [groupBy, 'runs', 'failed', 'steps', 'prompt', 'completion', 'cost USD', 'p50 ms', 'p95 ms'];
  const lines = rows.map((r) => [
    r.key,
    String(r.runs),
    String(r.failed),
    String(r.steps),
    String(r.promptTokens),
    String(r.completionTokens),
    r.costUsd.toFixed(4),
    String(Math.round(r.p50DurationMs)),
    String(Math.round(r.p95DurationMs)),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] as string).length)));
  const row = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  ');
  return [`usage ${from} → ${to}`, row(header), ...lines.map(row), ...(rows.length ? [] : ['(no archived runs in this window)'])].join(
    '\n',
  );
}
