import type { ReinClient } from '@rein/client';
import { commandHelp } from './help.js';

type VersionList = Awaited<ReturnType<ReinClient['versions']['list']>>;

/** `rein versions`: the table; `promote <v>`; `upgrade <v> [--to V]`. */
export async function versions(rein: ReinClient, args: string[], opts: { force: boolean; to?: string }): Promise<void> {
  const [sub, version] = args;
  if (sub === undefined) return print(await rein.versions.list());
  if (!version || (sub !== 'promote' && sub !== 'upgrade')) throw new Error(`rein versions: unknown arguments\n${commandHelp('versions')}`);
  if (sub === 'promote') {
    print(await rein.versions.promote(version, opts.force ? { force: true } : {}));
    return;
  }
  const moved = await rein.versions.upgrade(version, opts.to ? { to: opts.to } : {});
  process.stdout.write(
    `upgrading ${moved.from} → ${moved.to}: ${moved.runs} run(s) move at their next step, ${moved.jobs} waiting job(s) moved now\n`,
  );
}

function print(list: VersionList): void {
  const rows = list.versions.map((v) => [
    `${v.current ? '*' : ' '} ${v.version}`,
    String(v.workers),
    Object.entries(v.runs)
      .map(([status, n]) => `${status} ${n}`)
      .join(', ') || '-',
    String(v.pendingApprovals),
    v.jobs === undefined ? '-' : String(v.jobs),
    v.upgradingTo ? `→ ${v.upgradingTo}` : v.promoted ? 'promoted' : '',
    v.lastSeen,
  ]);
  const head = ['  version', 'workers', 'unfinished runs', 'approvals', 'jobs', '', 'last seen'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  for (const row of [head, ...rows])
    process.stdout.write(
      `${row
        .map((c, i) => c.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd()}\n`,
    );
}
