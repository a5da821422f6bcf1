import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Approval, RunRecord } from '@rein/contract';
// The built fixture: a child process runs JavaScript, not this package's TypeScript sources.
import { MCP_FIXTURE_MAIN } from '@rein/core/testing';
import type { AgentProfile, McpServerConfig } from '@rein/define/internal';
import { defineTool, type Tool, toolSpec } from '@rein/define/internal';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { McpManager } from '../src/adapters/mcp/mcp-manager.js';
import { RedisEffectLedger } from '../src/adapters/redis/effect-ledger.js';
import { Bulkhead } from '../src/adapters/resilience/bulkhead.js';
import { CircuitBreakers } from '../src/adapters/resilience/circuit-breakers.js';
import { planCalls } from '../src/policy/step/call-plan.js';
import { BreakerOpenError, McpServerStartError } from '../src/shared/errors.js';
import { runKeys } from '../src/shared/keys.js';
import { createMetrics, type Metrics } from '../src/shared/metrics.js';
import { createToolExecutor, type ToolExecutorDeps } from '../src/step/tool-executor.js';
import { type FixtureEffect, McpFixtureState, startMcpFixtureHttp, startTestRedis, type TestRedis } from '../src/testing/index.js';

const logger = pino({ level: 'silent' });

let redisServer: TestRedis;
let redis: Redis;
beforeAll(async () => {
  redisServer = await startTestRedis();
  redis = new Redis(redisServer.url, { maxRetriesPerRequest: null });
});
afterAll(async () => {
  redis.disconnect();
  await redisServer.stop();
});

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  while (open.length) await open.pop()?.close();
});

async function connect(servers: Record<string, McpServerConfig>) {
  const tools = new Map<string, Tool>();
  const metrics = createMetrics('test');
  const manager = new McpManager(servers, tools, { logger, metrics });
  open.push(manager);
  await manager.start();
  return { tools, metrics, manager };
}

const serverUp = async (metrics: Metrics, server: string) =>
  (await metrics.mcpServerUp.get()).values.find((v) => v.labels.server === server)?.value;

let seq = 0;
/** Runs one model tool call through the real executor and effect ledger (guarded when `protection` is given). */
function executor(tools: Map<string, Tool>, protection?: ToolExecutorDeps['protection']) {
  const execute = createToolExecutor({
    ledger: new RedisEffectLedger(redis),
    metrics: createMetrics('test'),
    logger,
    toolTimeoutMs: 10_000,
    ...(protection ? { protection } : {}),
  });
  const run = {
    id: `mcp-run-${process.pid}-${++seq}`,
    tenantId: 'acme',
    userId: 'alice',
    roles: ['user'],
    step: 0,
    deadlineAt: new Date(Date.now() + 3_600_000).toISOString(),
  } as RunRecord;
  const profile = { tools: [...tools.keys()] } as unknown as AgentProfile;
  /** With `approved`, a gated call asks for its approval, which is then granted, and runs. */
  return async (name: string, args: unknown, opts: { approved?: boolean } = {}) => {
    const call = { id: `call-${++seq}`, name, arguments: JSON.stringify(args) };
    // A live run (the ledger takes a step's writes only while its run is live).
    await redis.hset(runKeys(run.id).run, 'version', '0');
    const planned = (approvals: Approval[]) =>
      planCalls({ run, profile, tools, calls: [call], approvals, now: Date.now(), approvalTtlMs: 60_000 })[0]!;
    const first = await execute(planned([]));
    if (!opts.approved || !first.newApproval) return first;
    return execute(planned([{ ...first.newApproval, status: 'approved', decidedBy: 'bob' }]));
  };
}

const until = async (check: () => boolean) => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 50));
  expect(check()).toBe(true);
};

