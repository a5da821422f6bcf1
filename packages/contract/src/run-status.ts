/**
 * The run statuses as plain lists, without zod: browser code (the client, the console)
 * imports them and bundles no schema; `run.ts` builds the schemas from them.
 * `waiting`: parked until every sub-agent run its step started has ended (like `pending_approval` for approvals).
 */
export const RUN_STATUSES = ['queued', 'running', 'pending_approval', 'waiting', 'succeeded', 'failed', 'cancelled'] as const;

/** The statuses a run ends in: the one list (a new ending is added here, and where a run ends with it: run-transitions). */
export const ENDINGS = ['succeeded', 'failed', 'cancelled'] as const satisfies readonly (typeof RUN_STATUSES)[number][];

/** The same, typed as any status, so `TERMINAL_STATUSES.includes(run.status)` reads. */
export const TERMINAL_STATUSES: readonly (typeof RUN_STATUSES)[number][] = ENDINGS;
