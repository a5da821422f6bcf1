import type { Effect, ModelToolCall, RunRecord, StepRecord } from '@rein/contract';
import { type AgentProfile, defineTool, type Tool, ToolOutcomeUnknownError } from '@rein/define/internal';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ApprovalFeed } from '../../src/adapters/redis/approval-feed.js';
import type { RunStore } from '../../src/adapters/redis/run-store.js';
import { runEvent } from '../../src/policy/run/run-event.js';
import { type PlannedCall, planCalls } from '../../src/policy/step/call-plan.js';
import type { EarlierCall } from '../../src/policy/step/loop-guard.js';
import { createMetrics } from '../../src/shared/metrics.js';
import type { SpawnChild } from '../../src/step/child-runs.js';
import { type RunCallsDeps, replayCalls, runCalls } from '../../src/step/run-calls.js';
import { createToolExecutor } from '../../src/step/tool-executor.js';
import { createMemoryStores } from '../../src/testing/memory-ports.js';
import { clock, NOW, record, run, silentLogger, slice } from './support.js';

/**
 * Run the calls (step/run-calls.ts over the tool executor): each planned call becomes its
 * record — what the tool said, an error observation when it threw, `uncertain` when nobody
 * can say whether a write happened — and no call runs twice (the effect ledger, earlier reads).
 */

const ran: string[] = [];
const tool = (name: string, kind: 'read' | 'write', execute: (args: { n: number }) => unknown, honours = false): Tool =>
  defineTool({
    name,
    description: name,
    kind,
    parameters: z.object({ n: z.number() }),
    honoursIdempotencyKey: honours,
    async execute(args) {
      ran.push(`${name}(${args.n})`);
      return execute(args);
    },
  });
const tools = new Map<string, Tool>(
  [
    tool('lookup', 'read', ({ n }) => ({ order: n })),
    tool('crash', 'read', () => {
      throw new Error('socket hang up');
    }),
    tool('pay', 'write', ({ n }) => ({ paid: n })),
    tool('pay_unknown', 'write', () => {
      throw new ToolOutcomeUnknownError('the bank did not answer');
    }),
  ].map((t) => [t.name, t]),
);
const profile = { name: 'order-assistant', tools: [...tools.keys()] } as unknown as AgentProfile;

const call = (id: string, name: string, n: number): ModelToolCall => ({ id, name, arguments: JSON.stringify({ n }) });
const plan = (r: RunRecord, calls: ModelToolCall[]): PlannedCall[] =>
  planCalls({ run: r, profile, tools, calls, approvals: [], now: NOW, approvalTtlMs: 60_000 });

/**
 * The slice runCalls takes, over the real tool executor and the ports' in-memory effect ledger
 * (its run created in the fake); `effects`: the run's ledger entries; `earlier`: committed steps by index.
 */
async function deps(opts: { earlier?: StepRecord[]; spawnChild?: SpawnChild; concurrency?: number } = {}) {
  ran.length = 0;
  const { runs, ledger } = createMemoryStores(clock.now);
  // Created at version 0, as the store creates every run.
  await runs.create(run({ version: 0 }), null, runEvent('run.queued', run().id, 0));
  const effects = () => runs.effects.get(run().id) ?? new Map<string, Effect>();
  const published: unknown[] = [];
  const executeTool = createToolExecutor({
    ledger,
    metrics: createMetrics('test'),
    logger: silentLogger,
    toolTimeoutMs: 2_000,
    now: clock.now,
  });
  const d: RunCallsDeps = {
    store: slice<RunStore>('store', { stepRecord: async (_runId, step) => opts.earlier?.find((s) => s.index === step) ?? null }),
    tools,
    executeTool,
    feed: slice<ApprovalFeed>('feed', {
      async publish(_tenantId, event) {
        published.push(event);
      },
    }),
    toolConcurrency: opts.concurrency ?? 4,
    approvalTtlMs: 60_000,
    ...(opts.spawnChild ? { spawnChild: opts.spawnChild } : {}),
    clock,
  };
  return { d, runs, effects, published };
}

