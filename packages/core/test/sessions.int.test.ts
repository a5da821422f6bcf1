import type { Principal } from '@rein/contract';
import { describe, expect, it } from 'vitest';
import { ConflictError } from '../src/shared/errors.js';
import { tenantKeys } from '../src/shared/keys.js';
import { createFakeModel, toolCall } from '../src/testing/fake-model.js';
import { harnessPerTest, USER } from './harness.js';

const use = harnessPerTest();
const conversation = (model: ReturnType<typeof createFakeModel>, call: number) =>
  (model.requests[call]?.messages ?? []).filter((m) => m.role !== 'system').map((m) => [m.role, m.content]);

describe('sessions', () => {
  it("starts a session's next run with the earlier runs' inputs and final answers", async () => {
    const model = createFakeModel([{ content: 'first answer' }, { content: 'second answer' }]);
    const t = use(model);
    await t.runs.submit(USER, { input: 'first question', sessionId: 's1' });
    await t.drain();
    const { run } = await t.runs.submit(USER, { input: 'second question', sessionId: 's1' });
    await t.drain();
    expect(conversation(model, 1)).toEqual([
      ['user', 'first question'],
      ['assistant', 'first answer'],
      ['user', 'second question'],
    ]);
    expect((await t.runs.get(USER, run.id)).finalAnswer).toBe('second answer');
  });

  it('keeps sessions apart per user and per session id', async () => {
    const model = createFakeModel([{ content: 'answer' }]);
    const t = use(model);
    const colleague: Principal = { ...USER, userId: 'carol' };
    await t.runs.submit(USER, { input: 'alice asks', sessionId: 's1' });
    await t.drain();
    await t.runs.submit(colleague, { input: 'carol asks', sessionId: 's1' }); // same id, other user
    await t.runs.submit(USER, { input: 'alice elsewhere', sessionId: 's2' });
    await t.drain();
    expect(conversation(model, 1)).toEqual([['user', 'carol asks']]);
    expect(conversation(model, 2)).toEqual([['user', 'alice elsewhere']]);
    expect((await t.runs.session(USER, 's1')).runs.map((r) => r.input)).toEqual(['alice asks']);
    expect((await t.runs.session(colleague, 's1')).runs.map((r) => r.input)).toEqual(['carol asks']);
    await expect(t.runs.session(colleague, 's2')).rejects.toMatchObject({ status: 404 });
  });

  it('answers 409 session_busy while a run of the session is active, and frees it when that run ends', async () => {
    const t = use(createFakeModel([{ content: 'done' }]));
    const { run } = await t.runs.submit(USER, { input: 'first', sessionId: 's1' });
    const busy = t.runs.submit(USER, { input: 'second', sessionId: 's1' });
    await expect(busy).rejects.toBeInstanceOf(ConflictError);
    await expect(busy).rejects.toMatchObject({ code: 'session_busy', status: 409 });
    expect(await t.redis.scard(tenantKeys(USER.tenantId).active)).toBe(1); // the refused run gave its quota slot back
    await t.runs.cancel(USER, run.id);
    const next = await t.runs.submit(USER, { input: 'second', sessionId: 's1' });
    expect(next.created).toBe(true);
  });

  it('admits exactly one of 20 concurrent submits to one session (a claimed, not yet created holder is busy)', async () => {
    const t = use(createFakeModel([{ content: 'done' }]));
    for (let round = 0; round < 5; round++) {
      const sessionId = `race-${round}`;
      const results = await Promise.allSettled(Array.from({ length: 20 }, (_, n) => t.runs.submit(USER, { input: `q${n}`, sessionId })));
      const admitted = results.filter((r) => r.status === 'fulfilled');
      const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect(admitted).toHaveLength(1);
      expect(refused.every((r) => r.reason?.code === 'session_busy')).toBe(true);
    }
  });

  it('replaces a claim whose run was never created once the claim lapses, and refuses while it is fresh', async () => {
    const t = use(createFakeModel([{ content: 'done' }]));
    const key = tenantKeys(USER.tenantId).sessionActive(USER.userId, 'orphan');
    // A creator that crashed between its claim and the run's creation, 60 s ago.
    const time = await t.redis.time();
    await t.redis.set(key, `ghost ${Number(time[0]) * 1000 - 60_000}`);
    expect((await t.runs.submit(USER, { input: 'after a crash', sessionId: 'orphan' })).created).toBe(true);
    // A fresh claim of a run not created yet holds the session.
    await t.redis.set(key, `ghost ${Number(time[0]) * 1000}`);
    await expect(t.runs.submit(USER, { input: 'too early', sessionId: 'orphan' })).rejects.toMatchObject({ code: 'session_busy' });
  });

  it('drops the oldest turns first to fit the token window', async () => {
    const model = createFakeModel([{ content: 'ok' }]);
    // Each turn here is "turn N" + "ok": a few tokens; a window of ~2 turns keeps only the newest two.
    const t = use(model, { sessions: { windowTokens: 40 } });
    for (const n of [1, 2, 3, 4]) {
      await t.runs.submit(USER, { input: `turn ${n}`, sessionId: 'long' });
      await t.drain();
    }
    const users = conversation(model, 3)
      .filter(([role]) => role === 'user')
      .map(([, c]) => c);
    expect(users[users.length - 1]).toBe('turn 4');
    expect(users).not.toContain('turn 1');
    expect(users.slice(0, -1)).toEqual(['turn 1', 'turn 2', 'turn 3'].slice(-(users.length - 1)));
    expect(users.length).toBeGreaterThan(1);
  });

  it('carries tool calls and results only when the setting asks for it', async () => {
    const turns = [{ toolCalls: [toolCall('c1', 'query_order', { orderNo: 'A12345' })] }, { content: 'shipped' }, { content: 'next' }];
    for (const toolTraffic of [false, true]) {
      const model = createFakeModel(turns);
      const t = use(model, { sessions: { toolTraffic } });
      await t.runs.submit(USER, { input: 'where is A12345?', sessionId: `tt-${toolTraffic}` });
      await t.drain();
      await t.runs.submit(USER, { input: 'thanks', sessionId: `tt-${toolTraffic}` });
      await t.drain();
      const roles = conversation(model, 2).map(([role]) => role);
      expect(roles).toEqual(toolTraffic ? ['user', 'assistant', 'tool', 'assistant', 'user'] : ['user', 'assistant', 'user']);
      await t.redis.flushdb();
    }
  });
});

describe('session marker', () => {
  it('replaces a holder that finished without releasing the session (a crash between commit and release)', async () => {
    const t = use(createFakeModel([{ content: 'done' }]));
    const { run } = await t.runs.submit(USER, { input: 'first', sessionId: 's1' });
    await t.drain();
    // The release was lost: the marker still names the finished run.
    await t.redis.set(tenantKeys(USER.tenantId).sessionActive(USER.userId, 's1'), `${run.id} ${Date.now()}`);
    const next = await t.runs.submit(USER, { input: 'second', sessionId: 's1' });
    expect(next.created).toBe(true);
    expect(await t.redis.get(tenantKeys(USER.tenantId).sessionActive(USER.userId, 's1'))).toMatch(new RegExp(`^${next.run.id} \\d+$`));
  });
});
