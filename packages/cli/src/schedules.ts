import type { ScheduleDetail, ScheduleView } from '@rein/client';

/** `rein schedules`: one line per schedule. */
export function renderSchedules(schedules: ScheduleView[]): string {
  if (schedules.length === 0) return 'no schedules\n';
  const rows = schedules.map((s) =>
    [s.id, s.enabled ? 'on ' : 'off', `${s.cron} (${s.timezone})`, `next ${s.nextRunAt ?? '-'}`, s.agent, s.input.slice(0, 40)].join('  '),
  );
  return `${rows.join('\n')}\n`;
}

/** `rein schedules <id>`: the schedule, then its latest firings, newest first. */
export function renderSchedule(s: ScheduleDetail): string {
  const head = `${renderSchedules([s])}overlap ${s.overlap}  catchUp ${s.catchUp}  owner ${s.userId}\n`;
  const firings = s.history.map((f) => `  ${f.scheduledFor}  ${f.outcome.padEnd(7)}  ${f.runId ?? ''}  ${f.reason ?? ''}`.trimEnd());
  return `${head}${firings.length ? `\n${firings.join('\n')}\n` : '\nno firings yet\n'}`;
}
