import type { ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RunView } from '@rein/client';
import { afterAll, describe, expect, it } from 'vitest';
import { fleetPerFile, KEYS } from '../support/fleet.js';

// Safe deploys (issue 28) with real processes: workers of several versions of one app
// (test/support/versioned-app.mjs), an API and an approver on v1.
const APP = join(dirname(fileURLToPath(import.meta.url)), '..', 'support', 'versioned-app.mjs');
const flavour = (v: string) => ({ VERSIONED_APP: v, REIN_APP_VERSION: v });
const fleet = fleetPerFile({ workers: 0, env: { REIN_APP: APP, ...flavour('v1'), REIN_REAPER_INTERVAL_MS: '1000' } });

const stopped = (p: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (p.exitCode !== null || p.signalCode !== null) return resolve();
    p.once('exit', () => resolve());
    p.kill('SIGTERM');
  });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls GET /v1/versions until `done` holds for `version`. */
async function versionUntil(version: string, done: (v: Record<string, unknown> | undefined) => boolean) {
  for (let i = 0; i < 200; i++) {
    const { body } = await fleet().callApi('GET', '/v1/versions', KEYS.operator.key);
    const entry = (body.versions as Array<Record<string, unknown>>).find((v) => v.version === version);
    if (done(entry)) return body;
    await sleep(100);
  }
  throw new Error(`version ${version} never got there`);
}
const workersOf = (n: number) => (v: Record<string, unknown> | undefined) => v?.workers === n;

async function parkedRun(): Promise<RunView> {
  const { id } = await fleet().client().runs.create({ agent: 'deployer', input: 'Deploy "billing"' });
  return fleet().waitForRun(id, (r) => r.status === 'pending_approval');
}
const approve = (run: RunView) =>
  fleet()
    .client(KEYS.approver.key)
    .approvals.approve(run.pendingApprovals[0]?.id ?? '');
const finished = (id: string) => fleet().waitForRun(id, (r) => ['succeeded', 'failed', 'cancelled'].includes(r.status), 60_000);
const trace = (id: string) => fleet().client().runs.trace(id);

