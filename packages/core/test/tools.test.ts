import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { mayDecide } from '../src/approvals/approval-service.js';
import { loadConfig } from '../src/config.js';
import type { Approval } from '../src/schemas/approval.js';
import { defineTool, parseToolArguments, toolSpec } from '../src/tools/tool.js';

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
  const approval = (risk: 'high' | 'critical') => ({ risk, requestedBy: 'alice', tenantId: 'acme' }) as Approval;
  it('lets the requester or an approver decide high-risk calls', () => {
    expect(mayDecide({ tenantId: 'acme', userId: 'alice', roles: ['user'] }, approval('high'))).toBe(true);
    expect(mayDecide({ tenantId: 'acme', userId: 'bob', roles: ['approver'] }, approval('high'))).toBe(true);
    expect(mayDecide({ tenantId: 'acme', userId: 'dave', roles: ['user'] }, approval('high'))).toBe(false);
  });
  it('requires a supervisor other than the requester for critical calls (four eyes)', () => {
    expect(mayDecide({ tenantId: 'acme', userId: 'alice', roles: ['supervisor'] }, approval('critical'))).toBe(false);
    expect(mayDecide({ tenantId: 'acme', userId: 'bob', roles: ['approver'] }, approval('critical'))).toBe(false);
    expect(mayDecide({ tenantId: 'acme', userId: 'carol', roles: ['supervisor'] }, approval('critical'))).toBe(true);
  });
});
