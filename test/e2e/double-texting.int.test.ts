import { DemoStore } from '@rein/example-order-assistant';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { fleetPerFile, KEYS } from '../support/fleet.js';

const LATE_ORDER = '客户张三投诉订单 2024001 一直没发货，帮他处理一下';
const POLICY = 'What is your return policy?';
const RECALL = 'What did I ask before?';

/** Every model call takes 1.5 s: a run is still busy when the next message comes. */
const fleet = fleetPerFile({ modelLatencyMs: 1_500 });

let redis: Redis | undefined;
afterAll(() => redis?.disconnect());
const backOffice = () => {
  redis ??= new Redis(fleet().redisUrl);
  return new DemoStore(redis);
};

type Snapshot = { step: number; request: { messages: Array<{ role: string; content?: string | null }> } };
/** What the model was sent at a run's first step (admins read snapshots). */
async function firstRequest(runId: string): Promise<string> {
  const { body } = await fleet().callApi('GET', `/v1/runs/${runId}/snapshots`, KEYS.admin.key);
  return JSON.stringify((body.snapshots as Snapshot[]).find((s) => s.step === 0)?.request.messages);
}

describe('double-texting: a second message while a run of the session is active', () => {
  it('reject (the default) answers 409 session_busy', async () => {
    const user = fleet().client();
    const a = await user.runs.create({ input: POLICY, sessionId: 'dt-reject' });
    await expect(user.runs.create({ input: RECALL, sessionId: 'dt-reject' })).rejects.toMatchObject({ status: 409, code: 'session_busy' });
    await expect(user.runs.create({ input: RECALL, sessionId: 'dt-reject', ifBusy: 'reject' })).rejects.toMatchObject({
      status: 409,
      code: 'session_busy',
    });
    expect((await user.runs.wait(a.id)).status).toBe('succeeded');
  });

  it('enqueue: runs wait behind the active one and start in submission order, each with the turns before it', async () => {
    const user = fleet().client();
    const a = await user.runs.create({ input: POLICY, sessionId: 'dt-enqueue' });
    const b = await user.runs.create({ input: RECALL, sessionId: 'dt-enqueue', ifBusy: 'enqueue' });
    const c = await user.runs.create({ input: RECALL, sessionId: 'dt-enqueue', ifBusy: 'enqueue' });
    expect(b).toMatchObject({ status: 'queued', queuedBehind: a.id });
    expect(c).toMatchObject({ status: 'queued' });
    const [doneA, doneB, doneC] = [await user.runs.wait(a.id), await user.runs.wait(b.id), await user.runs.wait(c.id)];
    expect([doneA.status, doneB.status, doneC.status]).toEqual(['succeeded', 'succeeded', 'succeeded']);
    expect(doneB.finalAnswer).toContain(`Earlier you asked: "${POLICY}" (1 question(s) so far)`);
    expect(doneC.finalAnswer).toContain(`Earlier you asked: "${RECALL}" (2 question(s) so far)`);
    // One at a time: each started after the one before it finished.
    const traceB = await user.runs.trace(b.id);
    expect(Date.parse(doneB.updatedAt) - traceB.elapsedMs).toBeGreaterThanOrEqual(Date.parse(doneA.updatedAt) - 5_000);
    const session = await user.sessions.get('dt-enqueue');
    expect(session.runs.map((r) => [r.id, r.status])).toEqual([
      [a.id, 'succeeded'],
      [b.id, 'succeeded'],
      [c.id, 'succeeded'],
    ]);
    expect(session.runs.every((r) => r.queuedBehind === undefined)).toBe(true);
  });

  it('interrupt: the active run is cancelled `interrupted`, and the new one starts with that turn marked interrupted', async () => {
    const user = fleet().client();
    const a = await user.runs.create({ input: POLICY, sessionId: 'dt-interrupt' });
    await fleet().waitForRun(a.id, (r) => r.status === 'running');
    const b = await user.runs.create({ input: RECALL, sessionId: 'dt-interrupt', ifBusy: 'interrupt' });
    expect(b).toMatchObject({ status: 'queued', queuedBehind: a.id });
    const doneB = await user.runs.wait(b.id);
    expect(doneB.status).toBe('succeeded');
    expect(await user.runs.get(a.id)).toMatchObject({
      status: 'cancelled',
      reason: 'interrupted',
      interruption: { by: b.id, rollback: false },
    });
    expect(doneB.finalAnswer).toContain(`Earlier you asked: "${POLICY}"`);
    expect(await firstRequest(b.id)).toContain('[interrupted: the user wrote again before this was answered]');
  });

  it('rollback: the interrupted run’s ticket is undone through its saga, and the new run starts after, without that turn', async () => {
    const user = fleet().client();
    const approver = fleet().client(KEYS.approver.key);
    const tickets = () => backOffice().tickets(KEYS.user.tenantId, '2024001');
    const before = (await tickets()).length;
    const a = await user.runs.create({ input: LATE_ORDER, sessionId: 'dt-rollback' });
    const parked = await fleet().waitForRun(a.id, (r) => r.status === 'pending_approval');
    await approver.approvals.approve(parked.pendingApprovals[0]?.id ?? '');
    // The ticket exists; the run is still busy with its last model call.
    const end = Date.now() + 30_000;
    while ((await tickets()).length === before && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
    const b = await user.runs.create({ input: RECALL, sessionId: 'dt-rollback', ifBusy: 'rollback' });
    expect(b).toMatchObject({ status: 'queued', queuedBehind: a.id });

    // The agent's policy is `ask`: the undo waits for an approver, and the new run waits for the undo.
    const interrupted = await fleet().waitForRun(a.id, (r) => r.status === 'cancelled');
    expect(interrupted).toMatchObject({ reason: 'interrupted', interruption: { by: b.id, rollback: true } });
    const plan = await (async () => {
      for (let i = 0; i < 300; i++) {
        const { approvals } = await approver.approvals.list({ status: 'pending' });
        const found = approvals.find((x) => x.runId === a.id);
        if (found) return found;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error('no undo plan to approve');
    })();
    expect((await user.runs.get(b.id)).status).toBe('queued');
    await approver.approvals.approve(plan.id);

    const doneB = await user.runs.wait(b.id);
    expect(doneB.status).toBe('succeeded');
    const created = (await tickets()).slice(before);
    expect(created).toHaveLength(1);
    expect(created[0]?.status).toBe('cancelled');
    expect((await user.runs.get(a.id)).compensation).toMatchObject({ status: 'done', steps: [{ tool: 'create_ticket', status: 'done' }] });
    // The rolled-back turn is not in the new run's conversation.
    expect(doneB.finalAnswer).toContain('you have not asked anything before');
    expect(await firstRequest(b.id)).not.toContain('2024001');
    const session = await user.sessions.get('dt-rollback');
    expect(session.runs.map((r) => [r.id, r.status, r.reason])).toEqual([
      [a.id, 'cancelled', 'interrupted'],
      [b.id, 'succeeded', 'completed'],
    ]);
  });
});