const none = new Map<number, EarlierCall>();

describe('run the calls', () => {
  it("records what each tool returned, in the calls' order", async () => {
    const { d } = await deps();
    const results = await runCalls(d, run(), plan(run(), [call('c1', 'lookup', 7), call('c2', 'pay', 3)]), none, undefined, run());
    expect(results.map((r) => [r.record.id, r.record.outcome, r.record.observation])).toEqual([
      ['c1', 'ok', '{"order":7}'],
      ['c2', 'ok', '{"paid":3}'],
    ]);
  });

  it('turns a tool that throws into an error observation the model reads, not a failed step', async () => {
    const { d } = await deps();
    const [crashed] = await runCalls(d, run(), plan(run(), [call('c1', 'crash', 1)]), none, undefined, run());
    expect(crashed?.record).toMatchObject({ outcome: 'error' });
    expect(JSON.parse(crashed?.record.observation ?? '')).toEqual({ error: 'tool_failed', message: 'socket hang up', retryable: false });
  });

  it("records a write whose outcome nobody knows as uncertain, keeps its intent, and tells the tenant's feed at once", async () => {
    const { d, effects, published } = await deps();
    const [unknown] = await runCalls(d, run(), plan(run(), [call('c1', 'pay_unknown', 1)]), none, undefined, run());
    expect(unknown?.record.outcome).toBe('uncertain');
    expect(unknown?.record.observation).toMatch(/^The outcome of pay_unknown is unknown: the bank did not answer/);
    expect([...effects().values()].map((e) => e.state)).toEqual(['intent']);
    expect(published).toEqual([{ type: 'effect.uncertain', runId: 'r1', step: 2, toolCallId: 'c1', tool: 'pay_unknown', at: clock.iso() }]);
  });

  it('never runs a write twice: a result in the ledger is reused, an intent without one (a crash mid-call) is uncertain', async () => {
    const { d, effects } = await deps();
    const pay = plan(run(), [call('c1', 'pay', 3)]);
    await runCalls(d, run(), pay, none, undefined, run());
    const [again] = await runCalls(d, run(), pay, none, undefined, run());
    expect(again?.record).toMatchObject({ outcome: 'ok', observation: '{"paid":3}' });
    expect(ran).toEqual(['pay(3)']);
    const key = [...effects().keys()][0] as string;
    effects().set(key, { state: 'intent', tool: 'pay', at: clock.iso() });
    const [crashed] = await runCalls(d, run(), pay, none, undefined, run());
    expect(crashed?.record.outcome).toBe('uncertain');
    expect(ran).toEqual(['pay(3)']);
  });

  it('starts no write once the run has finished', async () => {
    const { d, runs } = await deps();
    const running = await runs.require(run().id);
    // The run's terminal commit: the ledger refuses a step's intents from then on.
    await runs.compareAndSet({ from: running, to: { ...running, status: 'failed' } });
    const [late] = await runCalls(d, run(), plan(run(), [call('c1', 'pay', 3)]), none, undefined, run());
    expect(late?.record).toMatchObject({ outcome: 'rejected', observation: 'Not executed: the run finished before pay started.' });
    expect(ran).toEqual([]);
  });

  it('answers a read asked again with the same arguments from its earlier result, without running it', async () => {
    const earlier = [
      { index: 0, toolCalls: [record({ id: 'e1', name: 'lookup', arguments: { n: 7 }, observation: '{"order":7}' })] },
    ] as StepRecord[];
    const { d } = await deps({ earlier });
    const [answered] = await runCalls(d, run(), plan(run(), [call('c1', 'lookup', 7)]), new Map([[0, [0, 'e1']]]), undefined, run());
    expect(answered?.record).toMatchObject({ id: 'c1', outcome: 'ok', observation: '{"order":7}', durationMs: 0, fromSnapshot: true });
    expect(ran).toEqual([]);
  });

  it('records refused and waiting calls as planned, handing back the approval a call asks for', async () => {
    const gated = defineTool({
      name: 'refund',
      description: 'refund',
      kind: 'write',
      parameters: z.object({}),
      approval: () => ({ risk: 'high', summary: 'refund' }),
      execute: () => ({}),
    });
    const withGated = new Map([...tools, [gated.name, gated]]);
    const planned = planCalls({
      run: run(),
      profile: { ...profile, tools: [...profile.tools, 'refund'] },
      tools: withGated,
      calls: [
        { id: 'c1', name: 'refund', arguments: '{}' },
        { id: 'c2', name: 'nope', arguments: '{}' },
      ],
      approvals: [],
      now: NOW,
      approvalTtlMs: 60_000,
    });
    const { d } = await deps();
    const results = await runCalls({ ...d, tools: withGated }, run(), planned, none, undefined, run());
    expect(results.map((r) => [r.record.outcome, r.newApproval?.id])).toEqual([
      ['awaiting_approval', 'r1.2.0'],
      ['unknown_tool', undefined],
    ]);
    expect(ran).toEqual([]);
  });

  it('refuses a sub-agent call in a process that cannot start runs, and hands the paid-for parent to one that can', async () => {
    const desk = { ...profile, agents: ['refunds'] } as unknown as AgentProfile;
    const planned = planCalls({
      run: run(),
      profile: desk,
      tools,
      calls: [{ id: 'c1', name: 'call_refunds', arguments: '{"input":"refund order 7"}' }],
      approvals: [],
      now: NOW,
      approvalTtlMs: 60_000,
    });
    expect(planned[0]?.kind).toBe('spawn');
    const [refused] = await runCalls((await deps()).d, run(), planned, none, undefined, run());
    expect(refused?.record).toMatchObject({ outcome: 'forbidden', observation: 'Not started: this process cannot start sub-agent runs.' });
    const parents: RunRecord[] = [];
    const spawnChild: SpawnChild = async (parent, p) => {
      parents.push(parent);
      return {
        record: { id: p.call.id, name: p.call.name, arguments: p.args, outcome: 'awaiting_child', observation: 'waiting', durationMs: 0 },
      };
    };
    const paid = run({ costUsd: 0.5 });
    const [spawned] = await runCalls((await deps({ spawnChild })).d, run(), planned, none, undefined, paid);
    expect(spawned?.record.outcome).toBe('awaiting_child');
    expect(parents).toEqual([paid]);
  });

  it('runs at most toolConcurrency calls at a time', async () => {
    let inFlight = 0;
    let most = 0;
    const slow = defineTool({
      name: 'slow',
      description: 'slow',
      kind: 'read',
      parameters: z.object({ n: z.number() }),
      async execute() {
        most = Math.max(most, ++inFlight);
        await new Promise((resolve) => setImmediate(resolve));
        inFlight--;
        return {};
      },
    });
    const withSlow = new Map([[slow.name, slow]]);
    const planned = planCalls({
      run: run(),
      profile: { ...profile, tools: ['slow'] },
      tools: withSlow,
      calls: [1, 2, 3, 4, 5].map((n) => call(`c${n}`, 'slow', n)),
      approvals: [],
      now: NOW,
      approvalTtlMs: 60_000,
    });
    const { d } = await deps({ concurrency: 2 });
    await runCalls({ ...d, tools: withSlow }, run(), planned, none, undefined, run());
    expect(most).toBe(2);
  });
});

describe("run a replay's calls", () => {
  it('gives each call what its original recorded, and runs only a read asked to run live, marked live', async () => {
    const { d } = await deps();
    const planned = plan(run(), [call('c1', 'pay', 3), call('c2', 'lookup', 7)]);
    const recorded = record({ id: 'c1', name: 'pay', arguments: { n: 3 }, observation: 'paid in the original', source: 'recorded' });
    const results = await replayCalls(d, planned, [{ kind: 'record', record: recorded }, { kind: 'live' }], undefined);
    expect(results.map((r) => [r.record.id, r.record.observation, r.record.source])).toEqual([
      ['c1', 'paid in the original', 'recorded'],
      ['c2', '{"order":7}', 'live'],
    ]);
    expect(ran).toEqual(['lookup(7)']);
  });
});
