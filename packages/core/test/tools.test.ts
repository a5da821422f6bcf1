import type { Role, TenantRole } from '@rein/contract';
import { defineTool, parseToolArguments, toolSpec } from '@rein/define/internal';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { decisionRefusal, decisionRights, holdsRole, isOperator, mayDecide } from '../src/policy/approvals/decision-rights.js';
import { loadConfig } from '../src/shared/config.js';

const tool = defineTool({
  name: 'query_order',
  description: 'Look up an order',
  kind: 'read',
  parameters: z.object({ orderNo: z.string().min(1).describe('Order number') }),
  honoursIdempotencyKey: true,
  execute: async () => null,
});

describe('tool arguments', () => {
  it('exports the argument schema to the model as JSON Schema', () => {
    expect(toolSpec(tool)).toEqual({
      type: 'function',
      function: {
        name: 'query_order',
        description: 'Look up an order',
        parameters: {
          type: 'object',
          properties: { orderNo: { type: 'string', minLength: 1, description: 'Order number' } },
          required: ['orderNo'],
          additionalProperties: false,
        },
      },
    });
  });

  it('explains invalid JSON and schema mismatches in words the model can act on', () => {
    expect(parseToolArguments(tool, '{"orderNo":')).toMatchObject({ ok: false, problem: expect.stringMatching(/not valid JSON/) });
    expect(parseToolArguments(tool, '{"orderNo": 7}')).toMatchObject({ ok: false, problem: expect.stringMatching(/orderNo: .*string/) });
    expect(parseToolArguments(tool, '{"orderNo": "2024001"}')).toEqual({ ok: true, args: { orderNo: '2024001' } });
  });
});

describe('config', () => {
  it('names the variable that has a bad value', () => {
    expect(() => loadConfig({ API_PORT: 'eighty' })).toThrow(/API_PORT/);
    expect(() => loadConfig({ REIN_API_KEYS: '[{"key":"short"}]' })).toThrow(/REIN_API_KEYS/);
  });
  it('fills the documented defaults', () => {
    expect(loadConfig({})).toMatchObject({ API_PORT: 8080, APPROVER_PORT: 8081, WORKER_METRICS_PORT: 9464, APPROVAL_TTL_MS: 900_000 });
    expect(loadConfig({ REIN_FALLBACK_MODELS: 'a, b' }).REIN_FALLBACK_MODELS).toEqual(['a', 'b']);
  });
});

describe('who may decide an approval', () => {
  const approval = (risk: 'high' | 'critical', requiredRole: TenantRole = 'user') => ({
    risk,
    requiredRole,
    requestedBy: 'alice',
    tenantId: 'acme',
  });
  const as = (userId: string, ...roles: Role[]) => ({ tenantId: 'acme', userId, roles });
  it('lets the requester or an approver decide high-risk calls that ask for the user role', () => {
    expect(mayDecide(as('alice', 'user'), approval('high'))).toBe(true);
    expect(mayDecide(as('bob', 'approver'), approval('high'))).toBe(true);
    expect(mayDecide(as('dave', 'user'), approval('high'))).toBe(false);
  });
  it('explains a refusal in grammatical English ("an approver", "a supervisor")', () => {
    expect(decisionRefusal({ id: 'a-1', ...approval('high') }, true)).toContain('needs an approver (or higher) other than the requester');
    expect(decisionRefusal({ id: 'a-2', ...approval('critical', 'supervisor') }, false)).toContain('a supervisor (or higher)');
  });
  it('requires a supervisor other than the requester for critical calls (four eyes)', () => {
    expect(mayDecide(as('alice', 'supervisor'), approval('critical', 'supervisor'))).toBe(false);
    expect(mayDecide(as('bob', 'approver'), approval('critical', 'supervisor'))).toBe(false);
    expect(mayDecide(as('carol', 'supervisor'), approval('critical', 'supervisor'))).toBe(true);
  });
  it("enforces the policy's requiredRole on everyone, the requester included", () => {
    expect(mayDecide(as('bob', 'approver'), approval('high', 'admin'))).toBe(false);
    expect(mayDecide(as('carol', 'supervisor'), approval('high', 'admin'))).toBe(false);
    expect(mayDecide(as('root', 'admin'), approval('high', 'admin'))).toBe(true);
    expect(mayDecide(as('alice', 'user'), approval('high', 'approver'))).toBe(false);
    expect(mayDecide(as('alice', 'approver'), approval('high', 'approver'))).toBe(true);
  });
  it('never lets the requester approve with edits', () => {
    expect(mayDecide(as('alice', 'user'), approval('high'), { withEdits: true })).toBe(false);
    expect(mayDecide(as('alice', 'admin'), approval('high'), { withEdits: true })).toBe(false);
    expect(mayDecide(as('bob', 'approver'), approval('high'), { withEdits: true })).toBe(true);
  });
  it('describes the same rule it enforces', () => {
    expect(decisionRights(approval('high', 'admin'))).toEqual({ role: 'admin', requester: 'as_proposed' });
    expect(decisionRights(approval('critical', 'approver'))).toEqual({ role: 'supervisor', requester: 'never' });
  });

  it('gives the fleet-wide operator role nothing inside a tenant, and no tenant role the operator role', () => {
    expect(holdsRole(['operator'], 'user')).toBe(false);
    expect(mayDecide(as('ops', 'operator'), approval('high'))).toBe(false);
    expect(isOperator(['admin'])).toBe(false);
    expect(isOperator(['admin', 'operator'])).toBe(true);
    expect(holdsRole(['admin', 'operator'], 'admin')).toBe(true);
  });
});

describe('compensation declarations', () => {
  const base = { name: 'w', description: 'a write', parameters: z.object({}), execute: () => ({ id: 1 }) };

  it('takes compensate on a write tool, and only there', () => {
    expect(defineTool({ ...base, kind: 'write', compensate: () => null }).compensate).toBeTypeOf('function');
    expect(() => defineTool({ ...base, kind: 'read', compensate: () => null })).toThrow(/only a write tool can be compensated/);
  });

  it('takes a compensating tool instead (MCP), but not both', () => {
    const compensateWith = { tool: 'undo_w', args: (_a: unknown, r: unknown) => ({ id: (r as { id: number }).id }) };
    expect(defineTool({ ...base, kind: 'write', compensateWith }).compensateWith?.tool).toBe('undo_w');
    expect(() => defineTool({ ...base, kind: 'write', compensateWith, compensate: () => null })).toThrow(/not both/);
  });
});
