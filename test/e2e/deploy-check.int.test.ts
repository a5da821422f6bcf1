import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RunView } from '@rein/client';
import type { VersionImpact } from '@rein/contract';
import { afterAll, describe, expect, it } from 'vitest';
import { fleetPerFile, KEYS } from '../support/fleet.js';

// The deploy-impact check with real processes: an API on v1, workers of v1 and of two
// candidates (test/support/versioned-app.mjs: v2 changes a prompt, v3 the gated write's
// arguments), and `rein deploy check` as a process of its own.
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const APP = join(root, 'test', 'support', 'versioned-app.mjs');
const rein = join(root, 'packages', 'cli', 'dist', 'main.js');
const flavour = (v: string) => ({ VERSIONED_APP: v, REIN_APP_VERSION: v });
const fleet = fleetPerFile({ workers: 0, env: { REIN_APP: APP, ...flavour('v1') } });
const dir = mkdtempSync(join(tmpdir(), 'rein-deploy-check-'));

function cli(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [rein, ...args], {
      env: {
        ...process.env,
        REIN_API_URL: fleet().api,
        REIN_APPROVER_URL: fleet().approver,
        REIN_API_KEYS: JSON.stringify(Object.values(KEYS)),
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (status) => resolve({ status, stdout, stderr }));
  });
}

const stopped = (p: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (p.exitCode !== null || p.signalCode !== null) return resolve();
    p.once('exit', () => resolve());
    p.kill('SIGTERM');
  });

async function parkedRun(): Promise<RunView> {
  const { id } = await fleet().client().runs.create({ agent: 'deployer', input: 'Deploy "billing"' });
  return fleet().waitForRun(id, (r) => r.status === 'pending_approval');
}

describe('rein deploy check: what a candidate version would change, before it is promoted', () => {
  const procs: ChildProcess[] = [];
  afterAll(async () => {
    await Promise.all(procs.map(stopped));
  });

  it('lists the approval an upgrade would withdraw and the runs whose agent changed, changes nothing, and gates CI', async () => {
    procs.push(await fleet().startWorker(flavour('v1')));
    // A finished run to replay, and one parked on the gated write.
    const done = await parkedRun();
    await fleet()
      .client(KEYS.approver.key)
      .approvals.approve(done.pendingApprovals[0]?.id ?? '');
    await fleet().waitForRun(done.id, (r) => r.status === 'succeeded', 60_000);
    const parked = await parkedRun();
    procs.push(await fleet().startWorker(flavour('v2')), await fleet().startWorker(flavour('v3')));

    const impact = async (v: string, key = KEYS.operator.key) => fleet().callApi('GET', `/v1/versions/${v}/impact?against=v1`, key);
    // Each canary registers its manifest as it starts: wait for both (v2 is asked below).
    const registered = async (v: string) => {
      let got = await impact(v);
      for (let i = 0; got.status === 404 && i < 100; i++) {
        await new Promise((r) => setTimeout(r, 100));
        got = await impact(v);
      }
      return got;
    };
    const v3 = await registered('v3');
    expect((await registered('v2')).status).toBe(200);
    const body = v3.body as VersionImpact;
    expect(body).toMatchObject({ version: 'v3', against: 'v1', agentsServed: ['deployer'], tools: { changed: ['apply_change'] } });
    expect(body.withdrawn).toEqual({
      count: 1,
      items: [
        {
          runId: parked.id,
          approvalId: parked.pendingApprovals[0]?.id,
          tool: 'apply_change',
          status: 'pending',
          why: 'tool_changed',
          // v3 gives the write's arguments a field: the schema is what differs, not its roles or policy.
          difference: ['schema'],
        },
      ],
    });
    expect(body.runs.items).toEqual([expect.objectContaining({ runId: parked.id, agent: 'deployer', why: 'agent_changed' })]);
    // v2 keeps the write as it was: nothing withdrawn.
    expect(((await impact('v2')).body as VersionImpact).withdrawn.count).toBe(0);
    // Operators only; a version nobody registered is named as such.
    expect((await impact('v3', KEYS.admin.key)).status).toBe(403);
    expect((await impact('v9')).body).toMatchObject({ error: { code: 'version_not_registered' } });
    // Nothing changed: the approval still waits, on v1.
    expect(await fleet().client().runs.get(parked.id)).toMatchObject({
      status: 'pending_approval',
      appVersion: 'v1',
      pendingApprovals: [{ id: parked.pendingApprovals[0]?.id, status: 'pending' }],
    });

    const report = join(dir, 'v3.md');
    const failed = await cli(['deploy', 'check', '--version', 'v3', '--against', 'v1', '--max-withdrawn', '0', '--report', report]);
    expect(failed.stderr).toMatch(/FAILED: 1 approvals would be withdrawn \(the threshold is 0\)/);
    expect(failed.status).toBe(1);
    expect(readFileSync(report, 'utf8')).toMatch(
      /# Deploy check: v3 against v1[\s\S]*`apply_change`[\s\S]*## Approvals that would be withdrawn/,
    );

    const json = join(dir, 'v2.json');
    const passed = await cli(['deploy', 'check', '--version', 'v2', '--against', 'v1', '--max-withdrawn', '0', '--json', json]);
    expect(passed.stdout).toMatch(/\*\*PASSED\*\*/);
    expect(passed.status).toBe(0);
    const check = JSON.parse(readFileSync(json, 'utf8')) as { cohorts: Array<{ summary: { replayed: number } }>; failures: string[] };
    expect(check.cohorts[0]?.summary.replayed).toBe(1);
    expect(check.failures).toEqual([]);

    // A window with no runs replays nothing: a gate with nothing to judge fails.
    const empty = await cli(['deploy', 'check', '--version', 'v2', '--since', '2099-01-01T00:00:00Z']);
    expect(empty.stderr).toMatch(/nothing to judge/);
    expect(empty.status).toBe(1);
  }, 180_000);
});