describe.each([
  ['stdio', async () => ({ config: { command: process.execPath, args: [MCP_FIXTURE_MAIN] } as McpServerConfig, state: undefined })],
  [
    'Streamable HTTP',
    async () => {
      const state = new McpFixtureState();
      const http = await startMcpFixtureHttp(state);
      open.push(http);
      return { config: { url: http.url } as McpServerConfig, state };
    },
  ],
] as const)('MCP tools over %s', (_transport, fixture) => {
  it('lists the server tools as <server>__<tool>, governed by their annotations', async () => {
    const { config } = await fixture();
    const { tools, metrics } = await connect({ fx: config });
    expect([...tools.keys()].sort()).toEqual(
      ['fx__add_tool', 'fx__append_note', 'fx__append_then_die', 'fx__delete_note', 'fx__fail', 'fx__hang', 'fx__read_note'].sort(),
    );
    const read = tools.get('fx__read_note') as Tool;
    const destroy = tools.get('fx__delete_note') as Tool;
    const append = tools.get('fx__append_note') as Tool;
    const ctx = { tenantId: 'acme', userId: 'alice', roles: ['user' as const], runId: 'r', step: 0, toolCallId: 'c', idempotencyKey: 'k' };
    expect(read.kind).toBe('read');
    expect(read.approval({ id: 'x' }, ctx)).toBeNull();
    expect(destroy.kind).toBe('write');
    expect(destroy.approval({ id: 'x' }, ctx)).toMatchObject({ risk: 'critical', requiredRole: 'supervisor' });
    expect(destroy.approval({ id: 'x' }, ctx)?.summary).toContain('delete_note on MCP server fx: {"id":"x"}');
    expect(append.approval({ id: 'x', text: 'y' }, ctx)).toMatchObject({ risk: 'high', requiredRole: 'user' });
    // idempotentHint alone is not enough: the app did not opt in.
    expect(append.honoursIdempotencyKey).toBe(false);
    expect(destroy.dependency).toBe('mcp:fx');
    // The model sees the server's own JSON Schema.
    expect(toolSpec(read).function.parameters).toMatchObject({
      type: 'object',
      properties: { id: { type: 'string', minLength: 1 } },
      required: ['id'],
    });
    expect(await serverUp(metrics, 'fx')).toBe(1);
  });

  it('opts in to re-running an idempotent tool only when the app says so', async () => {
    const { config } = await fixture();
    const { tools } = await connect({
      fx: { ...config, tools: { append_note: { idempotent: true }, delete_note: { approval: { requiredRole: 'admin' } } } },
    });
    expect(tools.get('fx__append_note')?.honoursIdempotencyKey).toBe(true);
    const ctx = { tenantId: 'acme', userId: 'alice', roles: ['user' as const], runId: 'r', step: 0, toolCallId: 'c', idempotencyKey: 'k' };
    expect(tools.get('fx__delete_note')?.approval({ id: 'x' }, ctx)).toMatchObject({ risk: 'critical', requiredRole: 'admin' });
  });

  it('with trustAnnotations false, puts a tool the server calls read-only behind an approval', async () => {
    const { config, state } = await fixture();
    const { tools } = await connect({ fx: { ...config, trustAnnotations: false, tools: { fail: { kind: 'read' } } } });
    const read = tools.get('fx__read_note') as Tool;
    expect(read.kind).toBe('write');
    const { record, newApproval } = await executor(tools)('fx__read_note', { id: 'welcome' });
    expect(record.outcome).toBe('awaiting_approval');
    expect(newApproval).toMatchObject({ risk: 'critical', requiredRole: 'supervisor' });
    if (state) expect(state.calls).toEqual([]);
    // The app's word still counts, and the setting is part of the policy an approval was granted under.
    expect(tools.get('fx__fail')?.kind).toBe('read');
    const trusted = await connect({ fx: config });
    expect(trusted.tools.get('fx__delete_note')?.policyVersion).not.toBe(tools.get('fx__delete_note')?.policyVersion);
  });

  it('turns a read result (structured content) into an observation', async () => {
    const { config } = await fixture();
    const { tools } = await connect({ fx: config });
    const { record } = await executor(tools)('fx__read_note', { id: 'welcome' });
    expect(record.outcome).toBe('ok');
    expect(JSON.parse(record.observation)).toEqual({ id: 'welcome', text: 'Hello from the fixture' });
  });

  it('rejects arguments that break the JSON Schema before calling the server', async () => {
    const { config, state } = await fixture();
    const { tools } = await connect({ fx: config });
    const { record } = await executor(tools)('fx__read_note', { id: 42 });
    expect(record.outcome).toBe('invalid_arguments');
    expect(record.observation).toContain('arguments do not match the schema of fx__read_note');
    expect(record.observation).toContain('id: must be string');
    if (state) expect(state.calls).toEqual([]);
  });

  it('records isError as a tool error observation', async () => {
    const { config } = await fixture();
    const { tools } = await connect({ fx: config });
    const { record } = await executor(tools)('fx__fail', {});
    expect(record.outcome).toBe('error');
    expect(JSON.parse(record.observation)).toMatchObject({ error: 'mcp_tool_error', message: 'the fail tool always fails' });
  });

  it('times a hanging tool out by its server timeout, and the server learns the call was cancelled', async () => {
    const { config, state } = await fixture();
    const { tools } = await connect({ fx: { ...config, timeoutMs: 300 } });
    const { record } = await executor(tools)('fx__hang', {});
    expect(record.outcome).toBe('error');
    expect(record.observation).toContain('timed out after 300 ms');
    if (state) await until(() => state.cancelled === 1);
  });

  it('sends the idempotency key in _meta, so the server de-duplicates', async () => {
    const { config, state } = await fixture();
    const { tools } = await connect({ fx: config });
    const tool = tools.get('fx__append_note') as Tool;
    const ctx = {
      tenantId: 'acme',
      userId: 'alice',
      roles: ['user' as const],
      runId: 'r',
      step: 0,
      toolCallId: 'c',
      idempotencyKey: 'r:0:c',
      logger,
    };
    const first = await tool.execute({ id: 'n', text: 'a' }, { ...ctx, signal: AbortSignal.timeout(10_000) });
    const again = await tool.execute({ id: 'n', text: 'a' }, { ...ctx, signal: AbortSignal.timeout(10_000) });
    expect(first).toBe('note n is now "a" (key r:0:c)');
    expect(again).toBe(first);
    if (state) {
      expect(state.calls).toEqual([
        { tool: 'append_note', key: 'r:0:c' },
        { tool: 'append_note', key: 'r:0:c' },
      ]);
      expect(state.effects).toHaveLength(1);
    }
  });

  it('picks up tools the server adds (tools/list_changed)', async () => {
    const { config } = await fixture();
    const { tools } = await connect({ fx: config });
    expect(tools.has('fx__extra')).toBe(false);
    const added = await (tools.get('fx__add_tool') as Tool).execute(
      {},
      {
        tenantId: 'acme',
        userId: 'alice',
        roles: ['user'],
        runId: 'r',
        step: 0,
        toolCallId: 'c',
        idempotencyKey: 'k',
        signal: AbortSignal.timeout(10_000),
        logger,
      },
    );
    expect(added).toBe('added "extra"');
    await until(() => tools.has('fx__extra'));
    const { record } = await executor(tools)('fx__extra', {});
    expect(record.observation).toBe('extra!');
  });
});

