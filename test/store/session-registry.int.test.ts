import type { RunRecord } from '@rein/contract';
import { describe, expect, it } from 'vitest';
import { BACKENDS, type BackendKind, useBackend } from './backends.js';
import { event, iso, runRecord, T0, TTL_SECONDS } from './fixtures.js';

/** The SessionRegistry port's behaviours on one Redis, a 3-master cluster and the in-memory fake. */
describe.each<BackendKind>(BACKENDS)('the session registry on %s', (kind) => {
  const backend = useBackend(kind, TTL_SECONDS);

  const inSession = (over: Partial<RunRecord> = {}) => runRecord({ sessionId: 's1', ...over });
  async function created(run: RunRecord): Promise<RunRecord> {
    await backend().runs.create(run, { role: 'user', content: run.input }, event(run, 'run.queued'));
    return run;
  }

  it("gives a free session to the first run and answers the live holder to the others, until the holder's run ends", async () => {
    const { sessions, runs } = backend();
    const first = await created(inSession());
    expect(await sessions.claimSession(first)).toBeNull();
    expect(await sessions.claimSession(first)).toBeNull(); // renewed by its holder
    const second = inSession();
    expect(await sessions.claimSession(second)).toBe(first.id);
    expect(await sessions.sessionHolder(second)).toBe(first.id);
    const ended = await runs.compareAndSet({ from: first, to: { ...first, status: 'succeeded', finalAnswer: 'done' } });
    expect(await sessions.claimSession(second)).toBeNull();
    expect(await sessions.sessionHolder(ended)).toBe(second.id);
  });

  it('counts a holder whose run is not created yet as busy (it is being created)', async () => {
    const first = inSession();
    expect(await backend().sessions.claimSession(first)).toBeNull();
    expect(await backend().sessions.claimSession(inSession())).toBe(first.id);
  });

  it("frees the session at its holder's terminal commit, and only for its holder", async () => {
    const { sessions, runs } = backend();
    const holder = await created(inSession());
    await sessions.claimSession(holder);
    await sessions.releaseSession(inSession());
    expect(await sessions.sessionHolder(holder)).toBe(holder.id);
    const ended = await runs.compareAndSet({ from: holder, to: { ...holder, status: 'failed', reason: 'internal_error' } });
    await runs.afterCommit(holder, ended, []);
    expect(await sessions.sessionHolder(holder)).toBeNull();
  });

  it('lets only the head of the queue claim while runs wait, in the order they joined', async () => {
    const { sessions } = backend();
    const [a, b] = [inSession(), inSession()];
    await sessions.joinSessionQueue(a);
    await sessions.joinSessionQueue(b);
    expect(await sessions.sessionQueueHead({ tenantId: 'acme', userId: 'alice', sessionId: 's1' })).toBe(a.id);
    expect(await sessions.claimSession(b)).toBe(a.id);
    await sessions.leaveSessionQueue(a);
    expect(await sessions.sessionQueueHead({ tenantId: 'acme', userId: 'alice', sessionId: 's1' })).toBe(b.id);
    expect(await sessions.claimSession(b)).toBeNull();
    await sessions.leaveSessionQueue(b);
    expect(await sessions.sessionQueueHead({ tenantId: 'acme', userId: 'alice', sessionId: 's1' })).toBeNull();
  });

  it("lists a session's runs oldest first, and copies them to a session without runs only", async () => {
    const { sessions } = backend();
    const older = await created(inSession({ createdAt: iso(T0) }));
    const newer = await created(inSession({ createdAt: iso(T0 + 1000) }));
    await created(inSession({ sessionId: 'other' }));
    expect(await sessions.sessionRunIds('acme', 'alice', 's1')).toEqual([older.id, newer.id]);
    expect(await sessions.sessionRunIds('acme', 'alice', 's1', 1)).toEqual([newer.id]);
    expect(await sessions.copySession('acme', 'alice', 's1', 'copy')).toBe(true);
    expect(await sessions.sessionRunIds('acme', 'alice', 'copy')).toEqual([older.id, newer.id]);
    expect(await sessions.copySession('acme', 'alice', 's1', 'other')).toBe(false);
  });

  it('does nothing for a run without a session', async () => {
    const { sessions } = backend();
    const run = runRecord();
    expect(await sessions.claimSession(run)).toBeNull();
    await sessions.joinSessionQueue(run);
    expect(await sessions.sessionHolder(run)).toBeNull();
  });
});
