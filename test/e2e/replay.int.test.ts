import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RunDiff, RunTrace } from '@rein/client';
import { startTestRedis, type TestRedis } from '@rein/core/testing';
import { DemoStore } from '@rein/example-order-assistant';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Fleet, KEYS, startFleet } from '../support/fleet.js';

/**
 * Two scripted models on one server: the fleet's own (REIN_MODEL) and `model-b`. They agree
 * on step 0 (look the order up) and part at step 1: the first opens a high-priority ticket
 * (a write its user approves), `model-b` a normal one and searches the policies.
 */
const LOOKUP = { name: 'query_order', arguments: { orderNo: '2024001' } };
const TICKET = { orderNo: '2024001', type: '超时发货', priority: 'high', suggestedAction: 'Compensate 10%' };
const SCRIPT = {
  turns: [{ toolCalls: [LOOKUP] }, { toolCalls: [{ name: 'create_ticket', arguments: TICKET }] }, { content: 'A ticket was opened.' }],
  byModel: {
    'model-b': [
      { toolCalls: [LOOKUP] },
      {
        toolCalls: [
          { name: 'create_ticket', arguments: { ...TICKET, priority: 'normal' } },
          { name: 'search_policy', arguments: { query: 'late shipment compensation' } },
        ],
      },
      { content: 'A normal ticket was opened.' },
    ],
  },
};
const INPUT = 'Order 2024001 has not shipped yet, please help';
const TENANT = KEYS.user.tenantId;

const dir = mkdtempSync(join(tmpdir(), 'rein-replay-'));
const scriptFile = join(dir, 'script.json');
writeFileSync(scriptFile, JSON.stringify(SCRIPT));