describe('an MCP server that dies during a write', () => {
  it.each([
    [
      'stdio',
      async () => {
        const file = join(mkdtempSync(join(tmpdir(), 'rein-mcp-')), 'effects.json');
        const config: McpServerConfig = { command: process.execPath, args: [MCP_FIXTURE_MAIN, '--effects-file', file] };
        return { config, effects: () => JSON.parse(readFileSync(file, 'utf8')) as FixtureEffect[] };
      },
    ],
    [
      'Streamable HTTP',
      async () => {
        const state = new McpFixtureState();
        const http = await startMcpFixtureHttp(state);
        open.push(http);
        return { config: { url: http.url } as McpServerConfig, effects: () => state.effects };
      },
    ],
  ] as const)('over %s leaves the write uncertain, not failed: the server applied it', async (_transport, fixture) => {
    const { config, effects } = await fixture();
    const { tools } = await connect({ fx: config });
    const { record } = await executor(tools)('fx__append_then_die', { id: 'n', text: 'x' }, { approved: true });
    expect(effects()).toEqual([{ tool: 'append_then_die', args: { id: 'n', text: 'x' }, key: expect.any(String) }]);
    expect(record.outcome).toBe('uncertain');
    expect(record.observation).toContain('the connection to MCP server "fx" was lost while the call ran');
    expect(record.observation).toContain('it is not safe to run it again');
    // Neither done nor failed in the ledger: a retry of the step reports it uncertain again, never re-sends it.
    const ledger = new RedisEffectLedger(redis);
    const key = effects()[0]?.key as string;
    expect((await ledger.get(key.split(':')[0] as string, key))?.state).toBe('intent');
  });

  it('gives the model a string error code, never a library number', async () => {
    const tools = new Map<string, Tool>([
      [
        'numbered',
        defineTool({
          name: 'numbered',
          description: 'Fails like a JSON-RPC library does.',
          kind: 'read',
          parameters: z.object({}),
          execute: async () => {
            throw Object.assign(new Error('Connection closed'), { code: -32000 });
          },
        }),
      ],
    ]);
    const { record } = await executor(tools)('numbered', {});
    expect(JSON.parse(record.observation)).toEqual({ error: 'tool_failed', message: 'Connection closed', retryable: false });
  });
});

