import { RUN_STATUSES, TERMINAL_STATUSES } from '@rein/contract';

/** How the console writes numbers, times and durations. */

export const ms = (n: number | undefined): string => {
  if (n === undefined) return '—';
  if (n < 1000) return `${Math.round(n)} ms`;
  const s = n / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m}m ${Math.round(s % 60)}s` : `${Math.floor(m / 60)}h ${m % 60}m`;
};

export const usd = (n: number | undefined): string => (n === undefined ? '—' : `$${n < 0.01 && n > 0 ? n.toFixed(5) : n.toFixed(2)}`);

export const tokens = (n: number | undefined): string => (n === undefined ? '—' : n.toLocaleString('en-US'));

export const when = (iso: string | undefined): string => {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toISOString().replace('T', ' ').slice(0, 19);
};

export const ago = (iso: string, now = Date.now()): string => `${ms(Math.max(0, now - Date.parse(iso)))} ago`;

export const pretty = (v: unknown): string => (typeof v === 'string' ? v : (JSON.stringify(v, null, 2) ?? String(v)));

/** The contract's plain lists (they bundle no zod), as strings the pages compare what the API answers with. */
export const TERMINAL: readonly string[] = TERMINAL_STATUSES;
export const STATUSES: readonly string[] = RUN_STATUSES;

/** An instant as a wall clock in an IANA time zone, with its offset: what a schedule's cron means there. */
export const inZone = (iso: string | null | undefined, timeZone: string): string => {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  try {
    return new Intl.DateTimeFormat('sv-SE', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      timeZoneName: 'shortOffset',
    }).format(d);
  } catch {
    return when(iso); // a zone this browser does not know: UTC, as `when` writes it
  }
};
