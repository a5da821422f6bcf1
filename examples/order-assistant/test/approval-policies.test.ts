import type { Tool } from '@rein/core';
import { stricterOf } from '@rein/core/internal';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { DemoStore } from '../src/demo-store.js';
import { PolicySearch } from '../src/policy-search.js';
import { createOrderTools } from '../src/tools.js';

// Policies are pure functions of the validated arguments; no Redis is touched here.
const tools = new Map(createOrderTools({ store: new DemoStore({} as Redis), policies: new PolicySearch() }).map((t) => [t.name, t]));
const ctx = { tenantId: 'acme', userId: 'alice', roles: ['user' as const], runId: 'r', step: 0, toolCallId: 'c', idempotencyKey: 'r:0:c' };
const judge = (name: string, args: unknown) => {
  const tool = tools.get(name) as Tool;
  return tool.approval(tool.parameters.parse(args), ctx);
};

describe('approval policies of the demo tools', () => {
  it('lets read tools run without approval', () => {
    expect(judge('query_order', { orderNo: '2024001' })).toBeNull();
    expect(judge('search_policy', { query: '退货' })).toBeNull();
  });

  it('makes tickets and notes high risk, decidable by the requester or an approver; e-mails need an approver', () => {
    expect(judge('create_ticket', { orderNo: '2024001', type: '超时发货', priority: 'high', suggestedAction: '补偿 44.95 元' })).toEqual({
      risk: 'high',
      requiredRole: 'user',
      summary: 'Create a high-priority "超时发货" ticket on order 2024001: 补偿 44.95 元',
      context: { order: '2024001', ticketType: '超时发货', priority: 'high' },
    });
    expect(judge('update_order_note', { orderNo: 'A12345', note: 'VIP' })).toMatchObject({ risk: 'high', requiredRole: 'user' });
    expect(judge('send_email', { to: 'a@example.com', subject: 's', body: 'b' })).toMatchObject({ risk: 'high', requiredRole: 'approver' });
  });

  it('makes a refund over 500 critical (supervisor), and up to 500 high', () => {
    expect(judge('submit_refund', { orderNo: '2024001', amount: 800, reason: 'late' })).toEqual({
      risk: 'critical',
      requiredRole: 'supervisor',
      summary: 'Refund 800.00 on order 2024001: late',
    });
    expect(judge('submit_refund', { orderNo: '2024001', amount: 500, reason: 'late' })).toMatchObject({
      risk: 'high',
      requiredRole: 'user',
    });
  });

  it("accepts the seeds' ticket priorities (高/中/低) and any case of the English ones, normalised", () => {
    const ticket = (priority: string) =>
      (tools.get('create_ticket') as Tool).parameters.parse({ orderNo: '2024001', type: '超时发货', priority, suggestedAction: 'x' });
    expect(
      [ticket('高'), ticket('中'), ticket('低'), ticket('HIGH'), ticket(' Normal ')].map((a) => (a as { priority: string }).priority),
    ).toEqual(['high', 'normal', 'low', 'high', 'normal']);
    expect(() => ticket('urgent')).toThrow();
  });

  it('never lets an edit need less than the original call', () => {
    const critical = { risk: 'critical' as const, requiredRole: 'supervisor' as const, summary: 'Refund 800.00' };
    const high = { risk: 'high' as const, requiredRole: 'approver' as const, summary: 'Refund 40.00' };
    expect(stricterOf(critical, high)).toEqual({ risk: 'critical', requiredRole: 'supervisor', summary: 'Refund 40.00' });
    expect(stricterOf(high, critical)).toEqual(critical);
    expect(stricterOf(high, null)).toEqual(high);
  });
});