let redis: TestRedis;
let client: Redis;
let demo: DemoStore;
let fleet: Fleet;
beforeAll(async () => {
  redis = await startTestRedis();
  client = new Redis(redis.url);
  demo = new DemoStore(client);
  // Model calls take a while, so a worker can be killed in the middle of a replay.
  fleet = await startFleet({
    redisUrl: redis.url,
    modelLatencyMs: 150,
    modelEnv: { SCRIPTED_MODEL_SCRIPT: scriptFile },
    // The webhook receiver of the test listens on loopback; a replay may name `model-b` because it has a price.
    env: {
      REIN_WEBHOOK_ALLOW_PRIVATE: 'true',
      REIN_MODEL_PRICES: JSON.stringify({
        'rein-scripted': { promptPerMTok: 0, completionPerMTok: 0 },
        'model-b': { promptPerMTok: 0, completionPerMTok: 0 },
      }),
    },
  });
});
afterAll(async () => {
  await fleet?.stop();
  client?.disconnect();
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const user = () => fleet.client(KEYS.user.key);
const done = (r: { status: string }) => ['succeeded', 'failed', 'cancelled'].includes(r.status);

/** A counter summed over the live workers' /metrics (a killed worker's are gone with it). */
async function workerCounter(name: RegExp): Promise<number> {
  let total = 0;
  for (const port of fleet.workerMetricsPorts) {
    const text = await fetch(`http://127.0.0.1:${port}/metrics`).then(
      (r) => r.text(),
      () => '',
    );
    for (const line of text.split('\n')) if (name.test(line)) total += Number(line.split(' ').at(-1));
  }
  return total;
}
/** How many tool executions the workers have timed (every run of a tool is observed once). */
const toolExecutions = () => workerCounter(/^rein_tool_duration_seconds_count\{/);

/** An original run: looks the order up, asks for its ticket, which the user approves; it succeeds. */
async function original(): Promise<string> {
  const run = await user().runs.create({ input: INPUT });
  const parked = await fleet.waitForRun(run.id, (r) => r.pendingApprovals.length > 0 || done(r));
  const approval = parked.pendingApprovals[0];
  if (!approval) throw new Error(`run ${run.id} never asked for its ticket: ${parked.status}`);
  await user().approvals.approve(approval.id);
  const finished = await fleet.waitForRun(run.id, done);
  expect(finished.status).toBe('succeeded');
  return run.id;
}

/** Nothing waits in any approver's queue. */
async function pendingApprovals(): Promise<number> {
  const [asApprover, asUser] = await Promise.all([
    fleet.client(KEYS.approver.key).approvals.list({ status: 'pending' }),
    user().approvals.list({ status: 'pending' }),
  ]);
  return asApprover.approvals.length + asUser.approvals.length;
}

const sources = (trace: RunTrace) => trace.steps.flatMap((s) => s.toolCalls.map((c) => c.source));

describe('replaying a finished run', () => {
  let originalId: string;
  beforeAll(async () => {
    originalId = await original();
  });

  it('with the same model reproduces it exactly: identical, every result recorded, no tool executed, nothing written or queued', async () => {
    const [tickets, executions] = [(await demo.tickets(TENANT)).length, await toolExecutions()];
    expect(tickets).toBe(1);
    const started = await user().runs.replay(originalId);
    expect(started).toMatchObject({ replayOf: originalId, status: 'queued' });
    const replay = await fleet.waitForRun(started.id, done);
    expect(replay).toMatchObject({ status: 'succeeded', mode: 'replay', replayOf: originalId, finalAnswer: 'A ticket was opened.' });
    const diff = await user().runs.diff(started.id);
    expect(diff).toMatchObject({ replayOf: originalId, identical: true, divergedAtStep: null, finalAnswer: { same: true } });
    expect(diff.steps.map((s) => s.same)).toEqual([true, true, true]);
    expect(diff.toolCalls).toEqual({ added: [], removed: [], changedArguments: [] });
    expect(diff.usage.replay.totalTokens).toBeGreaterThan(0); // the model calls were real
    // …and counted apart from live traffic's.
    expect(await workerCounter(/^rein_replay_model_tokens_total\{.*tenant="e2e"/)).toBeGreaterThan(0);
    const trace = await user().runs.trace(started.id);
    expect(sources(trace)).toEqual(['recorded', 'recorded']);
    expect(await toolExecutions()).toBe(executions);
    expect((await demo.tickets(TENANT)).length).toBe(tickets);
    expect(await pendingApprovals()).toBe(0);
    // Its recorded ticket is the original's effect: there is nothing of its own to undo.
    const undo = await fleet.callApi('POST', `/v1/runs/${started.id}/compensate`, KEYS.approver.key);
    expect(undo).toMatchObject({ status: 409, body: { error: { code: 'nothing_to_compensate' } } });
    // The original is untouched.
    expect((await user().runs.trace(originalId)).steps).toHaveLength(3);
  });

  it('with the other model points at the step and call where it parted, and writes nothing', async () => {
    const tickets = (await demo.tickets(TENANT)).length;
    const executions = await toolExecutions();
    const started = await user().runs.replay(originalId, { model: 'model-b' });
    await fleet.waitForRun(started.id, done);
    const diff: RunDiff = await user().runs.diff(started.id);
    expect(diff.identical).toBe(false);
    expect(diff.divergedAtStep).toBe(1);
    // Step 2 answers in both: the same structure (no calls), another text.
    expect(diff.steps.map((s) => s.same)).toEqual([true, false, true]);
    expect(diff.toolCalls.changedArguments).toEqual([
      { step: 1, name: 'create_ticket', original: TICKET, replay: { ...TICKET, priority: 'normal' } },
    ]);
    expect(diff.toolCalls.added.map((c) => [c.step, c.name, c.source])).toEqual([
      [1, 'create_ticket', undefined],
      [1, 'search_policy', 'not_recorded'],
    ]);
    expect(diff.toolCalls.removed.map((c) => [c.step, c.name])).toEqual([[1, 'create_ticket']]);
    // The new ticket's approval was never given: it would be needed, and the replay went on as if rejected.
    expect(diff.approvals.wouldNeed).toEqual([
      { step: 1, toolName: 'create_ticket', arguments: { ...TICKET, priority: 'normal' }, risk: 'high', requiredRole: 'user' },
    ]);
    expect(diff.approvals.original).toEqual([{ step: 1, toolName: 'create_ticket', status: 'approved', risk: 'high' }]);
    expect(diff.finalAnswer).toEqual({ original: 'A ticket was opened.', replay: 'A normal ticket was opened.', same: false });
    expect(await toolExecutions()).toBe(executions);
    expect((await demo.tickets(TENANT)).length).toBe(tickets);
    expect(await pendingApprovals()).toBe(0);
  });

  it('runs a read the original never made live with liveReads, and still no write', async () => {
    const [tickets, executions] = [(await demo.tickets(TENANT)).length, await toolExecutions()];
    const started = await user().runs.replay(originalId, { model: 'model-b', liveReads: true });
    await fleet.waitForRun(started.id, done);
    const calls = (await user().runs.trace(started.id)).steps.flatMap((s) => s.toolCalls);
    expect(calls.map((c) => [c.name, c.source ?? null])).toEqual([
      ['query_order', 'recorded'],
      ['create_ticket', null],
      ['search_policy', 'live'],
    ]);
    expect(calls[2]?.outcome).toBe('ok');
    expect(await toolExecutions()).toBe(executions + 1);
    expect((await demo.tickets(TENANT)).length).toBe(tickets);
  });

  it('stops at a call the original never had approved when asked to (onNewApproval: stop)', async () => {
    const started = await user().runs.replay(originalId, { model: 'model-b', onNewApproval: 'stop' });
    const replay = await fleet.waitForRun(started.id, done);
    expect(replay).toMatchObject({ status: 'failed', reason: 'replay_stopped' });
    const diff = await user().runs.diff(started.id);
    expect(diff.steps.map((s) => s.replay?.calls.map((c) => c.name))).toEqual([
      ['query_order'],
      ['create_ticket', 'search_policy'],
      undefined,
    ]);
    expect(diff.approvals.wouldNeed.map((a) => a.toolName)).toEqual(['create_ticket']);
    expect(await pendingApprovals()).toBe(0);
  });

  it('fires no webhook: a live run after it is delivered, the replay never', async () => {
    const bodies: string[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c;
      });
      req.on('end', () => {
        bodies.push(body);
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    let hook: { id: string } | undefined;
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
      hook = await fleet
        .client(KEYS.admin.key)
        .webhooks.create({ url, events: ['run.finished', 'approval.requested', 'approval.decided'] });
      const { id: replayId } = await user().runs.replay(originalId);
      expect((await fleet.waitForRun(replayId, done)).status).toBe('succeeded');
      const live = await original();
      const until = Date.now() + 45_000;
      while (!bodies.some((b) => b.includes(live) && b.includes('run.finished')) && Date.now() < until)
        await new Promise((r) => setTimeout(r, 100));
      expect(bodies.some((b) => b.includes(live) && b.includes('run.finished'))).toBe(true);
      expect(bodies.filter((b) => b.includes(replayId))).toEqual([]);
    } finally {
      if (hook) await fleet.client(KEYS.admin.key).webhooks.delete(hook.id);
      server.close();
    }
  });

  it('is readable only as the original is: another tenant gets a 404, a run that is not a replay has no diff', async () => {
    expect((await fleet.callApi('POST', `/v1/runs/${originalId}/replay`, KEYS.other.key, {})).status).toBe(404);
    const { id } = await user().runs.replay(originalId);
    expect((await fleet.callApi('GET', `/v1/runs/${id}/diff`, KEYS.other.key)).status).toBe(404);
    expect((await fleet.callApi('GET', `/v1/runs/${id}`, KEYS.other.key)).status).toBe(404);
    const nowhere = await fleet.callApi('POST', `/v1/runs/${originalId}/replay`, KEYS.user.key, { version: 'no-such-version' });
    expect(nowhere).toMatchObject({ status: 409, body: { error: { code: 'version_not_live' } } });
    const notReplay = await fleet.callApi('GET', `/v1/runs/${originalId}/diff`);
    expect(notReplay).toMatchObject({ status: 409, body: { error: { code: 'not_a_replay' } } });
    await fleet.waitForRun(id, done);
  });

  it('loses nothing and executes nothing for real when its worker is killed in the middle', async () => {
    const tickets = (await demo.tickets(TENANT)).length;
    const { id } = await user().runs.replay(originalId);
    expect((await fleet.waitForRun(id, (r) => r.status === 'running' || done(r))).status).toBe('running');
    // Every worker dies at once (so the one holding the replay's step does), then a fresh one takes over.
    for (const w of fleet.workers) w.kill('SIGKILL');
    await fleet.startWorker();
    const replay = await fleet.waitForRun(id, done, 90_000);
    expect(replay.status).toBe('succeeded');
    expect((await user().runs.diff(id)).identical).toBe(true);
    expect(sources(await user().runs.trace(id))).toEqual(['recorded', 'recorded']);
    // The only worker alive ran the rest of the replay and executed no tool.
    expect(await toolExecutions()).toBe(0);
    expect((await demo.tickets(TENANT)).length).toBe(tickets);
    expect(await pendingApprovals()).toBe(0);
  });
});

describe('forking a finished run', () => {
  it('continues live from the step asked: real tools and real approvals from there on', async () => {
    const from = await original();
    const tickets = (await demo.tickets(TENANT)).length;
    const fork = await user().runs.fork(from, { fromStep: 1 });
    expect(fork).toMatchObject({ forkOf: from, status: 'queued' });
    // Its history holds step 0 (the lookup): the model's next move is the ticket, asked for real.
    const parked = await fleet.waitForRun(fork.id, (r) => r.pendingApprovals.length > 0 || done(r));
    expect(parked.forkOf).toBe(from);
    expect(parked.pendingApprovals.map((a) => a.toolName)).toEqual(['create_ticket']);
    await user().approvals.approve(parked.pendingApprovals[0]?.id ?? '');
    expect((await fleet.waitForRun(fork.id, done)).status).toBe('succeeded');
    const trace = await user().runs.trace(fork.id);
    expect(trace.steps.map((s) => s.toolCalls.map((c) => c.name))).toEqual([['create_ticket'], []]);
    expect(sources(trace)).toEqual([undefined]);
    expect((await demo.tickets(TENANT)).length).toBe(tickets + 1);
    const bad = await fleet.callApi('POST', `/v1/runs/${from}/fork`, KEYS.user.key, { fromStep: 9 });
    expect(bad).toMatchObject({ status: 409, body: { error: { code: 'fork_step_unavailable' } } });
  });
});

describe('replaying a cohort, as a gate', () => {
  const cli = fileURLToPath(new URL('../../packages/cli/dist/main.js', import.meta.url));
  /** `rein replay ...` as a CI job runs it, with an approver's key. */
  const rein = (args: string[]) =>
    new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [cli, 'replay', ...args], {
        env: { ...process.env, REIN_API_URL: fleet.api, REIN_APPROVER_URL: fleet.approver, REIN_API_KEY: KEYS.approver.key },
      });
      let [stdout, stderr] = ['', ''];
      child.stdout.on('data', (d: Buffer) => (stdout += d));
      child.stderr.on('data', (d: Buffer) => (stderr += d));
      child.on('exit', (status) => resolve({ status, stdout, stderr }));
    });
  let since: string;
  let originals: string[];
  beforeAll(async () => {
    since = new Date(Date.now() - 1).toISOString();
    originals = await Promise.all(Array.from({ length: 20 }, () => original()));
  });

  it('rein replay <runId> prints the diff side by side', async () => {
    const out = await rein([originals[0] ?? '', '--model', 'model-b']);
    expect(out.status).toBe(0);
    expect(out.stdout).toContain(`replay of ${originals[0]}: diverged at step 1 (succeeded)`);
    expect(out.stdout).toMatch(/^≠ 1 {2}create_ticket\(.*│ create_ticket\(/m);
    expect(out.stdout).toMatch(/^ {3,}│ \[not_recorded\] search_policy\(/m);
    expect(out.stdout).toContain('changed arguments @1 create_ticket: {"orderNo":"2024001","type":"超时发货","priority":"high"');
    expect(out.stdout).toContain('would need approval @1: create_ticket (risk high, role user)');
  });

  it('reports the right counts, writes the report, and its exit code follows the threshold', async () => {
    const tickets = (await demo.tickets(TENANT)).length;
    const report = join(dir, 'same.md');
    const same = await rein(['--agent', 'order-assistant', '--since', since, '--limit', '50', '--max-diverged', '10%', '--report', report]);
    expect(same.stderr).toBe('');
    expect(same.status).toBe(0);
    const text = readFileSync(report, 'utf8');
    expect(text).toContain('**PASSED**: 0 of 20 diverged');
    expect(text).toMatch(/\| 20 of 20 \| 20 \| 0 \| 0 \| 0 \| 0 \|/);

    const other = join(dir, 'model-b.md');
    const b = await rein([
      '--agent',
      'order-assistant',
      '--since',
      since,
      '--limit',
      '50',
      '--model',
      'model-b',
      '--max-diverged',
      '10%',
      '--report',
      other,
    ]);
    expect(b.status).toBe(1);
    expect(b.stderr).toContain('over the threshold (10%): 20 of 20 replays diverged; 20 new approvals; 0 would now fail');
    const changed = readFileSync(other, 'utf8');
    expect(changed).toContain('**FAILED**: 20 of 20 diverged');
    expect(changed).toContain('step 1: create_ticket → create_ticket, search_policy');
    // Forty replays later: nothing written, nothing in anyone's queue.
    expect((await demo.tickets(TENANT)).length).toBe(tickets);
    expect(await pendingApprovals()).toBe(0);
  });

  it('samples evenly up to its limit, stops at its token budget, and is an approver’s, in its tenant only', async () => {
    const approver = fleet.client(KEYS.approver.key);
    const finished = async (body: { maxTokens: number; concurrency: number }) => {
      let view = await approver.replays.create({ agent: 'order-assistant', since, limit: 5, ...body });
      expect(view.summary.total).toBe(5);
      while (view.status !== 'finished') {
        await new Promise((r) => setTimeout(r, 200));
        view = await approver.replays.get(view.id);
      }
      return view;
    };
    // A budget of one run's token limit holds the first replay's whole limit, at any concurrency: the
    // others wait for what it gives back, and what it spent leaves no room for another whole limit.
    const { limits } = await user().runs.get(originals[0] ?? '');
    const one = await finished({ maxTokens: limits.maxTokens, concurrency: 5 });
    expect(one.summary).toMatchObject({ total: 5, replayed: 1, identical: 1, skipped: 4 });
    // A budget no replay's limit fits starts none: nothing is spent, and the gate has nothing to judge.
    const none = await finished({ maxTokens: 1, concurrency: 5 });
    expect(none.summary).toMatchObject({ total: 5, replayed: 0, skipped: 5, tokens: { replay: 0 } });
    expect((await fleet.callApi('GET', `/v1/replays/${one.id}`, KEYS.other.key)).status).toBe(404);
    const asUser = await fleet.callApi('POST', '/v1/replays', KEYS.user.key, { agent: 'order-assistant', since, limit: 5 });
    expect(asUser.status).toBe(403);
  });
});
