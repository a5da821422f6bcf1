import { createHash } from 'node:crypto';
import { MISSED_COUNT_LIMIT, type MissedFirings } from '@rein/contract';
import cronParser from 'cron-parser';
import { InvalidRequestError } from '../../shared/errors.js';

/**
 * Cron expressions and fire times, with the parser BullMQ's job schedulers use
 * (cron-parser, pinned to BullMQ's version), so what is validated here is what fires.
 * Pure: values in, values out.
 */

const parse = (cron: string, timezone: string, at: number) => cronParser.parseExpression(cron, { tz: timezone, currentDate: new Date(at) });

/** Throws a 400 naming what is wrong with the expression or the time zone. */
export function checkCron(cron: string, timezone: string): void {
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone });
  } catch {
    throw new InvalidRequestError(`timezone: "${timezone}" is not an IANA time zone`, 'invalid_timezone');
  }
  const fields = cron.trim().split(/\s+/).length;
  if (fields !== 5 && fields !== 6)
    throw new InvalidRequestError(`cron: ${fields} fields; a cron expression has 5, or 6 with seconds first`, 'invalid_cron');
  try {
    parse(cron, timezone, Date.now()).next();
  } catch (err) {
    throw new InvalidRequestError(`cron: ${(err as Error).message}`, 'invalid_cron');
  }
}

/** The first fire time strictly after `at` (ms). */
export const nextFireAt = (cron: string, timezone: string, at: number): number => parse(cron, timezone, at).next().getTime();

/** The next `count` fire times strictly after `at` (ms), for a person to check an expression against. */
export function nextFireTimes(cron: string, timezone: string, at: number, count: number): number[] {
  const times = parse(cron, timezone, at);
  return Array.from({ length: count }, () => times.next().getTime());
}

/** The latest fire time at or before `at` (ms). */
export const latestFireAt = (cron: string, timezone: string, at: number): number =>
  parse(cron, timezone, at + 1)
    .prev()
    .getTime();

/**
 * A firing is missed when, by the time it is taken up, the schedule's next fire time has
 * passed too: the fleet was down (or Redis was) across at least one whole interval.
 */
export const isMissed = (cron: string, timezone: string, scheduledFor: number, now: number): boolean =>
  nextFireAt(cron, timezone, scheduledFor) <= now;

/**
 * The run of one firing: the same id whichever process fires it and however often
 * (a UUID-shaped digest of schedule id and fire time), so the create path's
 * "already exists" makes a firing start one run across the fleet.
 */
export function scheduledRunId(scheduleId: string, fireAt: number): string {
  const h = createHash('sha256').update(`schedule:${scheduleId}:${fireAt}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * The fire times from `from` (itself one) up to but not including `before`, which one
 * outage swallowed: counted up to MISSED_COUNT_LIMIT (then `capped`), the last exact either way.
 */
export function missedFirings(cron: string, timezone: string, from: number, before: number): MissedFirings {
  const times = parse(cron, timezone, from);
  let count = 1;
  let capped = false;
  while (times.next().getTime() < before) {
    if (count === MISSED_COUNT_LIMIT) {
      capped = true;
      break;
    }
    count++;
  }
  return {
    count,
    first: new Date(from).toISOString(),
    last: new Date(latestFireAt(cron, timezone, before - 1)).toISOString(),
    ...(capped ? { capped: true as const } : {}),
  };
}