describe('MCP servers that cannot start', () => {
  const broken: McpServerConfig = { command: process.execPath, args: ['-e', 'process.exit(3)'] };

  it('fail the start naming the server', async () => {
    const error = await connect({ broken }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpServerStartError);
    expect((error as Error).message).toContain('MCP server "broken" could not be started');
  });

  it('when optional, leave their tools out and say so in rein_mcp_server_up', async () => {
    const state = new McpFixtureState();
    const http = await startMcpFixtureHttp(state);
    open.push(http);
    const { tools, metrics } = await connect({ broken: { ...broken, optional: true }, fx: { url: http.url } });
    expect([...tools.keys()].some((n) => n.startsWith('broken__'))).toBe(false);
    expect(tools.has('fx__read_note')).toBe(true);
    expect(await serverUp(metrics, 'broken')).toBe(0);
    expect(await serverUp(metrics, 'fx')).toBe(1);
  });
});

describe('MCP reconnection', () => {
  it('reconnects to a server that went away and came back', async () => {
    const state = new McpFixtureState();
    const first = await startMcpFixtureHttp(state);
    const port = Number(new URL(first.url).port);
    const { tools, metrics } = await connect({ fx: { url: first.url } });
    const call = () => executor(tools)('fx__read_note', { id: 'welcome' });
    expect((await call()).record.outcome).toBe('ok');

    await first.close();
    const failed = await call();
    expect(failed.record.outcome).toBe('error');
    const again = await startMcpFixtureHttp(state, port);
    open.push(again);
    for (let i = 0; i < 200 && (await serverUp(metrics, 'fx')) !== 1; i++) await new Promise((r) => setTimeout(r, 50));
    expect((await call()).record.outcome).toBe('ok');
  });
});

describe('MCP resilience per server', () => {
  it('opens one breaker for all tools of a server that is down, and leaves other servers alone', async () => {
    const down = new McpFixtureState();
    const first = await startMcpFixtureHttp(down);
    const upState = new McpFixtureState();
    const up = await startMcpFixtureHttp(upState);
    open.push(up);
    const { tools } = await connect({ down: { url: first.url }, up: { url: up.url } });
    await first.close();

    const breakers = new CircuitBreakers(
      redis,
      {
        errorThresholdPercentage: 50,
        resetTimeoutMs: 60_000,
        volumeThreshold: 2,
        rollingCountTimeoutMs: 10_000,
        probeTimeoutMs: 5_000,
        fleetWorkers: 2,
      },
      logger,
      createMetrics('test'),
    );
    open.push({ close: async () => breakers.shutdown() });
    const bulkheads = new Map<string, Bulkhead>();
    const protection = {
      breakers,
      bulkhead: (dependency: string) => {
        const bulkhead = bulkheads.get(dependency) ?? new Bulkhead(dependency, 4, 1000);
        bulkheads.set(dependency, bulkhead);
        return bulkhead;
      },
    };
    const call = executor(tools, protection);
    // The server's failures (the link, then "not connected") count against mcp:down until it opens.
    let opened: unknown;
    for (let i = 0; i < 10 && !opened; i++) await call('down__read_note', { id: 'welcome' }).catch((e: unknown) => (opened = e));
    expect(opened).toBeInstanceOf(BreakerOpenError);
    expect((opened as Error).message).toContain('mcp:down');
    // Another tool of the same server is refused too, without reaching it; the other server still answers.
    await expect(call('down__fail', {})).rejects.toBeInstanceOf(BreakerOpenError);
    expect((await call('up__read_note', { id: 'welcome' })).record.outcome).toBe('ok');
    await redis.del('rein:breaker:{mcp:down}:open', 'rein:breaker:{mcp:down}:tripped');
  });
});