describe('a run keeps the app version it started with', () => {
  const procs: ChildProcess[] = [];
  const worker = async (v: string) => {
    const p = await fleet().startWorker(flavour(v));
    procs.push(p);
    await versionUntil(v, (e) => (e?.workers as number) >= 1);
    return p;
  };
  afterAll(async () => {
    await Promise.all(procs.map(stopped));
  });

  it('a run parked on v1 is not executed by v2 after its approval; it finishes on v1 when a v1 worker starts', async () => {
    const v1 = await worker('v1');
    const run = await parkedRun();
    expect(run.appVersion).toBe('v1');
    await stopped(v1);
    await versionUntil('v1', workersOf(0));
    await worker('v2');
    // Parked on a person, no job waits: nothing to flag although no v1 worker lives.
    expect((await fleet().client().runs.get(run.id)).waitingForVersion).toBeUndefined();

    await approve(run);
    // The resume waits on v1's queue: v2 never takes it, and the fleet says so.
    await sleep(2500);
    const waiting = await fleet().client().runs.get(run.id);
    expect(waiting.status).toBe('pending_approval');
    // Its view says what it waits for: a worker of v1, since the later of its decision and the last v1 worker.
    expect(waiting.waitingForVersion?.version).toBe('v1');
    expect(Date.parse(waiting.waitingForVersion?.since ?? '')).toBeGreaterThanOrEqual(Date.parse(waiting.updatedAt));
    const metrics = await (await fetch(`${fleet().api}/metrics`)).text();
    expect(metrics).toMatch(/rein_runs_waiting_for_version\{[^}]*version="v1"[^}]*\} 1/); // decided, its resume waits for v1
    const { body } = await fleet().callApi('GET', '/v1/versions', KEYS.operator.key);
    expect(body.versions.find((v: { version: string }) => v.version === 'v1')).toMatchObject({ workers: 0, runs: { pending_approval: 1 } });

    await worker('v1');
    const done = await finished(run.id);
    expect(done.status).toBe('succeeded');
    expect(done.finalAnswer).toContain('change to billing applied by v1');
    expect(done.waitingForVersion).toBeUndefined();
    expect(new Set((await trace(run.id)).steps.map((s) => s.appVersion))).toEqual(new Set(['v1']));
  });

  it('a queued run of a version no worker runs waits, and the waiting metric counts it', async () => {
    for (const p of procs.splice(0)) await stopped(p);
    await versionUntil('v1', workersOf(0));
    const { id } = await fleet().client().runs.create({ agent: 'deployer', input: 'Deploy "search"' });
    for (let i = 0; i < 100; i++) {
      const metrics = await (await fetch(`${fleet().api}/metrics`)).text();
      if (/rein_runs_waiting_for_version\{[^}]*version="v1"[^}]*\} 1/.test(metrics)) break;
      if (i === 99)
        throw new Error(
          `never counted as waiting:\n${metrics
            .split('\n')
            .filter((l) => l.includes('version'))
            .join('\n')}`,
        );
      await sleep(100);
    }
    const queued = await fleet().client().runs.get(id);
    expect(queued.status).toBe('queued');
    expect(queued.waitingForVersion?.version).toBe('v1');
    await worker('v1');
    await fleet().waitForRun(id, (r) => r.status === 'pending_approval');
  });

  it('upgrade moves a parked run to v2 and keeps its unchanged approval: v2 runs the write', async () => {
    const run = await parkedRun();
    for (const p of procs.splice(0)) await stopped(p);
    await versionUntil('v1', workersOf(0));
    await worker('v2');
    await approve(run);
    const up = await fleet().callApi('POST', '/v1/versions/v1/upgrade', KEYS.operator.key, { to: 'v2' });
    expect(up.status).toBe(202);
    expect(up.body).toMatchObject({ from: 'v1', to: 'v2' });
    expect(up.body.runs).toBeGreaterThanOrEqual(1);
    const done = await finished(run.id);
    expect(done.finalAnswer).toContain('change to billing applied by v2');
    expect(done.appVersion).toBe('v2');
    const versions = (await trace(run.id)).steps.map((s) => s.appVersion);
    expect([versions[0], versions.at(-1)]).toEqual(['v1', 'v2']); // the trace shows where it moved
  });

  it('upgrade withdraws an approval whose tool changed (status withdrawn, version_changed): the write never runs', async () => {
    await worker('v2');
    // New runs go to v2 now (promoted), on every API process: a second one says so too.
    expect((await fleet().callApi('POST', '/v1/versions/v2/promote', KEYS.operator.key, {})).status).toBe(200);
    const second = await fleet().startApi();
    const onSecond = await fleet().callAt(second, 'POST', '/v1/runs', KEYS.user.key, { agent: 'deployer', input: 'Deploy "ledger"' });
    expect(onSecond.body.appVersion).toBe('v2');
    const run = await parkedRun();
    expect(run.appVersion).toBe('v2');
    for (const p of procs.splice(0)) await stopped(p);
    await versionUntil('v2', workersOf(0));
    await worker('v3');
    await approve(run);
    // The promoted version cannot be upgraded away from (its new runs would move at once): promote v3, then retire v2.
    expect((await fleet().callApi('POST', '/v1/versions/v2/upgrade', KEYS.operator.key, { to: 'v3' })).body.error.code).toBe(
      'version_not_upgradable',
    );
    expect((await fleet().callApi('POST', '/v1/versions/v3/promote', KEYS.operator.key, {})).status).toBe(200);
    expect((await fleet().callApi('POST', '/v1/versions/v2/upgrade', KEYS.operator.key, {})).body).toMatchObject({ to: 'v3' });
    const done = await finished(run.id);
    expect(done.finalAnswer).not.toContain('applied by');
    const steps = (await trace(run.id)).steps;
    const call = steps.flatMap((s) => s.toolCalls).find((c) => c.name === 'apply_change');
    expect(call).toMatchObject({ outcome: 'rejected', approval: { status: 'withdrawn', reason: 'version_changed' } });
    expect(call?.observation).toContain('moved to a new version');
    expect(steps.at(-1)?.appVersion).toBe('v3');

    // Rollback: promote v1 again and new runs go there.
    await worker('v1');
    expect((await fleet().callApi('POST', '/v1/versions/v1/promote', KEYS.operator.key, {})).status).toBe(200);
    await sleep(1200); // the second API process reads the promotion within a second
    const back = await fleet().callAt(second, 'POST', '/v1/runs', KEYS.user.key, { agent: 'deployer', input: 'Deploy "x"' });
    expect(back.body.appVersion).toBe('v1');
  });

  it('a renamed tool becomes an observation after an upgrade, and the call is asked again under the new name', async () => {
    const run = await parkedRun(); // v1, promoted
    for (const p of procs.splice(0)) await stopped(p);
    await versionUntil('v1', workersOf(0));
    await worker('v4');
    await approve(run);
    expect((await fleet().callApi('POST', '/v1/versions/v4/promote', KEYS.operator.key, {})).status).toBe(200);
    expect((await fleet().callApi('POST', '/v1/versions/v1/upgrade', KEYS.operator.key, {})).status).toBe(202);
    const again = await fleet().waitForRun(run.id, (r) => r.pendingApprovals[0]?.toolName === 'apply_change_v4');
    expect(again.appVersion).toBe('v4');
    const call = (await trace(run.id)).steps.flatMap((s) => s.toolCalls).find((c) => c.name === 'apply_change');
    expect(call?.outcome).toBe('unknown_tool');
    await approve(again);
    expect((await finished(run.id)).finalAnswer).toContain('change to billing applied by v4');
  });

  it('refuses a made-up version, and promoting one no worker runs without force', async () => {
    const operator = KEYS.operator.key;
    expect((await fleet().callApi('POST', '/v1/versions/nope/promote', operator, {})).body.error.code).toBe('not_found');
    expect((await fleet().callApi('POST', '/v1/versions/%7Brein%7D/promote', operator, {})).status).toBe(400);
    expect((await fleet().callApi('POST', '/v1/versions/v3/promote', KEYS.user.key, {})).status).toBe(403);
    for (const p of procs.splice(0)) await stopped(p);
    await versionUntil('v3', workersOf(0));
    expect((await fleet().callApi('POST', '/v1/versions/v3/promote', operator, {})).body.error.code).toBe('version_not_live');
  });
});
