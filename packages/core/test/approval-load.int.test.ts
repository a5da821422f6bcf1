import type { Principal } from '@rein/contract';
import { describe, expect, it } from 'vitest';
import { createFakeModel, toolCall } from '../src/testing/index.js';
import { APPROVER, harnessPerTest, USER } from './harness.js';

const use = harnessPerTest();
const DAVE: Principal = { tenantId: 'acme', userId: 'dave', roles: ['approver'] };
const OTHER_TENANT: Principal = { tenantId: 'globex', userId: 'bob', roles: ['approver'] };
const MIN = 60_000;

/** Each run asks for one ticket, then answers once it has heard the decision. */
const ticketModel = () =>
  createFakeModel([
    (req) =>
      req.messages.some((m) => m.role === 'tool')
        ? { content: 'done' }
        : {
            toolCalls: [toolCall('w1', 'create_ticket', { orderNo: '2024001', type: '超时发货', priority: 'high', suggestedAction: 'x' })],
          },
  ]);

describe('approval load', () => {
  it('measures time to decision, decisions per approver, the share within the SLA and expiries, in /metrics and in the load answer', async () => {
    let clock = Date.parse('2026-11-29T10:00:00Z');
    // bob holds a static key (a bounded label); dave signed in through the company's provider.
    const t = use(ticketModel(), { approvalTtlMs: 60 * MIN, now: () => clock, deciders: [{ tenantId: 'acme', userId: 'bob' }] });
    const ids = [await t.submit('ticket one'), await t.submit('ticket two'), await t.submit('ticket three')];
    await t.drain();
    const pending = (await t.approvals.list(APPROVER, { status: 'pending', limit: 100 })).approvals;
    const of = (runId: string) => pending.find((a) => a.runId === runId)?.id ?? '';
    expect(pending).toHaveLength(3);

    clock += 2 * MIN; // within the 10-minute SLA
    await t.approvals.decide(APPROVER, of(ids[0] as string), { kind: 'approve' });
    clock += 18 * MIN; // past it
    await t.approvals.decide(DAVE, of(ids[1] as string), { kind: 'reject', reason: 'not now' });
    clock += 40 * MIN + 1; // the third one's expiry
    expect(await t.approvals.expireDue(ids[2] as string, 0)).toBe(1);

    const load = await t.approvals.load(APPROVER, { hours: 24 });
    expect(load).toMatchObject({ slaMs: 10 * MIN, asked: 3, pending: 0, decided: 2, expired: 1, withinSla: 1 / 3 });
    expect(load.timeToDecision).toEqual([{ tool: 'create_ticket', risk: 'high', decided: 2, p50Ms: 2 * MIN, p95Ms: 20 * MIN }]);
    expect(load.deciders).toEqual([
      { userId: 'bob', decided: 1, perHour: 1 / 24 },
      { userId: 'dave', decided: 1, perHour: 1 / 24 },
    ]);
    expect(load.truncated).toBeUndefined();
    // A window that ends before they were asked for counts none of them; other tenants and plain users see nothing of it.
    clock += 3 * 3_600_000;
    expect((await t.approvals.load(APPROVER, { hours: 1 })).asked).toBe(0);
    expect((await t.approvals.load(OTHER_TENANT, { hours: 24 })).asked).toBe(0);
    await expect(t.approvals.load(USER, { hours: 24 })).rejects.toMatchObject({ status: 403 });

    const text = await t.metrics.registry.metrics();
    // The service label (every sample carries it) left out, labels compared as written.
    const sample = (re: RegExp) => Number(re.exec(text.replace(/,?service="test"/g, '').replace(/\{,/g, '{'))?.[1]);
    expect(sample(/rein_approval_sla_total\{tool="create_ticket",risk="high",met="true"\} (\d+)/)).toBe(1);
    expect(sample(/rein_approval_sla_total\{tool="create_ticket",risk="high",met="false"\} (\d+)/)).toBe(2);
    expect(sample(/rein_approval_decisions_by_decider_total\{tenant="acme",decider="bob"\} (\d+)/)).toBe(1);
    // Not a key's user: counted, under one label however many such people decide.
    expect(sample(/rein_approval_decisions_by_decider_total\{tenant="acme",decider="company"\} (\d+)/)).toBe(1);
    expect(text).not.toMatch(/decider="dave"/);
    expect(sample(/rein_approval_wait_seconds_count\{tool="create_ticket",risk="high",decision="approved"\} (\d+)/)).toBe(1);
    expect(sample(/rein_approval_wait_seconds_bucket\{le="300",tool="create_ticket",risk="high",decision="approved"\} (\d+)/)).toBe(1);
    expect(sample(/rein_approvals_decided_total\{tool="create_ticket",decision="expired"\} (\d+)/)).toBe(1);
  });
});
