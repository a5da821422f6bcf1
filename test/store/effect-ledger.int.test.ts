import type { RunRecord } from '@rein/contract';
import { describe, expect, it } from 'vitest';
import { BACKENDS, type BackendKind, useBackend } from './backends.js';
import { event, runRecord, TTL_SECONDS } from './fixtures.js';

/** The EffectLedger port's behaviours (I4) on one Redis, a 3-master cluster and the in-memory fake. */
describe.each<BackendKind>(BACKENDS)('the effect ledger on %s', (kind) => {
  const backend = useBackend(kind, TTL_SECONDS);

  async function live(): Promise<RunRecord> {
    const run = runRecord();
    await backend().runs.create(run, { role: 'user', content: run.input }, event(run, 'run.queued'));
    return run;
  }

  it('records an intent once: a second intent gets the first back, a result replaces it', async () => {
    const { ledger } = backend();
    const run = await live();
    expect(await ledger.recordIntent(run.id, 'k1', 'send_invite')).toBeNull();
    expect(await ledger.recordIntent(run.id, 'k1', 'send_invite')).toEqual(
      expect.objectContaining({ state: 'intent', tool: 'send_invite' }),
    );
    expect(await ledger.recordHandle(run.id, 'k1', 'send_invite', 'job-7')).toBe(true);
    expect(await ledger.get(run.id, 'k1')).toEqual(expect.objectContaining({ state: 'intent', handle: 'job-7' }));
    expect(await ledger.recordResult(run.id, 'k1', 'send_invite', true, 'sent')).toBe(true);
    expect(await ledger.get(run.id, 'k1')).toEqual(expect.objectContaining({ state: 'done', ok: true, observation: 'sent' }));
    expect(await ledger.get(run.id, 'k2')).toBeNull();
  });

  it('withdraws an intent whose call never started', async () => {
    const run = await live();
    await backend().ledger.recordIntent(run.id, 'k1', 'send_invite');
    await backend().ledger.clearIntent(run.id, 'k1');
    expect(await backend().ledger.get(run.id, 'k1')).toBeNull();
    expect(await backend().ledger.recordIntent(run.id, 'k1', 'send_invite')).toBeNull();
  });

  it("refuses a step's writes once the run's terminal commit dropped the ledger, and for a run that does not exist", async () => {
    const { ledger, runs } = backend();
    const run = await live();
    await ledger.recordIntent(run.id, 'k1', 'send_invite');
    await runs.compareAndSet({ from: run, to: { ...run, status: 'cancelled', reason: 'cancelled' } });
    expect(await ledger.get(run.id, 'k1')).toBeNull();
    expect(await ledger.recordIntent(run.id, 'k2', 'send_invite')).toBe('finished');
    expect(await ledger.recordHandle(run.id, 'k1', 'send_invite', 'job-7')).toBe(false);
    expect(await ledger.recordResult(run.id, 'k1', 'send_invite', true, 'sent')).toBe(false);
    expect(await ledger.get(run.id, 'k1')).toBeNull();
    expect(await ledger.recordIntent('no-such-run', 'k1', 'send_invite')).toBe('finished');
  });

  it("writes an undo's entries after the run finished", async () => {
    const { ledger, runs } = backend();
    const run = await live();
    await runs.compareAndSet({ from: run, to: { ...run, status: 'succeeded', finalAnswer: 'done' } });
    expect(await ledger.recordIntent(run.id, 'undo:k1', 'cancel_invite', 'undo')).toBeNull();
    expect(await ledger.recordResult(run.id, 'undo:k1', 'cancel_invite', true, 'cancelled', 'undo')).toBe(true);
    expect(await ledger.get(run.id, 'undo:k1')).toEqual(expect.objectContaining({ state: 'done', ok: true }));
  });
});
