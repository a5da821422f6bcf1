import type { RunEvent, RunEventType } from '@rein/contract';

export const runEvent = (type: RunEventType, runId: string, step: number | undefined, data: Record<string, unknown> = {}): RunEvent => ({
  type,
  runId,
  ...(step === undefined ? {} : { step }),
  at: new Date().toISOString(),
  data,
});
